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
		f, err := os.Open(p)
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
// reading it is trouble running the command (exit 2); anything found in
// its contents is a problem with the file (exit 1).
func fileError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && !errors.Is(err, patch.ErrChanged) {
		return &exitError{code: exitUsage, err: err}
	}
	return err
}

func newEnable(stdout, stderr io.Writer) *cobra.Command {
	var lf listFlags
	var tracer, out string
	cmd := &cobra.Command{
		Use:   "enable [--funcs LIST] [--funcs-from REPORT] [--tracer T] [-o OUT] BIN [FUNC-GLOB...]",
		Short: "Bake tracing of chosen functions into a linked executable or shared object",
		Long: `enable patches a linked executable or shared object (built with patch sites
and the runtime linked: $(ftpatch flags --cflags), recordmcount,
$(ftpatch flags --libs)) so that it traces the chosen functions with no
environment set: their sites become calls into the runtime and every other
site a NOP, and the runtime's config record (section .ftrt_config) says so.
At start the runtime then only checks the sites and starts the tracer; no
code page is made writable.

Functions come from LIST files (one glob per line, !glob excludes, #
comments), from the FUNCTION column of a previous ftpatch report
(--funcs-from), and from FUNC-GLOBs on the command line, all merged: a
function is enabled when it matches an include glob and no exclude. What
was enabled before is replaced.

FTRACE or FTRACE_FILTER set when the program runs still win (the runtime
then patches at load time as for any binary); FTRACE_OUT, FTRACE_DEPTH and
FTRACE_THRESH configure the baked-in tracer.

BIN is rewritten in place (atomically, keeping its mode), or OUT is written
and BIN left untouched. A binary already enabled with the same list is not
written at all.
Exit status: 0 done, 1 a problem with BIN or the list (nothing is
written), 2 a usage error or a file that cannot be read.`,
		Example: `  cat > hot.txt <<EOF
  # the parser, without its whitespace skipping
  parse_*
  !parse_space
  EOF
  ftpatch enable --funcs hot.txt --tracer function_graph ./prog
  ./prog && ftpatch report           # traces parse_* with nothing set

  ftpatch report > last.txt && ftpatch enable --funcs-from last.txt -o prog.traced ./prog
  ftpatch enable ./prog main 'lex_*'`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := patch.ParseTracer(tracer)
			if err != nil {
				return usage(fmt.Errorf("--tracer: %w", err))
			}
			list, inputs, err := lf.list(args[1:])
			if err != nil {
				return fileError(err)
			}
			if list == nil {
				return usage(errors.New("enable: name the functions: --funcs LIST, --funcs-from REPORT or FUNC-GLOB arguments"))
			}
			return runPatch(stdout, stderr, patch.Options{Path: args[0], Out: out,
				Request: patch.Request{Op: patch.Enable, Tracer: t, List: list, Inputs: inputs}})
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&tracer, "tracer", "function", "the `TRACER` enabled sites feed: function, function_graph or nop")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the patched file to `OUT` and leave BIN unchanged")
	return cmd
}

func newDisable(stdout, stderr io.Writer) *cobra.Command {
	var lf listFlags
	var out string
	cmd := &cobra.Command{
		Use:   "disable [--funcs LIST] [--funcs-from REPORT] [-o OUT] BIN [FUNC-GLOB...]",
		Short: "Turn baked-in tracing off: every site (or the listed functions' sites) a NOP",
		Long: `disable undoes ftpatch enable. With no functions named, every site of BIN
becomes a NOP and the config record says nothing is traced: the program
runs untraced, with no code written at start, unless FTRACE is set. With
functions named (as for enable), only their sites become NOPs; the
others stay as they are.

BIN is rewritten in place (atomically, keeping its mode), or OUT is written
and BIN left untouched; a file already as asked is not written.
Exit status: 0 done, 1 a problem with BIN or the list (nothing is
written), 2 a usage error or a file that cannot be read.`,
		Example: `  ftpatch disable ./prog                  # nothing traced any more
  ftpatch disable ./prog 'parse_space'    # one function less`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
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
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the patched file to `OUT` and leave BIN unchanged")
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

// runPatch runs one enable or disable and reports what it did.
func runPatch(stdout, stderr io.Writer, o patch.Options) error {
	limitMemory(o.Path)
	bar := progress.ForTerminal(os.Stderr, barMin)
	o.Progress = bar.Update
	res, err := patch.Run(o)
	bar.Done()
	if res != nil && res.Plan != nil {
		for _, u := range res.Plan.Unmatched {
			if err == nil { // with an error, they are its message
				fmt.Fprintf(stderr, "ftpatch: warning: %s\n", u)
			}
		}
	}
	if err != nil {
		return fileError(err)
	}
	p, c := res.Plan, res.Plan.Config
	what := "no site calls the runtime"
	switch {
	case c.Enabled > 0 && o.Request.Op == patch.Disable:
		what = fmt.Sprintf("%s still calling the %s tracer", count(int(c.Enabled), "site"), c.Tracer)
	case c.Enabled > 0:
		what = fmt.Sprintf("%s in %s calling the %s tracer", count(int(c.Enabled), "site"), count(p.Funcs, "function"), c.Tracer)
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

// count writes n things, in the singular for one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
