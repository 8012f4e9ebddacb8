package main

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"ftpatch/runtime/abi"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ftpatch/arch"
	"ftpatch/argspec"
	"ftpatch/control"
	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/infile"
	"ftpatch/launch"
	"ftpatch/ldso"
	"ftpatch/libtool"
	"ftpatch/outfile"
	"ftpatch/patch"
	"ftpatch/prologue"
	"ftpatch/protos"
	ftrt "ftpatch/runtime"
	"ftpatch/trace"
)

// A childExit ends ftpatch as the program it ran ended (main passes it
// to launch.Exit): its exit status, or its signal.
type childExit struct{ st launch.Status }

func (e *childExit) Error() string { return "the program: " + e.st.String() }

// exitAs is nil for a program that exited with status 0, else a
// childExit.
func exitAs(st launch.Status) error {
	if st.Success() {
		return nil
	}
	return &childExit{st}
}

// recordFlags are the flags of record and live: what to trace, as the
// runtime's FTRACE* variables say it.
type recordFlags struct {
	funcs, notrace, filter []string
	depth                  int
	threshold              time.Duration
	tracer                 string
	buffer                 string
	ctl                    bool
	noLibcall, nestLibcall bool
	noSched                bool
	args, retval           []string
	autoArgs               bool
	prologue               []string
}

func (r *recordFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.SetInterspersed(false) // what follows PROG is PROG's
	f.StringArrayVarP(&r.funcs, "funcs", "F", nil, "record only `GLOB` and what it calls (FTRACE_GRAPH_FUNCS; repeat, or separate globs with commas; implies function_graph)")
	f.StringArrayVarP(&r.notrace, "notrace", "N", nil, "record nothing inside `GLOB` (FTRACE_GRAPH_NOTRACE; repeat, or commas; implies function_graph)")
	f.IntVarP(&r.depth, "depth", "D", 0, "graph at most `N` nested calls (FTRACE_DEPTH; counted from the -F function)")
	f.DurationVarP(&r.threshold, "threshold", "t", 0, "keep no call shorter than `DURATION` (2us, 1.5ms) that called nothing traced (FTRACE_THRESH; function_graph)")
	f.StringVar(&r.tracer, "tracer", "", "`TRACER`: function_graph (default: calls and returns, with durations), function (each call) or nop (the mechanism alone, no trace)")
	f.StringArrayVar(&r.filter, "filter", nil, "trace only the functions `GLOBS` choose (FTRACE_FILTER: globs separated by commas, !glob excludes; repeat to add)")
	f.StringVar(&r.buffer, "buffer", "", "how records are kept (FTRACE_BUFFER): `MODE` stream (each thread writes its own, the default), writer (a thread of the runtime's writes them) or ring:SIZE (the flight recorder: each thread's last SIZE, like 64m, kept in memory and written at the end or a crash)")
	f.BoolVar(&r.ctl, "ctl", false, "the program listens for ftpatch ctl while it runs (FTRACE_CTL=1)")
	f.BoolVarP(&r.nestLibcall, "nest-libcall", "l", false, "trace the calls shared libraries make into one another too (malloc inside fopen, a plugin's calls), in every loaded module, those dlopen loads included (FTRACE_LIBCALL=nest)")
	f.BoolVar(&r.noLibcall, "no-libcall", false, "trace the program's own functions alone, not its calls into shared libraries (printf, malloc, read...), which are traced by default where it makes them (FTRACE_LIBCALL=1); --filter chooses among both by name")
	f.BoolVar(&r.noSched, "no-sched", false, "leave out the scheduler events: when each traced thread left its CPU (slept or was pre-empted) and ran again, recorded by default from the kernel's context-switch records (FTRACE_SCHED=1; where the kernel refuses them, tracing goes on without and info says why)")
	f.StringArrayVarP(&r.args, "args", "A", nil, "record arguments (FTRACE_ARGS): `FUNC@ITEMS`, FUNC a glob, ITEMS separated by commas: argN[/FMT] (the Nth integer or pointer argument, from 1: the registers, 6 on x86-64, 8 on arm64, then the stack's words), fpargN[/FMT] (the Nth floating-point register, up to 8; f64 unless said), stack+OFF[/FMT] (the stack argument at byte OFF, a multiple of 8: where a long double, a struct or a float past the registers is), *argN/{...} or *stack+OFF/{...} (the struct the pointer there points to), argN+fpargM/{...} (x86-64: a struct in both kinds of registers, each eightbyte from the next of its class), or ? (shown as ?); FMT d (= i64, the default) i8 i16 i32 i64 (signed), u8...u64 (unsigned), x8...x64 (hex; x = x64), p (pointer), s (C string), c (char), b (bool), e:ENUM (by name, from the DWARF, or a set of the prototype table of --auto-args: open_flags, mmap_prot, signal...), f32 f64 (f = f64), f80 (x86-64's long double), f128 (arm64's long double, __float128), {MEMBERS} (a struct, its members' formats in order: {i32,i32}, nested {i64,{c,c}}; ... last for members not recorded); repeat, or separate entries with ';'")
	f.StringArrayVarP(&r.retval, "retval", "R", nil, "record return values (FTRACE_RETVAL; function_graph): `FUNC[/FMT]`, FMT one of -A's (d unless said): f32 f64 f128 (f = f64) read the floating-point return register, f80 x86-64's st0, {MEMBERS} a struct in the return registers (16 bytes at most), *{MEMBERS} (x86-64) one returned in memory; repeat, or separate with ';'")
	f.StringArrayVarP(&r.prologue, "patch", "P", nil, "make sites from the prologues of the functions `GLOB` chooses (uftrace's -P; '.' or '*' for all) in the program and the shared objects loaded with it from outside the system's library directories, built without tracing flags: each function's first instructions move into a trampoline, a jump in their place (ftpatch sites --dynamic PROG lists what each function gets); the runtime is preloaded; repeat, or separate globs with commas")
	f.BoolVar(&r.autoArgs, "auto-args", false, "record the arguments and return values of the functions --filter or -F chooses, typed from the DWARF (-g) of the program and of each shared object it loads (with it, or later with dlopen; for a libtool wrapper script, of the program it runs), placed by the calling convention of the program's architecture: in registers, on the stack (long doubles, structs in memory, what follows the registers), structs by their members; a value it cannot place or show (__int128) shows as ?; and the program's library calls of common C library functions from ftpatch's prototype table, their flags and enums by name (open(\"f\", O_RDONLY|O_CLOEXEC) = 3), after -A and -R's entries")
}

// ringSize is --buffer's flight recorder: ring:SIZE, as the runtime
// reads it (ring.c).
var ringSize = regexp.MustCompile(`^ring:[1-9][0-9]*[kKmMgG]?$`)

// settings are the runtime's settings the flags ask for, for a program
// pre-patched by ftpatch enable (prepatched) or not.
func (r *recordFlags) settings(out string, prepatched bool) (launch.Settings, error) {
	s := launch.Settings{Tracer: r.tracer, Out: out, Filter: r.filter, Depth: r.depth, Threshold: r.threshold,
		GraphFuncs: r.funcs, GraphNotrace: r.notrace, Buffer: r.buffer, Ctl: r.ctl, Session: launch.SessionID(), Libcall: !r.noLibcall, NestLibcall: r.nestLibcall,
		Sched: !r.noSched}
	if r.noLibcall && r.nestLibcall {
		return s, usage(errors.New("--nest-libcall and --no-libcall: choose one"))
	}
	if b := r.buffer; b != "" && b != "stream" && b != "writer" && !ringSize.MatchString(b) {
		return s, usage(fmt.Errorf("--buffer %q: want stream, writer or ring:SIZE (SIZE in bytes, or with k, m or g: ring:64m)", b))
	}
	graphOnly := ""
	switch {
	case len(r.funcs) > 0:
		graphOnly = "-F"
	case len(r.notrace) > 0:
		graphOnly = "-N"
	case r.threshold > 0:
		graphOnly = "-t"
	}
	switch r.tracer {
	case "":
		// A pre-patched program traces with the tracer and functions
		// its record holds, unless asked otherwise (FTRACE_FILTER alone
		// chooses among the sites with the recorded tracer).
		if !prepatched || graphOnly != "" {
			s.Tracer = "function_graph"
		}
	case "function_graph":
	case "function", "nop":
		if graphOnly != "" {
			return s, usage(fmt.Errorf("%s needs --tracer function_graph, not %s", graphOnly, r.tracer))
		}
	default:
		return s, usage(fmt.Errorf("unknown tracer %q: want function_graph, function or nop", r.tracer))
	}
	if r.depth < 0 {
		return s, usage(fmt.Errorf("--depth %d: want a positive number", r.depth))
	}
	s.Args, s.Retval = strings.Join(r.args, ";"), strings.Join(r.retval, ";")
	if (s.Args != "" || s.Retval != "") && s.Tracer == "nop" {
		return s, usage(errors.New("--args and --retval need the function or function_graph tracer"))
	}
	return s, nil
}

// checkArgs checks every -A and -R spec against the grammar, for the
// target's architecture, before anything runs; the enums they name
// (e:NAME) are looked up in the program's DWARF, into enums, else among
// package protos's sets of names (open_flags, mmap_prot...).
func (r *recordFlags) checkArgs(t *target, enums *argspec.Enums) error {
	var named []string
	for _, a := range r.args {
		entries, err := argspec.ParseArgs(a, t.arch)
		if err != nil {
			return usage(fmt.Errorf("--args: %w", err))
		}
		named = append(named, enumNames(entries)...)
	}
	for _, a := range r.retval {
		entries, err := argspec.ParseRetval(a, t.arch)
		if err != nil {
			return usage(fmt.Errorf("--retval: %w", err))
		}
		named = append(named, enumNames(entries)...)
	}
	if len(named) == 0 {
		return nil
	}
	if !t.elf {
		return usage(fmt.Errorf("--args, --retval: e:%s: %s is not an ELF program whose DWARF names the enum", named[0], t.name))
	}
	missing, err := enums.AddNamed(t.code, named)
	if err != nil && !errors.Is(err, argspec.ErrNoDWARF) {
		return fmt.Errorf("--args, --retval: enums: %w", err)
	}
	if err != nil {
		missing = named
	}
	missing = slices.DeleteFunc(missing, func(name string) bool {
		set, ok := protos.Set(t.arch, name)
		return ok && enums.Add(set)
	})
	if len(missing) > 0 {
		return usage(fmt.Errorf("--args, --retval: e:%s: %s's DWARF has no enum of that name", missing[0], t.code))
	}
	return nil
}

// enumNames are the enums entries name.
func enumNames(entries []argspec.Entry) []string {
	var out []string
	for _, e := range entries {
		for _, it := range e.Items {
			if it.Fmt == argspec.Enum {
				out = append(out, it.Enum)
			}
		}
	}
	return out
}

// servePlans serves -P to the program: the prologue plans of the
// functions its globs choose, in each module the runtime describes
// (prologue.Server); the program's own plans are made first, so that
// its errors come before it runs. A program linked without the runtime
// gets it preloaded. The caller closes the server.
func (r *recordFlags) servePlans(s *launch.Settings, t *target, stderr io.Writer) (*prologue.Server, error) {
	if t.code == "" {
		return nil, usage(fmt.Errorf("-P: %s is not an ELF program (a script?)", t.name))
	}
	list := &funclist.List{}
	for _, arg := range r.prologue {
		for _, g := range strings.Split(arg, ",") {
			if g == "." { // uftrace's regular expression for every function
				g = "*"
			}
			if err := list.Add(g, fmt.Sprintf("-P %q", arg)); err != nil {
				return nil, usage(err)
			}
		}
	}
	srv, err := prologue.ServePlans(list, stderr)
	if err != nil {
		return nil, err
	}
	if err := srv.Prepare(t.code); err != nil {
		srv.Close()
		return nil, fmt.Errorf("-P: %w", err)
	}
	s.PrologueSocket = srv.Path()
	if t.untraced && !t.setid {
		t.preload, t.untraced = true, false
	}
	return srv, nil
}

// serveAutoArgs serves --auto-args to the program: the functions the filters
// choose, in each module the program loads (argspec.Server); the
// program's own DWARF is read first, so that its errors come before it
// runs. The caller closes the server.
func (r *recordFlags) serveAutoArgs(s *launch.Settings, t *target, enums *argspec.Enums, stderr io.Writer) (*argspec.Server, error) {
	globs := append(append([]string{}, r.filter...), r.funcs...)
	if len(globs) == 0 {
		return nil, usage(errors.New("--auto-args needs --filter or -F to say which functions"))
	}
	if t.code == "" {
		what := "not an ELF program with DWARF (a script?)"
		if t.wrapper != nil {
			what = fmt.Sprintf("a libtool wrapper script for %s, which is not built yet", t.wrapper.Program)
		}
		return nil, usage(fmt.Errorf("--auto-args: %s is %s", t.name, what))
	}
	srv, err := argspec.Serve(globs, enums, stderr)
	if err != nil {
		return nil, err
	}
	if err := srv.Prepare(t.code); err != nil {
		srv.Close()
		return nil, fmt.Errorf("--auto-args: %w", err)
	}
	s.ArgsSocket = srv.Path()
	if s.Libcall {
		// The C library's functions, from the prototype table, after
		// -A and -R's entries (the runtime takes the first that
		// chooses a function); their sets of names where no enum of
		// the program's has the name already.
		s.LibArgs, s.LibRetval = protos.Args(), protos.Retval()
		for _, set := range protos.Sets(t.arch) {
			enums.Add(set)
		}
		// The other library functions the program calls, from the
		// DWARF of the libraries it loads where installed (the
		// table's own come first).
		a, r := libraryArgs(t.code, enums)
		s.LibArgs, s.LibRetval = joinEntries(s.LibArgs, a), joinEntries(s.LibRetval, r)
	}
	return srv, nil
}

// libraryArgs are FTRACE_ARGS's and FTRACE_RETVAL's entries for the
// library functions the program at prog calls that package protos's
// table has not, typed from the DWARF of the libraries it loads at start
// (their own, or their debug files by build-id), the first library
// defining a function giving it; "" for none. Libraries without DWARF
// give nothing.
func libraryArgs(prog string, enums *argspec.Enums) (args, retval string) {
	f, err := elfx.Open(prog)
	if err != nil {
		return "", ""
	}
	names, err := f.LibCallNames()
	if err != nil {
		return "", ""
	}
	names = slices.DeleteFunc(names, func(n string) bool { _, ok := protos.Lookup(n); return ok })
	objs, err := ldso.All(prog, programEnv(prog))
	if len(names) == 0 || err != nil {
		return "", ""
	}
	var funcs []argspec.Func
	for _, o := range objs {
		if o.Path == "" || len(names) == 0 {
			continue
		}
		m, err := argspec.ReadLibrary(o.Path, names, enums)
		if err != nil {
			continue
		}
		for _, fn := range m.Funcs {
			funcs = append(funcs, fn)
			names = slices.DeleteFunc(names, func(n string) bool { return n == fn.Name })
		}
	}
	return argspec.Settings(funcs)
}

// joinEntries joins two lists of FTRACE_ARGS (or FTRACE_RETVAL)
// entries, a's first.
func joinEntries(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ";" + b
}

// writeEnums writes the enums the run's items named into its trace
// directory (trace.EnumsFile), for the reader to name their values.
func writeEnums(dir string, enums *argspec.Enums) error {
	list := enums.List()
	if dir == "" || len(list) == 0 {
		return nil
	}
	var b strings.Builder
	if err := trace.WriteEnums(&b, list); err != nil {
		return err
	}
	return outfile.WriteFile(filepath.Join(dir, trace.EnumsFile), 0o644, []byte(b.String()))
}

// A target is the program record runs.
type target struct {
	name string // as given
	path string // found as a shell finds it
	argv []string
	// elf: the ELF program whose code runs was checked to link the
	// runtime: the file itself, or the program a libtool wrapper script
	// runs; otherwise (another script) nothing could be checked.
	elf bool
	// untraced: an ELF program without the runtime (a shell, make),
	// whose traced descendants alone record.
	untraced bool
	// code is the ELF file whose code runs, "" when unknown: path, or
	// the program wrapper runs.
	code       string
	wrapper    *libtool.Wrapper // path is libtool's wrapper script for code
	prepatched bool
	setid      bool      // setuid or setgid to another user or group: it runs in secure execution (secureExec)
	arch       arch.Arch // the ELF's; a script's: this machine's
	// preload: an ELF program with sites linked without the runtime,
	// which record traces with the runtime preloaded (LD_PRELOAD).
	preload bool
	// untabled names the hook an ELF program's -pg or -mfentry sites
	// call when it has no table of them (no recordmcount, no
	// -mrecord-mcount): the runtime, which finds sites only from a
	// table, finds none there.
	untabled string
}

// Shell exit statuses for a program that cannot be run.
const (
	exitNotFound = 127
	exitNoExec   = 126
)

// findTarget finds the program args[0] as a shell does (PATH, unless the
// name has a slash) and says how it is traced: it links the runtime; or
// it has sites and gets the runtime preloaded; or it has none, and runs
// untraced unless -P makes some (servePlans).
func findTarget(args []string) (*target, error) {
	if len(args) == 0 {
		return nil, usage(errors.New("no program to run: ftpatch record [flags] [--] PROG [ARGS...]"))
	}
	t := &target{name: args[0], argv: args, arch: arch.X86_64}
	if runtime.GOARCH == "arm64" {
		t.arch = arch.ARM64
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		code := exitNoExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exitNotFound
		}
		return nil, &exitError{code: code, err: fmt.Errorf("%s: %w", args[0], errors.Unwrap(err))}
	}
	t.path = path
	if fi, err := os.Stat(path); err == nil {
		t.setid = secureExec(fi)
	}
	code := path
	m, err := infile.Map(path)
	if err != nil {
		return nil, &exitError{code: exitNoExec, err: err}
	}
	defer m.Close()
	f, err := elfx.Parse(path, m.Data)
	if errors.Is(err, elfx.ErrNotELF) {
		w, werr := libtool.Read(path)
		if werr != nil {
			return t, nil // a script: what it runs is not ours to check
		}
		// libtool's wrapper script: the script runs, as it must (it
		// sets the library path, relinks its program), and what is
		// checked is the program it runs.
		t.wrapper, code = w, w.Runs()
		pm, perr := infile.Map(code)
		if perr != nil {
			return t, nil // not built yet: the script will say so
		}
		defer pm.Close()
		f, err = elfx.Parse(code, pm.Data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: ftpatch traces 64-bit x86-64 programs built with its runtime", code, err)
	}
	t.elf, t.code = true, code
	t.arch = f.Arch
	l, cfg, err := patch.Linked(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", code, err)
	}
	switch l {
	case patch.LinksNothing:
		// With sites (compiled with -pg, -mfentry or patchable
		// entries): traced with the runtime preloaded. Without
		// (a shell, make): untraced itself, it runs, and the traced
		// programs it starts record into the session.
		t.preload = hasSites(f)
		t.untraced = !t.preload
		if t.preload && !hasTable(f) {
			t.untabled = hookCalled(f)
		}
	case patch.LinksModule:
		return nil, fmt.Errorf("%s: a shared object (it links the module stub): record the program that loads it", code)
	}
	t.prepatched = cfg.Patched()
	return t, nil
}

// siteTables are the sections that hold a linked file's sites for the
// runtime: recordmcount's or -mrecord-mcount's table, patchable entries,
// the trampolines ftpatch instrument made.
var siteTables = []string{"__mcount_loc", "__patchable_function_entries", abi.PrologueSection}

// hasTable says whether f has a table of sites (siteTables) the runtime
// reads.
func hasTable(f *elfx.File) bool {
	for _, name := range siteTables {
		if sec := f.Section(name); sec != nil && sec.Size > 0 {
			return true
		}
	}
	return false
}

// secureExec says whether the program fi runs in secure execution when
// this process runs it: setuid to another user than this one, or setgid
// to another group. The kernel then sets AT_SECURE (as it does for file
// capabilities, which are not looked at): the runtime reads no FTRACE*
// variable, and the loader ignores LD_PRELOAD. A setuid-root program run
// by root runs as any other.
func secureExec(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0
	}
	return fi.Mode()&fs.ModeSetuid != 0 && int(st.Uid) != os.Getuid() ||
		fi.Mode()&fs.ModeSetgid != 0 && int(st.Gid) != os.Getgid()
}

// hasSites says whether the linked file f has sites for the runtime: a
// site table (recordmcount's or -mrecord-mcount's __mcount_loc),
// patchable entries, the trampolines ftpatch instrument made, or calls
// of -pg's and -mfentry's hooks (__fentry__, mcount, _mcount) left for
// the loader to bind.
func hasSites(f *elfx.File) bool {
	return hasTable(f) || hookCalled(f) != ""
}

// hookCalled is the name of the hook of -pg's or -mfentry's sites
// (__fentry__, mcount, _mcount) that f calls, left for the loader to
// bind; "" for none.
func hookCalled(f *elfx.File) string {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_DYNSYM {
			continue
		}
		syms, err := f.Symbols(s)
		if err != nil {
			return ""
		}
		for i := range syms {
			switch syms[i].Name {
			case "__fentry__", "mcount", "_mcount":
				if !syms[i].Defined() {
					return syms[i].Name
				}
			}
		}
	}
	return ""
}

// preloadEnv is env with the runtime's shared object lib first in
// LD_PRELOAD, before what the caller preloads. A program of another
// architecture runs under qemu-user (binfmt_misc), whose own loader must
// not be given another architecture's object: QEMU_SET_ENV gives the
// variable to the program alone.
func (t *target) preloadEnv(env []string, lib string) []string {
	preload := lib
	out := env[:0:0]
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "LD_PRELOAD="); ok {
			if v != "" {
				preload += ":" + v
			}
			continue
		}
		out = append(out, e)
	}
	host := arch.X86_64
	if runtime.GOARCH == "arm64" {
		host = arch.ARM64
	}
	if t.arch != host {
		if slices.ContainsFunc(out, func(e string) bool { return strings.HasPrefix(e, "QEMU_SET_ENV=") }) {
			return append(out, "LD_PRELOAD="+preload) // the caller's QEMU_SET_ENV stays; qemu passes the environment on
		}
		return append(out, "QEMU_SET_ENV=LD_PRELOAD="+preload)
	}
	return append(out, "LD_PRELOAD="+preload)
}

// run runs the target with the settings, its environment ftpatch's
// with the settings' variables in place of any the caller had (named
// on stderr), and the runtime preloaded into a program with sites linked
// without it.
func (t *target) run(s launch.Settings, stderr io.Writer) (launch.Status, error) {
	env, dropped := s.Env(os.Environ())
	if len(dropped) > 0 {
		fmt.Fprintf(stderr, "ftpatch: note: %s from the environment not passed on: the flags set the FTRACE* variables they own\n", strings.Join(dropped, " "))
	}
	if t.untabled != "" && s.PrologueSocket == "" {
		fmt.Fprintf(stderr, "ftpatch: note: %s calls %s but has no table of its sites, which the runtime finds them from: none of its functions is traced; run recordmcount on its objects before linking, or compile with -mrecord-mcount (gcc), or record it with -P . (sites made from its functions' prologues)\n", t.name, t.untabled)
	}
	if t.preload {
		if t.setid {
			fmt.Fprintf(stderr, "ftpatch: note: %s is setuid or setgid and linked without the runtime: the loader preloads nothing into it, so it runs untraced\n", t.name)
		} else {
			lib, err := ftrt.Find(context.Background(), ftrt.Options{Arch: t.arch, Notes: stderr}, installPrefix())
			if err != nil {
				return launch.Status{}, fmt.Errorf("%s has sites but no runtime linked, and the runtime to preload cannot be had: %w", t.name, err)
			}
			if lib.Scratch != "" {
				defer os.RemoveAll(lib.Scratch)
			}
			env = t.preloadEnv(env, lib.Shared)
		}
	}
	st, err := launch.Run(t.path, t.argv, env)
	if err != nil {
		return st, &exitError{code: exitNoExec, err: fmt.Errorf("%s: %w", t.name, err)}
	}
	return st, nil
}

// A madeTrace is what became of the trace directory.
type madeTrace struct {
	path  string // where the run's trace is; "" for none
	aside string // where an earlier trace of that name was moved, if one was
}

// findTrace says where the run (of process pid) left its trace, asked
// for dir: dir itself, made anew; or dir.PID beside it, where the
// runtime traces when dir is in use by a running process: PID this
// process's, the session's root (FTRACE_SESSION), or the program's, by
// a runtime that did not take it. before is dir
// as it was before the run (nil: there was none), moved aside to
// dir.old or dir.old.N if the run made a new one.
func findTrace(dir string, before fs.FileInfo, pid int) madeTrace {
	for _, p := range []int{os.Getpid(), pid} {
		if fi, err := os.Lstat(fmt.Sprintf("%s.%d", dir, p)); err == nil && fi.IsDir() {
			return madeTrace{path: fmt.Sprintf("%s.%d", dir, p)}
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || (before != nil && os.SameFile(fi, before)) {
		return madeTrace{}
	}
	td := madeTrace{path: dir}
	if before != nil {
		old, _ := filepath.Glob(strings.TrimSuffix(dir, "/") + ".old*")
		for _, o := range old {
			if ofi, err := os.Lstat(o); err == nil && os.SameFile(ofi, before) {
				td.aside = o
			}
		}
	}
	return td
}

// shellQuote quotes s for a command line the user may paste.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ',' || r == ':' || r == '=' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ended describes, on stderr, how the program ended and where its trace
// is: one line.
func (t *target) ended(stderr io.Writer, st launch.Status, s launch.Settings, td madeTrace) {
	how := ""
	if sig, ok := st.Signal(); ok {
		how = fmt.Sprintf("%s was killed by %s; ", t.name, launch.SignalName(sig))
	}
	switch {
	case td.path != "":
		q := shellQuote(td.path)
		aside := ""
		if td.aside != "" {
			aside = fmt.Sprintf(" (the earlier trace moved to %s)", td.aside)
		}
		fmt.Fprintf(stderr, "ftpatch: %sthe trace is in %s%s: read it with `ftpatch replay %s` or `ftpatch report %s`\n", how, td.path, aside, q, q)
	case s.Tracer == "nop":
		fmt.Fprintf(stderr, "ftpatch: %sthe nop tracer writes no trace\n", how)
	case t.setid && t.preload:
		// The note before the run said it runs untraced.
	case t.setid:
		fmt.Fprintf(stderr, "ftpatch: %sno trace in %s: a setuid or setgid program reads no FTRACE* variable and traces only where `ftpatch enable --trace-dir` recorded\n", how, s.Out)
	case !t.elf:
		fmt.Fprintf(stderr, "ftpatch: %sno trace in %s: %s is not an ELF program (a script?), and nothing it ran wrote one\n", how, s.Out, t.name)
	case t.untraced:
		fmt.Fprintf(stderr, "ftpatch: %sno trace in %s: %s is not built with the ftpatch runtime, and nothing it ran wrote one: build it with `ftpatch cc` (CC=\"ftpatch cc gcc\" ./configure && make), or compile with $(ftpatch flags --cflags), run recordmcount on the objects and link with $(ftpatch flags --libs)\n", how, s.Out, t.code)
	default:
		fmt.Fprintf(stderr, "ftpatch: %sno trace in %s (see the messages above)\n", how, s.Out)
	}
}

// record runs the target into the trace directory dir and returns how
// it ended and where its trace is.
func (r *recordFlags) record(t *target, dir string, stderr io.Writer) (launch.Status, launch.Settings, madeTrace, error) {
	s, err := r.settings(dir, t.prepatched)
	enums := argspec.NewEnums()
	if err == nil {
		err = r.checkArgs(t, enums)
	}
	var srv *argspec.Server
	if err == nil && r.autoArgs {
		srv, err = r.serveAutoArgs(&s, t, enums, stderr)
	}
	if srv != nil {
		defer srv.Close()
	}
	var plans *prologue.Server
	if err == nil && len(r.prologue) > 0 {
		plans, err = r.servePlans(&s, t, stderr)
	}
	if err != nil {
		return launch.Status{}, s, madeTrace{}, err
	}
	if plans != nil {
		defer plans.Close()
	}
	switch {
	case t.wrapper != nil && t.elf:
		fmt.Fprintf(stderr, "ftpatch: note: %s is a libtool wrapper script for %s: running the script, which runs it\n", t.name, t.wrapper.Program)
	case t.wrapper != nil:
		fmt.Fprintf(stderr, "ftpatch: note: %s is a libtool wrapper script for %s, not built yet: ftpatch cannot check that it links the runtime\n", t.name, t.wrapper.Program)
	case !t.elf:
		fmt.Fprintf(stderr, "ftpatch: note: %s is not an ELF program (a script?): ftpatch cannot check that what it runs links the runtime\n", t.name)
	}
	if t.code != "" {
		filterNotes(stderr, t.code, map[string][]string{"--filter": r.filter, "-F": r.funcs, "-N": r.notrace})
	}
	before, _ := os.Lstat(dir)
	if before != nil && !before.IsDir() {
		before = nil
	}
	st, err := t.run(s, stderr)
	if err != nil {
		return st, s, madeTrace{}, err
	}
	if srv != nil {
		srv.Close() // every answer given: the enums are all known
	}
	td := findTrace(dir, before, st.Pid())
	if err := writeEnums(td.path, enums); err != nil {
		fmt.Fprintf(stderr, "ftpatch: the enums' names: %v (enums show as numbers)\n", err)
	}
	if td.path != "" {
		if err := writeExit(td.path, st); err != nil {
			fmt.Fprintf(stderr, "ftpatch: note: how the program ended is not in its trace (ftpatch info will say so): %v\n", err)
		}
	}
	return st, s, td, nil
}

// writeExit writes into the trace directory dir how the program ended
// and what it used (trace.ExitFile), which the runtime cannot see when
// the program is killed outright, for ftpatch info.
func writeExit(dir string, st launch.Status) error {
	e := trace.ExitStatus{Code: st.Code()}
	if sig, ok := st.Signal(); ok {
		e = trace.ExitStatus{Signal: int(sig), Core: st.CoreDumped()}
	}
	if ru := st.Usage(); ru != nil {
		e.Usage = trace.UsageOf(ru)
	}
	return trace.WriteExitStatus(dir, e)
}

const recordEnv = `Environment: record sets the runtime's variables from its flags:
FTRACE (the tracer), FTRACE_OUT (-d), FTRACE_FILTER (--filter),
FTRACE_DEPTH (-D), FTRACE_THRESH (-t), FTRACE_GRAPH_FUNCS (-F),
FTRACE_GRAPH_NOTRACE (-N), FTRACE_ARGS (-A), FTRACE_RETVAL (-R) and
FTRACE_ARGS_SOCKET (--auto-args: a socket of record's own that gives
each module's items from its DWARF as the module loads), FTRACE_LIBARGS
and FTRACE_LIBRETVAL (--auto-args: the prototype table's items for
library calls). -A and -R are
checked before PROG runs (exit 2 for one the grammar refuses), and the
enums their items name are written into the trace (enums). The flags win: any of these the environment
already holds is not passed on (record names them on stderr), so a
recording is what its command line says. The runtime's other variables
(FTRACE_CLOCK, FTRACE_MODE, FTRACE_DEBUG, FTRACE_INHERIT, FTRACE_NOP)
pass through as they are.

A program pre-patched by ftpatch enable traces with the tracer and the
functions its record holds when no --tracer, -F, -N or -t is given
(--filter alone then chooses among its sites with the recorded tracer);
any of those traces it as they say, as FTRACE does. A setuid or setgid
program run by another user or group reads no FTRACE* variable at all
(see ftpatch enable --trace-dir).

PROG is found as a shell finds it (PATH, unless it has a slash). A
program that links the runtime (built with ftpatch cc: see ftpatch help
cc) traces as it is; one with compiler sites but linked without it, or
one ftpatch instrument wrote, gets the runtime preloaded (libftrt.so;
never into a setuid or setgid program run by another user or group,
which the loader preloads nothing into: record says so in one line, and
it runs untraced). A program built without any tracing flag
is traced with -P GLOB: sites made at load from the prologues of the
functions GLOB chooses ('.' or '*' for every one), in it and in the
shared objects loaded with it from outside the system's library
directories (/lib, /usr/lib...: calls into those are traced as library
calls), the runtime preloaded; ftpatch sites --dynamic
PROG lists which functions get one and why not. Without -P such a
program runs untraced, and only the traced programs it starts record
(a shell, make). A libtool wrapper script (what a libtool build
leaves where the program is expected: a shell script that sets the
library path and runs .libs/NAME, or .libs/lt-NAME it relinks) is run
as it is, with a note naming the program it runs: that program is what
is checked, and what --auto-args reads. Another script is run without
that check (its interpreter is not the program to trace), with a note.

A --filter, -F or -N glob that matches no function of PROG but matches
functions of a shared object PROG links (found as the dynamic loader
finds it) gets a note on stderr: the runtime applies the filters to
every shared object built for tracing (with ftpatch cc: patch sites and
the module stub), so there they choose already; in an object not built
for tracing nothing is traced.

Running: PROG gets ftpatch's standard input, output and error and runs
in its process group. Signals sent to ftpatch while PROG runs (SIGINT,
SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH) are
passed on to PROG, and do not end ftpatch; those a terminal sends to its
whole foreground group (^C, ^\, a hangup, a resize) are not passed on
while ftpatch is in the foreground, as PROG received them itself. ^Z
stops both; fg continues both. A signal sent to the whole process group
(kill -- -PGID, timeout(1)) reaches PROG directly and through ftpatch:
send it to ftpatch's pid. A signal ftpatch was started with ignored
(SIGHUP under nohup, SIGINT in a background job) stays ignored in PROG.

Exit status: PROG's. A PROG killed by a signal is reported on stderr,
and ftpatch then kills itself with the same signal (its default action
restored, no core dump of its own), so the shell sees what it would
have seen of PROG: a script interrupted by ^C stops. 127: PROG not
found; 126: not executable; 2: a usage error; 1: PROG refused.`

func newRecord(stderr io.Writer) *cobra.Command {
	var rf recordFlags
	var dir string
	var pid int
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "record [flags] [--] PROG [ARGS...] | record -p PID [flags]",
		Short: "Run a program with tracing on (the FTRACE* variables set from flags)",
		Long: `record runs PROG with ARGS, traced: it sets the runtime's FTRACE*
variables from its flags, runs PROG, and when PROG ends prints on stderr,
in one line, where the trace is and how to read it (ftpatch replay,
ftpatch report). The tracer is function_graph unless --tracer says
otherwise.

-F GLOB records only calls made while a function GLOB matches is on the
thread's stack (the function and everything it calls), -N GLOB nothing
inside such a function, as the kernel's set_graph_function and
set_graph_notrace and uftrace's record -F and -N: both imply
function_graph, and -D counts its depth from the -F function. --filter
chooses which functions' sites are enabled at all (FTRACE_FILTER).

The trace directory is -d DIR (default ftrace.data), made by the runtime
when PROG starts. One that exists already is never mixed with the new
trace nor removed: a finished run's is moved aside to DIR.old (or
DIR.old.N) and record says so; one a running process is still writing is
left alone, and this run's trace goes to DIR.PID beside it, which record
names.
` + recordPidHelp + `
` + recordEnv,
		Example: `  ftpatch record ./prog input.txt            # function_graph into ./ftrace.data
  ftpatch record -F 'parse_*' -D 3 -- ./prog  # only parse_* calls and theirs, 3 deep
  ftpatch record -N 'log_*' -t 1us ./prog     # nothing under log_*, no call under 1us
  ftpatch record --tracer function --filter 'hash_*,!hash_mix' -d t1 ./prog
  ftpatch replay t1
  ftpatch record -p $(pidof server) --filter 'handle_*' --duration 10s -d t2`,
		Args: usageArgs(programOrPid(&pid, &duration)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pid != 0 {
				if pid < 0 {
					return usage(fmt.Errorf("-p %d: not a process id", pid))
				}
				return rf.recordPid(pid, dir, duration, true, stderr)
			}
			t, err := findTarget(args)
			if err != nil {
				return err
			}
			st, s, td, err := rf.record(t, dir, stderr)
			if err != nil {
				return err
			}
			t.ended(stderr, st, s, td)
			return exitAs(st)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVarP(&dir, "dir", "d", "ftrace.data", "the trace directory `DIR` (FTRACE_OUT)")
	cmd.Flags().IntVarP(&pid, "pid", "p", 0, "record the running process `PID` (attached to through ptrace) rather than run a program")
	cmd.Flags().DurationVar(&duration, "duration", 0, "with -p: stop recording after `DURATION` (10s, 1m) rather than at ^C")
	return cmd
}

// programOrPid checks record's and live's arguments: a program to run,
// or with -p PID none (and --duration with -p alone).
func programOrPid(pid *int, duration *time.Duration) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if *pid != 0 {
			if len(args) > 0 {
				return errors.New("-p PID records a running process: no program to run too")
			}
			return nil
		}
		if *duration != 0 {
			return errors.New("--duration is -p's")
		}
		return needProgram(cmd, args)
	}
}

func newLive(stdout, stderr io.Writer) *cobra.Command {
	var rf recordFlags
	var keep bool
	var pid int
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "live [flags] [--] PROG [ARGS...] | live -p PID [flags]",
		Short: "Record a program into a temporary directory, then replay its trace",
		Long: `live records PROG as ftpatch record does, into a temporary directory,
then prints the trace as ftpatch replay does (after PROG's own output, on
standard output), and removes the directory, unless --keep, which keeps
it and names it on stderr. Its flags are record's (but -d). With -p PID
it records a running process as record -p does (--duration, or until
^C, SIGTERM or its end), into a temporary directory the process's user
can write, then replays it.

A replay cut short by its reader (ftpatch live ... | head) ends quietly;
^C or SIGTERM during the replay removes the directory (unless --keep)
and ends ftpatch by the same signal.

` + recordEnv + `
A replay that fails is reported on stderr; the exit status is then 1 if
PROG's was 0.`,
		Example: `  ftpatch live ./prog input.txt
  ftpatch live -F main -D 2 -- ./prog | less
  ftpatch live --keep --tracer function ./prog
  ftpatch live -p $(pidof server) --filter 'handle_*' --duration 2s`,
		Args: usageArgs(programOrPid(&pid, &duration)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pid != 0 {
				return livePid(&rf, pid, duration, keep, stdout, stderr)
			}
			t, err := findTarget(args)
			if err != nil {
				return err // refused before a directory is made
			}
			parent, cleanup, err := liveTemp(keep)
			if err != nil {
				return err
			}
			st, s, td, err := rf.record(t, filepath.Join(parent, "trace"), stderr)
			if err != nil {
				cleanup()
				return err
			}
			if td.path == "" {
				t.ended(stderr, st, s, td)
				cleanup()
				return exitAs(st)
			}
			err = replayLive(stdout, stderr, td.path, cleanup)
			cleanup()
			if keep {
				fmt.Fprintf(stderr, "ftpatch: the trace is kept in %s\n", td.path)
			}
			if err != nil && !errors.Is(err, syscall.EPIPE) {
				fmt.Fprintf(stderr, "ftpatch: replay: %v\n", err)
				if st.Success() {
					return &exitError{code: exitProblem, err: errReported}
				}
			}
			return exitAs(st)
		},
	}
	rf.register(cmd)
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the trace directory, and name it on stderr")
	cmd.Flags().IntVarP(&pid, "pid", "p", 0, "record the running process `PID` (attached to through ptrace) rather than run a program")
	cmd.Flags().DurationVar(&duration, "duration", 0, "with -p: stop recording after `DURATION` (10s, 1m) rather than at ^C")
	return cmd
}

// liveTemp makes live's temporary directory, and the cleanup that
// removes it unless keep.
func liveTemp(keep bool) (string, func(), error) {
	parent, err := os.MkdirTemp("", "ftpatch-live-")
	if err != nil {
		return "", nil, err
	}
	return parent, func() {
		if !keep {
			os.RemoveAll(parent)
		}
	}, nil
}

// livePid is live -p: process pid recorded as record -p does into a
// temporary directory, replayed, and the directory removed unless keep.
// The directory is made traversable and given to the process's user,
// who makes the trace in it (the process writes its own trace).
func livePid(rf *recordFlags, pid int, duration time.Duration, keep bool, stdout, stderr io.Writer) error {
	if pid < 0 {
		return usage(fmt.Errorf("-p %d: not a process id", pid))
	}
	parent, cleanup, err := liveTemp(keep)
	if err != nil {
		return err
	}
	defer cleanup()
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil {
		return fmt.Errorf("live -p %d: %w", pid, control.ErrNoProcess)
	}
	if int(st.Uid) != os.Getuid() {
		if err := os.Chown(parent, int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("live -p %d: giving the process's user the temporary directory: %w", pid, err)
		}
	}
	path := filepath.Join(parent, "trace")
	if err := rf.recordPid(pid, path, duration, false, stderr); err != nil {
		return err
	}
	err = replayLive(stdout, stderr, path, cleanup)
	if keep {
		fmt.Fprintf(stderr, "ftpatch: the trace is kept in %s\n", path)
	}
	if err != nil && !errors.Is(err, syscall.EPIPE) {
		fmt.Fprintf(stderr, "ftpatch: replay: %v\n", err)
		return &exitError{code: exitProblem, err: errReported}
	}
	return nil
}

// errReported is an error already printed on stderr.
var errReported = errors.New("reported")

// replayLive runs the replay command on dir. A signal that would end
// ftpatch meanwhile runs cleanup first, then ends it by that signal; a
// closed output (SIGPIPE) makes the replay's writes fail with EPIPE
// instead of killing ftpatch before it cleans up.
func replayLive(stdout, stderr io.Writer, dir string, cleanup func()) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGPIPE {
					continue
				}
				cleanup()
				launch.Exit(launch.Signaled(s.(syscall.Signal)))
			case <-stop:
				return
			}
		}
	}()
	r := newReplay(stdout)
	r.SetArgs([]string{dir})
	r.SetOut(stdout)
	r.SetErr(stderr)
	r.SilenceErrors, r.SilenceUsage = true, true
	return r.Execute()
}
