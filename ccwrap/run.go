package ccwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"ftpatch/arch"
	"ftpatch/launch"
	"ftpatch/record"
	ftrt "ftpatch/runtime"
)

// A Wrapper runs compiler commands so that what they build can be
// traced.
type Wrapper struct {
	// Compiler is the compiler command: a name or a path, after any
	// launcher that runs it (ccache gcc).
	Compiler []string
	// RuntimeCC is the C compiler the runtime is built with; nil for
	// Compiler's own C counterpart (gcc for g++, clang for clang++, cc
	// for c++), or cc when there is none.
	RuntimeCC []string
	// Stderr takes the wrapper's own messages.
	Stderr io.Writer
	// Exec runs one command (argv[0] looked up in PATH) and returns how
	// it ended; nil for launch.Run.
	Exec func(argv []string) (launch.Status, error)
	// Cache is the cache directory the runtime is built into (package
	// runtime's Options.Cache); "" for the user's.
	Cache string

	rt *ftrt.Lib // the runtime, found once a command
}

// ErrTarget: the compiler builds for an architecture ftpatch does not
// trace.
var ErrTarget = errors.New("unsupported target")

// ErrSameFile: a file the command would write is one of its inputs (by
// any name: a link, a relative path). gcc refuses -o naming an input
// ("input file is the same as output file"), but the wrapper links
// objects of its own in the sources' places, so the compiler would not
// see it; and gcc compares names, not files.
var ErrSameFile = errors.New("refusing to write over an input")

// Run runs the compiler command args (the arguments after the compiler)
// as Parse reads it, and returns how it ended; an error is the
// wrapper's own failure, the command's being in the status.
//
//   - Pass: the command, unchanged.
//   - Compile: with the compile flags for the target added (before the
//     command's own), then the object pass on each object it wrote.
//   - Link: each source on the line compiled apart into a temporary
//     directory (with the compile flags, the options that concern only
//     the link left out) and given the object pass; then the link, of
//     those objects in the sources' places, with the runtime added (the
//     module stub for -shared; nothing for -r, a partial link, or a
//     -nostdlib program, which has no C library for the runtime).
//
// Link-time optimisation (-flto and its options) is dropped: the code of
// an LTO build is generated at the link, where the object pass cannot
// reach it, and gcc keeps no -pg for that step. -fomit-frame-pointer is
// dropped from a compile given -pg, which gcc refuses beside it.
func (w *Wrapper) Run(ctx context.Context, args []string) (launch.Status, error) {
	c, err := Parse(args, ReadResponse)
	if err != nil {
		return launch.Status{}, err
	}
	if err := c.checkOutputs(); err != nil {
		return launch.Status{}, err
	}
	defer w.done()
	switch c.Action {
	case Compile:
		return w.compile(ctx, c)
	case Link:
		return w.link(ctx, c)
	}
	return w.exec(append(slices.Clone(w.Compiler), args...))
}

func (w *Wrapper) exec(argv []string) (launch.Status, error) {
	if w.Exec != nil {
		return w.Exec(argv)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return launch.Status{}, fmt.Errorf("the compiler: %w", err)
	}
	return launch.Run(path, argv, os.Environ())
}

// lto are the link-time optimisation options, dropped everywhere.
func lto(a string) bool {
	return a == "-flto" || strings.HasPrefix(a, "-flto=") || strings.HasPrefix(a, "-flto-") ||
		a == "-fno-lto" || a == "-ffat-lto-objects" || a == "-fno-fat-lto-objects"
}

// linkOnly are the options that concern only the link: clang warns of
// each in a compile (-Wunused-command-line-argument, an error under
// -Werror), so a source compiled apart from its link is compiled
// without them.
func linkOnly(a string) bool {
	switch a {
	case "-l", "-L", "-Xlinker", "-u", "-z", "-T", "-e", "-shared", "-rdynamic", "-pie", "-no-pie", "-static-pie",
		"-s", "-r", "-relocatable", "-static-libgcc", "-static-libstdc++", "-shared-libgcc", "-nostartfiles",
		"-nodefaultlibs", "-nostdlib", "-o", "--output":
		return true
	}
	for _, p := range []string{"-l", "-L", "-Wl,", "-fuse-ld=", "--ld-path=", "--entry=", "--output="} {
		if strings.HasPrefix(a, p) {
			return true
		}
	}
	return strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "-objc")
}

// compileOnly are the options of a compile-and-link command that
// concern the compile alone, left out of its link: -x (the link's inputs
// are objects), the assembler's options (clang warns of them in a link)
// and the dependency file's.
func compileOnly(a string) bool {
	switch a {
	case "-x", "-Xassembler", "-MD", "-MMD", "-MF", "-MT", "-MQ", "-MP", "-MG":
		return true
	}
	return strings.HasPrefix(a, "-x") || strings.HasPrefix(a, "-Wa,") || strings.HasPrefix(a, "-MF")
}

// rewrite returns the command's arguments with every option for which
// drop is true left out (with its value, when it takes the next
// argument) and each input replaced by what input returns.
func (c *Command) rewrite(drop func(string) bool, input func(Input) []string) []string {
	at := map[int]Input{}
	for _, in := range c.Inputs {
		at[in.Pos] = in
	}
	var out []string
	for i := 0; i < len(c.Args); i++ {
		if in, ok := at[i]; ok {
			out = append(out, input(in)...)
			continue
		}
		n := 1
		if separate[c.Args[i]] && i+1 < len(c.Args) {
			n = 2
		}
		if !drop(c.Args[i]) {
			out = append(out, c.Args[i:i+n]...)
		}
		i += n - 1
	}
	return out
}

// cflags are the compile flags for the compiler's target, and the
// options they make the command drop. They name the directory of the
// runtime's header, ftrace.h, with -idirafter: searched after the
// command's own directories and the system's, so that a header of that
// name of the program's own wins.
func (w *Wrapper) cflags(ctx context.Context, c *Command) ([]string, func(string) bool, error) {
	a, err := w.target(c)
	if err != nil {
		return nil, nil, err
	}
	lib, err := w.runtime(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	flags := append(ftrt.CFlags(a), "-idirafter", lib.Include)
	pg := slices.Contains(flags, "-pg")
	return flags, func(o string) bool { return lto(o) || (pg && o == "-fomit-frame-pointer") }, nil
}

// runtime is the runtime for architecture a, from the cache (built there
// on first use), found once a command: a cache that cannot be trusted
// is said once, and the runtime built for the command alone is removed
// when it ends (done).
func (w *Wrapper) runtime(ctx context.Context, a arch.Arch) (ftrt.Lib, error) {
	if w.rt == nil {
		lib, err := ftrt.Cached(ctx, ftrt.Options{CC: w.runtimeCC(), Arch: a, Cache: w.Cache, Notes: w.Stderr})
		if err != nil {
			return ftrt.Lib{}, fmt.Errorf("the runtime: %w", err)
		}
		w.rt = &lib
	}
	return *w.rt, nil
}

// done removes a runtime built for the command alone.
func (w *Wrapper) done() {
	if w.rt != nil && w.rt.Scratch != "" {
		os.RemoveAll(w.rt.Scratch)
	}
	w.rt = nil
}

// target asks the compiler which architecture it builds for, with the
// command's options that choose one (-dumpmachine).
func (w *Wrapper) target(c *Command) (arch.Arch, error) {
	argv := slices.Clone(w.Compiler)
	for i, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--target="), a == "-m32", a == "-m64", a == "-mx32":
			argv = append(argv, a)
		case a == "-target" && i+1 < len(c.Args):
			argv = append(argv, a, c.Args[i+1])
		}
	}
	argv = append(argv, "-dumpmachine")
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		return arch.Unknown, fmt.Errorf("asking the compiler its target (%s): %w", strings.Join(argv, " "), err)
	}
	triple := strings.TrimSpace(string(out))
	cpu, _, _ := strings.Cut(triple, "-")
	a, err := arch.Parse(cpu)
	if err != nil {
		return arch.Unknown, fmt.Errorf("%w: %s builds for %s: ftpatch traces x86_64 and arm64 programs", ErrTarget, w.Compiler[len(w.Compiler)-1], triple)
	}
	return a, nil
}

// run runs the compiler with args; when the command came with response
// files, args go into one of their own in dir (its length may be why).
func (w *Wrapper) run(c *Command, dir string, args []string) (launch.Status, error) {
	argv := slices.Clone(w.Compiler)
	if !c.Response {
		return w.exec(append(argv, args...))
	}
	rsp, err := os.CreateTemp(dir, "args-*.rsp")
	if err != nil {
		return launch.Status{}, err
	}
	defer os.Remove(rsp.Name())
	_, err = rsp.WriteString(QuoteResponse(args))
	if cerr := rsp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return launch.Status{}, err
	}
	return w.exec(append(argv, "@"+rsp.Name()))
}

func (w *Wrapper) compile(ctx context.Context, c *Command) (launch.Status, error) {
	flags, drop, err := w.cflags(ctx, c)
	if err != nil {
		return launch.Status{}, err
	}
	dir := ""
	if c.Response {
		if dir, err = os.MkdirTemp("", "ftpatch-cc-"); err != nil {
			return launch.Status{}, err
		}
		defer os.RemoveAll(dir)
	}
	objs := c.Objects()
	before := stats(objs)
	args := append(slices.Clone(flags), c.rewrite(drop, func(in Input) []string { return []string{in.Path} })...)
	st, err := w.run(c, dir, args)
	if err != nil {
		return st, err
	}
	// A compile that failed may still have written the objects of its
	// other sources: each object there is passed, so none is left
	// without its table.
	if err := w.pass(written(objs, before)); err != nil {
		return st, err
	}
	return st, nil
}

func (w *Wrapper) link(ctx context.Context, c *Command) (launch.Status, error) {
	a, err := w.target(c)
	if err != nil {
		return launch.Status{}, err
	}
	var rt []string
	if !c.Relocatable && (!c.NoStdlib || c.Shared) {
		lib, err := w.runtime(ctx, a)
		if err != nil {
			return launch.Status{}, err
		}
		if c.Shared {
			rt = ftrt.ModuleLinkFlags(lib.Archive)
		} else {
			rt = ftrt.LinkFlags(lib.Archive)
		}
	}
	srcs := c.Sources()
	if len(srcs) == 0 && !c.Response {
		return w.exec(append(append(slices.Clone(w.Compiler), c.rewrite(lto, keep)...), rt...))
	}
	dir, err := os.MkdirTemp("", "ftpatch-cc-")
	if err != nil {
		return launch.Status{}, err
	}
	defer os.RemoveAll(dir)
	objOf := map[int]string{}
	if len(srcs) > 0 {
		flags, drop, err := w.cflags(ctx, c)
		if err != nil {
			return launch.Status{}, err
		}
		if len(c.Aux) > 0 {
			fmt.Fprintf(w.Stderr, "ftpatch cc: note: %s names files after the object, which a command that compiles and links at once makes in a temporary directory; compile with -c and link apart to keep them\n", strings.Join(c.Aux, " "))
		}
		var failed *launch.Status
		for i, s := range srcs {
			obj := filepath.Join(dir, fmt.Sprintf("%d-%s", i, ObjectName(s.Path)))
			objOf[s.Pos] = obj
			args := append(slices.Clone(flags), c.rewrite(func(o string) bool { return drop(o) || linkOnly(o) || o == "-x" || strings.HasPrefix(o, "-x") },
				func(Input) []string { return nil })...)
			if s.X != "" && s.X != "none" {
				args = append(args, "-x", s.X)
			}
			args = append(args, "-c", s.Path, "-o", obj)
			if c.Deps && !c.DepFile {
				base := strings.TrimSuffix(ObjectName(s.Path), ".o")
				args = append(args, "-MF", base+".d", "-MQ", base+".o")
			}
			st, err := w.run(c, dir, args)
			if err != nil {
				return st, err
			}
			if !st.Success() {
				failed = &st // the driver compiles every source, then reports
				continue
			}
			if err := w.pass([]string{obj}); err != nil {
				return st, err
			}
		}
		if failed != nil {
			return *failed, nil
		}
	}
	args := c.rewrite(func(o string) bool { return lto(o) || (len(srcs) > 0 && compileOnly(o)) }, func(in Input) []string {
		if obj, ok := objOf[in.Pos]; ok {
			return []string{obj}
		}
		return []string{in.Path}
	})
	return w.run(c, dir, append(args, rt...))
}

func keep(in Input) []string { return []string{in.Path} }

// outputs are the files the command, run by the wrapper, writes: -o's
// (a.out for a link without one), the objects of a compile, which the
// object pass rewrites, and the dependency files the wrapper names for
// the compiles of a compile-and-link.
func (c *Command) outputs() []string {
	var out []string
	switch {
	case c.Output != "" && c.Output != "-":
		out = append(out, c.Output)
	case c.Action == Link:
		out = append(out, "a.out")
	}
	out = append(out, c.Objects()...)
	if c.Action == Link && c.Deps && !c.DepFile {
		for _, s := range c.Sources() {
			out = append(out, strings.TrimSuffix(ObjectName(s.Path), ".o")+".d")
		}
	}
	return out
}

// checkOutputs fails with ErrSameFile when a file the command writes is
// one of its inputs or response files: the same regular file (device
// and inode), whatever its names. A device (/dev/null as input and
// output) is no file to lose.
func (c *Command) checkOutputs() error {
	type file struct{ dev, ino uint64 }
	id := func(p string) (file, bool) {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return file{}, false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		return file{uint64(st.Dev), st.Ino}, ok
	}
	ins := map[file]string{}
	for _, in := range c.Inputs {
		if f, ok := id(in.Path); ok && in.Path != "-" {
			ins[f] = in.Path
		}
	}
	for _, r := range c.ResponseFiles {
		if f, ok := id(r); ok {
			ins[f] = "@" + r
		}
	}
	for _, out := range c.outputs() {
		f, ok := id(out)
		if in, same := ins[f]; ok && same {
			if in == out {
				return fmt.Errorf("input file %s is the same as output file: %w", in, ErrSameFile)
			}
			return fmt.Errorf("input file %s is the same as output file %s: %w", in, out, ErrSameFile)
		}
	}
	return nil
}

// runtimeCC is the C compiler the runtime is built with.
func (w *Wrapper) runtimeCC() []string {
	if w.RuntimeCC != nil {
		return w.RuntimeCC
	}
	cc := CCounterpart(w.Compiler[len(w.Compiler)-1])
	if _, err := exec.LookPath(cc); err != nil {
		return nil
	}
	return []string{cc}
}

// CCounterpart is the C compiler beside the C++ compiler cxx, by the
// names GCC and LLVM install (g++ -> gcc, clang++-14 -> clang-14,
// aarch64-linux-gnu-g++ -> aarch64-linux-gnu-gcc, c++ -> cc); a C
// compiler is its own.
func CCounterpart(cxx string) string {
	dir, base := filepath.Split(cxx)
	for _, r := range []struct{ from, to string }{{"clang++", "clang"}, {"g++", "gcc"}, {"c++", "cc"}} {
		if i := strings.LastIndex(base, r.from); i >= 0 {
			return dir + base[:i] + r.to + base[i+len(r.from):]
		}
	}
	return cxx
}

// A fileState is what a file was before a command ran.
type fileState struct {
	exists bool
	mod    time.Time
	size   int64
	ino    uint64
}

func stats(paths []string) []fileState {
	out := make([]fileState, len(paths))
	for i, p := range paths {
		out[i] = stateOf(p)
	}
	return out
}

func stateOf(p string) fileState {
	fi, err := os.Stat(p)
	if err != nil {
		return fileState{}
	}
	st := fileState{exists: true, mod: fi.ModTime(), size: fi.Size()}
	if s, ok := fi.Sys().(interface{ Ino() uint64 }); ok {
		st.ino = s.Ino()
	}
	return st
}

// written are the paths the command wrote: each that exists now and did
// not before, or changed. An object that was there already and that the
// command left alone is not the command's, and is not touched.
func written(paths []string, before []fileState) []string {
	var out []string
	for i, p := range paths {
		if now := stateOf(p); now.exists && (!before[i].exists || !now.mod.Equal(before[i].mod) || now.size != before[i].size || now.ino != before[i].ino) {
			out = append(out, p)
		}
	}
	return out
}

// elfMagic starts an ELF file; an object is one of type ET_REL (1).
var elfMagic = []byte{0x7f, 'E', 'L', 'F'}

// isObject reports whether path is a regular file holding a relocatable
// ELF object: not a precompiled header, not LLVM bitcode (clang -flto,
// -emit-llvm), not /dev/null.
func isObject(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	var hdr [18]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return false
	}
	return bytes.Equal(hdr[:4], elfMagic) && hdr[16] == 1 && hdr[17] == 0
}

// pass runs the object pass on each object of paths; one it fails on is
// removed (it has patch sites but no table, so a build must not take it
// as made), and the error names it.
func (w *Wrapper) pass(paths []string) error {
	var objs []string
	for _, p := range paths {
		if isObject(p) {
			objs = append(objs, p)
		}
	}
	if len(objs) == 0 {
		return nil
	}
	var errs []error
	for _, r := range record.Files(objs, record.Options{}, 0) {
		if r.Err != nil {
			os.Remove(r.Path)
			errs = append(errs, fmt.Errorf("the object pass: %w (the object is removed)", r.Err))
			continue
		}
		for _, warn := range r.Object.Warnings {
			fmt.Fprintf(w.Stderr, "ftpatch cc: %s: warning: %s\n", r.Path, warn)
		}
	}
	return errors.Join(errs...)
}

// launchers are the commands that run a compiler named after them
// (ccache gcc ...): the compiler command is both.
var launchers = map[string]bool{"ccache": true, "sccache": true, "distcc": true, "icecc": true}

// SplitCompiler separates the compiler command from its arguments in
// `ftpatch cc [COMPILER] ARGS...`: the first argument is the compiler
// when it is not an option, a response file or a file the compiler
// reads by its suffix (a.c, a.o), and is a command found in PATH (or a
// path to one); a launcher (ccache, distcc) takes the next argument too.
// Otherwise the compiler is def.
func SplitCompiler(args, def []string) (compiler, rest []string) {
	if len(args) == 0 || args[0] == "" || strings.HasPrefix(args[0], "-") || strings.HasPrefix(args[0], "@") ||
		LooksLikeInput(args[0]) {
		return def, args
	}
	if _, err := exec.LookPath(args[0]); err != nil {
		return def, args
	}
	n := 1
	if launchers[filepath.Base(args[0])] && len(args) > 1 && !strings.HasPrefix(args[1], "-") && !LooksLikeInput(args[1]) {
		n = 2
	}
	return args[:n], args[n:]
}
