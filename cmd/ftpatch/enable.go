package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"ftpatch/funclist"
	"ftpatch/infile"
	"ftpatch/internal/escape"
	"ftpatch/outfile"
	"ftpatch/patch"
	"ftpatch/progress"
)

// barMin is the number of sites above which a terminal gets a progress
// bar: below it the command ends before a bar would be read.
const barMin = 5000

// listFlags are the ways enable and disable take functions.
type listFlags struct {
	files, reports []string
}

func (l *listFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&l.files, "funcs", nil, "a `LIST` file: one glob per line, !glob excludes, # comments (repeatable)")
	cmd.Flags().StringArrayVar(&l.reports, "funcs-from", nil, "a `REPORT` written by ftpatch report: its FUNCTION column (repeatable)")
}

// list merges the list files, reports and command-line globs into one
// list; nil when there are none. inputs names them for messages.
func (l *listFlags) list(globs []string) (list *funclist.List, inputs string, err error) {
	if len(l.files)+len(l.reports)+len(globs) == 0 {
		return nil, "", nil
	}
	list = &funclist.List{}
	var names []string
	for _, p := range l.files {
		one, err := funclist.ParseFile(p)
		if err != nil {
			return nil, "", err
		}
		list.Merge(one)
		names = append(names, p)
	}
	for _, p := range l.reports {
		f, _, err := infile.Open(p)
		if err != nil {
			return nil, "", err
		}
		one, err := funclist.ParseReport(p, f)
		f.Close()
		if err != nil {
			return nil, "", err
		}
		list.Merge(one)
		names = append(names, p)
	}
	for i, g := range globs {
		if err := list.Add(g, fmt.Sprintf("argument %q", g)); err != nil {
			return nil, "", err
		}
		if i == 0 {
			names = append(names, "the command line")
		}
	}
	return list, strings.Join(names, ", "), nil
}

// fileError sorts an error about BIN: one the system gave opening or
// reading it, or a BIN that is no file to read (a directory, a device, a
// FIFO: *infile.NotRegularError), is trouble running the command (exit
// 2); anything found in its contents is a problem with the file (exit 1).
func fileError(err error) error {
	var pe *fs.PathError
	var nr *infile.NotRegularError
	if (errors.As(err, &pe) && !errors.Is(err, outfile.ErrChanged)) || errors.As(err, &nr) {
		return &exitError{code: exitUsage, err: err}
	}
	return err
}

// writingHelp is how enable and disable write, for their --help.
const writingHelp = `Writing. Without -o, BIN is replaced atomically (a new file written beside
it, synced, renamed over it) and keeps its mode (setuid and setgid
included), owner, group and extended attributes (ACLs, capabilities); given
as a symbolic link, the file it names is replaced and the link stays. A
file already as asked is not written at all (same inode, same mtime).
BIN is refused, with exit status 1 and nothing written, when:
  - it is a symbolic link the kernel's protected_symlinks rule would not
    follow: one in a sticky, world-writable directory (/tmp) owned
    neither by the user running ftpatch nor by the directory's owner
    (another user may have planted it there). Name the file it points to;
  - it has other hard links: the rename would leave the other names with
    the old program. Use -o OUT, or give it a copy of its own first:
    cp BIN BIN.new && mv BIN.new BIN
  - the user running ftpatch cannot write it (write-protected), or
    cannot write its directory;
  - its owner or attributes cannot be given to the new file (ftpatch run
    by another user than its owner: run as the owner or as root).
With -o OUT, BIN is only read and OUT is always written, even when BIN is
already as asked. A new OUT gets BIN's permission bits, without setuid or
setgid, and belongs to whoever runs ftpatch. An existing OUT is replaced
under the rules above (a symbolic link followed where the kernel would
follow it, a dangling one refused;
its own mode, owner and group kept; other hard links refused); an OUT
that is BIN itself means in place.`

// exitHelp are the exit statuses of enable and disable, for their --help.
const exitHelp = `Exit status: 0 done (also when nothing needed writing), 1 a problem with
BIN, OUT or the list (nothing is written), 2 a usage error or a file that
cannot be read.`

func newEnable(stdout, stderr io.Writer) *cobra.Command {
	var lf listFlags
	var tracer, out, traceDir string
	var ctl, libcall bool
	cmd := &cobra.Command{
		Use:   "enable [--funcs LIST]... [--funcs-from REPORT]... [--tracer TRACER] [--trace-dir DIR] [--ctl] [--libcall] [-o OUT] BIN [FUNC-GLOB...]",
		Short: "Bake tracing of chosen functions into a linked executable or shared object",
		Long: `enable patches a linked executable or shared object so that it traces the
chosen functions with no environment set: their sites become calls into
the runtime, every other site a NOP, and the runtime's config record
(section .ftrt_config) says so. At start the runtime then only checks the
sites and starts the tracer; no code page is made writable. BIN needs
patch sites, the runtime and its symbol table (patch before stripping):
compile with $(ftpatch flags --cflags), run recordmcount on the objects
(without it, the -pg sites are found by decoding function entries), link
with $(ftpatch flags --libs). ftpatch disable undoes enable. A libtool
wrapper script given as BIN (what a libtool build leaves where the
program is expected) is refused, naming the program it runs
(.libs/NAME, or .libs/lt-NAME): enable that.

Functions come from LIST files (one glob per line, !glob excludes, #
comments), from the FUNCTION column of a previous ftpatch report
(--funcs-from), and from FUNC-GLOBs on the command line (quote them from
the shell), all merged: a function is enabled when its symbol name
matches an include glob and no exclude, as in FTRACE_FILTER. Globs use
* ? [a-z] [!a-z]. What was enabled before is replaced, not added to. A
glob matching no function is a warning when others match, an error with
suggestions when none do. Where such a glob matches functions of a
shared object BIN links (a DT_NEEDED found as the dynamic loader finds
it: DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, ld.so.cache, the default
directories), a line after names the object and the command that
enables them there, or says that the object was not built for tracing.

Tracers (--tracer): function records every call of the chosen functions;
function_graph records calls and returns, with durations; nop makes the
sites call an empty stub and records nothing, not even a trace directory
(the cost of the mechanism alone). The program writes its trace to
./ftrace.data when it runs, or to the absolute DIR that --trace-dir
records (FTRACE_OUT sets another directory; FTRACE_DEPTH and
FTRACE_THRESH configure function_graph). FTRACE or FTRACE_FILTER set when
it runs win over what is baked in (the runtime then patches at load time,
as for any binary).

A setuid or setgid program (or one with file capabilities) ignores every
FTRACE* variable and writes a trace only to the DIR --trace-dir records,
and only when, at start, every directory on the way to it is reached
without a symbolic link, is owned by root or the effective user, and is
not writable by group or others (a sticky one such as /tmp excepted but
for DIR's own parent). Without --trace-dir it traces nothing and writes
nothing. DIR is made as FTRACE_OUT's is: a finished run's moved aside to
DIR.old, private to its owner (0700).

--ctl records that the program listens for ftpatch ctl, as with
FTRACE_CTL=1 (FTRACE_CTL=0 when it runs says not to; a secure-execution
process never listens): its tracing can then be changed while it runs.

--libcall makes the list choose among the functions BIN calls in shared
libraries too (through its PLT or GOT: printf, malloc...), and records
those chosen: when it runs, their calls are traced where BIN makes them,
as with FTRACE_LIBCALL=1 (see ftpatch record). A glob matching only
library functions is then no warning. The names chosen must fit the
config record (1023 bytes, commas between): a longer choice is refused.
ftpatch disable drops the library functions its list names (all of
them with no list).

` + writingHelp + `

` + exitHelp,
		Example: `  cat > hot.txt <<EOF
  # the parser, without its whitespace skipping
  parse_*
  !parse_space
  EOF
  ftpatch enable --funcs hot.txt --tracer function_graph ./prog
  ./prog && ftpatch report           # traces parse_* with nothing set

  # trace again what the last trace saw, into a copy
  ftpatch report > last.txt && ftpatch enable --funcs-from last.txt -o prog.traced ./prog

  ftpatch enable ./prog main 'lex_*'  # globs on the command line
  ftpatch enable --libcall ./prog main malloc free   # and two library functions
  ftpatch enable --tracer nop ./prog '*' && time ./prog   # the cost of every site called`,
		Args:                  usageArgs(cobra.MinimumNArgs(1)),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := patch.ParseTracer(tracer)
			if err != nil {
				return usage(fmt.Errorf("--tracer: %w", err))
			}
			if traceDir != "" {
				if err := patch.CheckTraceDir(traceDir); err != nil {
					return usage(fmt.Errorf("--trace-dir: %w", err))
				}
			}
			list, inputs, err := lf.list(args[1:])
			if err != nil {
				return fileError(err)
			}
			if list == nil {
				return usage(errors.New("enable: name the functions: --funcs LIST, --funcs-from REPORT or FUNC-GLOB arguments"))
			}
			return runPatch(stdout, stderr, patch.Options{Path: args[0], Out: out,
				Request: patch.Request{Op: patch.Enable, Tracer: t, List: list, Inputs: inputs, TraceDir: traceDir, Ctl: ctl, Libcall: libcall}})
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&tracer, "tracer", patch.TracerFunction.String(), "the `TRACER` enabled sites call: function, function_graph or nop")
	cmd.Flags().StringVar(&traceDir, "trace-dir", "", "record `DIR`, an absolute path, as where the program traces (the only place a setuid program does)")
	cmd.Flags().BoolVar(&ctl, "ctl", false, "record that the program listens for ftpatch ctl, as with FTRACE_CTL=1")
	cmd.Flags().BoolVar(&libcall, "libcall", false, "the list chooses library functions too (printf, malloc...): their calls are traced where BIN makes them, as with FTRACE_LIBCALL=1")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the result to `OUT` (replaced atomically if it exists) and only read BIN")
	return cmd
}

func newDisable(stdout, stderr io.Writer) *cobra.Command {
	var lf listFlags
	var out string
	cmd := &cobra.Command{
		Use:   "disable [--funcs LIST]... [--funcs-from REPORT]... [-o OUT] BIN [FUNC-GLOB...]",
		Short: "Turn baked-in tracing off: every site (or the listed functions' sites) a NOP",
		Long: `disable undoes ftpatch enable. With no functions named, every site of BIN
becomes a NOP and the config record says nothing is traced: the program
runs untraced, with no code written at start, unless FTRACE or
FTRACE_FILTER is set when it runs. With functions named (as for enable:
--funcs, --funcs-from, FUNC-GLOBs), only their sites become NOPs; the
others, and the recorded tracer, stay as they are. A file as linked
(never enabled) can be disabled too: its sites become NOPs ahead of time.
A libtool wrapper script is refused as enable refuses it, and globs
matching only in a shared object BIN links are answered as enable
answers them.

` + writingHelp + `

` + exitHelp,
		Example: `  ftpatch disable ./prog                  # nothing traced any more
  ftpatch disable ./prog 'parse_space'    # one function less
  ftpatch disable -o prog.quiet ./prog    # an untraced copy; ./prog stays traced`,
		Args:                  usageArgs(cobra.MinimumNArgs(1)),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, inputs, err := lf.list(args[1:])
			if err != nil {
				return fileError(err)
			}
			return runPatch(stdout, stderr, patch.Options{Path: args[0], Out: out,
				Request: patch.Request{Op: patch.Disable, List: list, Inputs: inputs}})
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the result to `OUT` (replaced atomically if it exists) and only read BIN")
	return cmd
}

// limitMemory bounds the heap by the size of the file at path. What the
// patcher keeps live at its peak (the file, its symbols and sites while
// they are read) is about 4 times the file; Go's collector lets the heap
// grow to twice the live data before collecting, which puts peak memory
// near 9 times the file. A soft limit at 5 times (plus room for a small
// file's fixed costs) makes the collector run earlier instead: on a
// 200,000-function program, 6.6 times the file for the same CPU time
// (measured: bench/enable). A GOMEMLIMIT the user set wins.
func limitMemory(path string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if fi, err := os.Stat(path); err == nil {
		debug.SetMemoryLimit(5*fi.Size() + 16<<20)
	}
}

// runPatch runs one enable or disable and reports what it did. Globs
// that matched nothing are warned about, or are the error when nothing
// matched; where they match functions of a shared object the program
// links, a line after says so (patchHints).
func runPatch(stdout, stderr io.Writer, o patch.Options) error {
	limitMemory(o.Path)
	op := "enable"
	if o.Request.Op == patch.Disable {
		op = "disable"
	}
	bar := progress.ForTerminal(os.Stderr, barMin)
	o.Progress = bar.Update
	res, err := patch.Run(o)
	bar.Done()
	var hints []string
	if res != nil && res.Plan != nil && len(res.Plan.Unmatched) > 0 {
		var globs []funclist.Glob
		for _, u := range res.Plan.Unmatched {
			globs = append(globs, u.Glob)
			if err == nil { // with an error, they are its message
				fmt.Fprintf(stderr, "ftpatch: warning: %s\n", u)
			}
		}
		hints = patchHints(op, o.Path, globs)
	}
	if err != nil {
		err = fileError(wrapperError(op, o.Path, err, true))
		if len(hints) == 0 {
			return err
		}
		fmt.Fprintf(stderr, "ftpatch: %v\n", err)
		for _, h := range hints {
			fmt.Fprintf(stderr, "ftpatch: %s\n", h)
		}
		return &exitError{code: exitCode(err), err: errReported}
	}
	for _, h := range hints {
		fmt.Fprintf(stderr, "ftpatch: note: %s\n", h)
	}
	p, c := res.Plan, res.Plan.Config
	if n := len(p.OutOfReach); n > 0 {
		fmt.Fprintf(stderr, "ftpatch: warning: %s: %s (%s) too far from the runtime's trampolines for a call to reach (arm64's bl: ±128 MiB): left NOPs, so this file does not trace them; set FTRACE (and FTRACE_FILTER) when running it to trace them, through veneers the runtime maps near them\n",
			o.Path, count(n, "site"), names(p.OutOfReach, 5))
	}
	what := "no site calls the runtime"
	switch {
	case c.Enabled > 0 && o.Request.Op == patch.Disable:
		what = fmt.Sprintf("%s still calling the %s tracer", count(int(c.Enabled), "site"), c.Tracer)
	case c.Enabled > 0:
		what = fmt.Sprintf("%s in %s calling the %s tracer", count(int(c.Enabled), "site"), count(p.Funcs, "function"), c.Tracer)
	}
	if c.Flags&patch.FlagLibcall != 0 {
		libs := strings.Split(c.Libcalls, ",")
		what += fmt.Sprintf("; calls of %s traced (%s)", count(len(libs), "library function"), names(libs, 5))
	}
	if (c.Enabled > 0 || c.Flags&patch.FlagLibcall != 0) && c.TraceDir != "" {
		what += " into " + c.TraceDir
	}
	switch {
	case res.Written == "":
		_, err = fmt.Fprintf(stdout, "%s: unchanged, already as asked: %s\n", o.Path, what)
	case o.Out != "":
		_, err = fmt.Fprintf(stdout, "%s: %s; %d of %s rewritten, written to %s\n", o.Path, what, len(p.Writes), count(int(c.Sites), "site"), res.Written)
	default:
		_, err = fmt.Fprintf(stdout, "%s: %s; %d of %s rewritten\n", o.Path, what, len(p.Writes), count(int(c.Sites), "site"))
	}
	return err
}

// names lists the distinct names of ns (in order), the first max of
// them and how many more.
func names(ns []string, max int) string {
	var out []string
	more := 0
	for i, n := range ns {
		if i > 0 && n == ns[i-1] {
			continue
		}
		if len(out) == max {
			more++
			continue
		}
		out = append(out, escape.Text(n)) // the file's names
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(out, ", ")
}

// count writes n things, in the singular for one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
