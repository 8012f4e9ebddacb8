// Command ftpatch is the user's tool for ftpatch-instrumented programs:
// it lists a linked program's patch sites, bakes tracing of chosen
// functions into it (enable, disable) and checks the result (verify),
// builds the runtime, and reads the traces programs record.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"ftpatch/elfx"
	"ftpatch/internal/cmddoc"
	"ftpatch/internal/escape"
	"ftpatch/internal/version"
	"ftpatch/launch"
	"ftpatch/prologue"
	"ftpatch/sites"
)

func main() {
	err := newRoot(os.Stdout, os.Stderr).Execute()
	var ce *childExit
	if errors.As(err, &ce) {
		launch.Exit(ce.st) // record, live, cc: end as the program did
	}
	if err != nil {
		if !errors.Is(err, errReported) {
			// Escaped: an error may name what a file holds.
			fmt.Fprintf(os.Stderr, "ftpatch: %s\n", escape.Lines(err.Error()))
		}
		os.Exit(exitCode(err))
	}
}

// Exit statuses: 0 success; 1 a problem found in the input (a file, a
// list) or a failure; 2 the command was used wrongly or a file could not
// be read, so nothing was looked at. Build systems branch on these.
const (
	exitProblem = 1
	exitUsage   = 2
)

// An exitError carries an exit status other than exitProblem.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usage marks err as a usage error (exit status 2).
func usage(err error) error { return &exitError{code: exitUsage, err: err} }

// usageArgs makes an argument check's failure a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageHint(cmd, err)
		}
		return nil
	}
}

// usageHint makes err, a wrong use of cmd, a usage error that says where
// the command's help is: "(see ftpatch runtime build --help)".
func usageHint(cmd *cobra.Command, err error) error {
	return usage(fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath()))
}

// unknownCommand is the root's argument check: any argument is a command
// that does not exist (cobra's own check, with its suggestion).
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		err = fmt.Errorf("%w: did you mean %s?", err, strings.Join(s, " or "))
	}
	return err
}

// needProgram is the argument check of record and live: a program to
// run.
func needProgram(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return errors.New("no program to run")
	}
	return nil
}

// exitCode is the status err calls for.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitProblem
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var showVersion bool
	var gen cmddoc.Gen
	root := &cobra.Command{
		Use:   "ftpatch",
		Short: "Dynamic function tracing for ELF programs built with patch sites",
		Long: `ftpatch traces the functions of user-space ELF programs (x86-64 and arm64)
built with patch sites: a NOP or a call the compiler puts at the start of
each function, which the ftpatch runtime linked into the program turns
into a call to its tracer when tracing is on, and leaves a NOP otherwise.

Building a program for tracing: ftpatch cc (or c++) runs a compiler command
so that what it builds can be traced; or compile with ftpatch flags --cflags,
run recordmcount on the objects, and link with ftpatch flags --libs (or
pkg-config ftrt, installed by make install).

Running it traced: ftpatch record (or live) runs a program with tracing on
and writes a trace directory; ctl controls the tracing of a running program
that listens for it (FTRACE_CTL=1).

Reading a trace: replay, report, graph, info and dump.

Baking tracing into a linked file: sites lists its patch sites, enable and
disable rewrite them, verify checks the result.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          usageArgs(unknownCommand),
		// cobra's default, which its own check sets and SuggestionsFor
		// does not.
		SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case showVersion:
				_, err := io.WriteString(stdout, versionText())
				return err
			case gen.Requested():
				return gen.Write(cmd)
			}
			return cmd.Help()
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(usageHint)
	root.Flags().BoolVar(&showVersion, "version", false, "print the version, the revision built from, and the runtime and trace formats (as ftpatch version)")
	gen.Register(root.Flags(), "ftpatch "+version.Get().Version)
	root.AddCommand(newSites(stdout), newEnable(stdout, stderr), newDisable(stdout, stderr), newVerify(stdout),
		newFlags(stdout, stderr), newRuntime(stdout), newReplay(stdout), newReport(stdout),
		newDump(stdout), newGraph(stdout), newInfo(stdout),
		newRecord(stderr), newLive(stdout, stderr), newCtl(stdout, stderr), newCC("cc", stderr), newCC("c++", stderr),
		newVersion(stdout), newInstrument(stdout, stderr))
	return root
}

func newSites(stdout io.Writer) *cobra.Command {
	var asJSON, dynamic bool
	cmd := &cobra.Command{
		Use:   "sites BIN",
		Short: "List the patch sites of a linked executable or shared object",
		Long: `sites lists the patch sites of a linked executable or shared object,
and changes nothing. It reads the __mcount_loc table (written by
recordmcount, or by gcc -mrecord-mcount), resolves it as the loader would
(PIE relocations applied, load bias 0) and checks that every entry
decodes to a call or NOP at an instruction boundary of a function. A file
without a table, built with -pg, has its function entries decoded instead
(the listing then says so on its first line). The file needs its symbol
table: a stripped file is an error.

A libtool wrapper script (what a libtool build leaves where the program
is expected, when the program links a library of the same build: a shell
script that runs .libs/NAME, or .libs/lt-NAME it relinks) is named as
such, with the program to give instead.

One line per site, in address order:
  ADDRESS   the site's virtual address (as in the file: load bias 0)
  FUNCTION  the function holding it, +offset when not at its first byte
  KIND      how the compiler made it: fentry (-pg -mfentry: a call at
            entry), mcount (-pg: a call after the prologue), patchable
            (-fpatchable-function-entry: NOPs at entry), callops (arm64
            =4,2: NOPs at entry and an ops slot before the function),
            prologue (at the start of a trampoline ftpatch instrument
            made from the function's first instructions)
  LEN       the site's length in bytes
  STATE     what the site does when it runs:
              nop     one NOP, or the compiler's NOP padding
              hook    the compiler's call to __fentry__/mcount/_mcount
                      (the runtime turns it into a NOP at load)
              traced  a call into a runtime trampoline (ftrace_caller5,
                      ftrace_stub...), as ftpatch enable writes it
              direct  a call to any other function: a user trampoline
  TARGET    where a call leads (through a GOT slot or PLT stub: @got, @plt)
  SOURCE    file:line from the DWARF line table, empty without -g
A last line counts the sites by state, and the table entries skipped:
those in weak functions the linker discarded, empty and duplicate ones.

--json prints the same as one JSON object: arch, sites (address,
function, func_offset, section, kind, len, state, target, source,
found_in, ...) and the skipped counts (dead, zero, duplicates).

Exit status: 0 listed, 1 the file is not one with sites to list (not
ELF, a libtool wrapper script, malformed, stripped, no table and
nothing to decode), 2 a usage error or a file that cannot be read.

--dynamic lists every function instead, with the site it can have:
  ADDRESS   the function's address (load bias 0)
  SIZE      its size in bytes
  SITE      compiler (a site the compiler made, as above), prologue (one
            made from its first instructions: record -P at load, or
            ftpatch instrument after link), or - (none)
  FUNCTION  its name
  DETAIL    the compiler site's kind; the instructions a prologue site
            moves (and how: pc-relative, branch, conditional rewritten);
            or why the function is left alone: shorter than the jump, a
            branch in it targets the moved bytes or its start, an
            instruction that cannot be moved, a jump table may reach the
            moved bytes, bytes that do not decode, the entry point
A last line counts them and the reasons. The functions come from the
symbol table; in a stripped file, from its debug file (by build-id under
/usr/lib/debug) or else from .eh_frame (named from .dynsym where an
exported symbol starts there, sub_ADDRESS otherwise). --json prints one
JSON object (path, build_id, from, functions, counts, reasons).`,
		Example: `  ftpatch sites ./prog
  ftpatch sites --dynamic /usr/bin/sort | tail -1   # how much of it -P can trace
  ftpatch sites ./prog | grep traced         # what runs traced now
  ftpatch sites --json ./prog | jq -r '.sites[] | select(.state == "traced") | .function'`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			limitMemory(args[0])
			f, err := elfx.Open(args[0])
			if err != nil {
				return fileError(wrapperError("sites", args[0], err, false))
			}
			if dynamic {
				t, err := prologue.Find(f)
				if err != nil {
					return err
				}
				if asJSON {
					return prologue.WriteJSON(stdout, t)
				}
				return prologue.Write(stdout, t)
			}
			l, err := sites.FindLinked(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if err := sites.AddSources(f, l); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if asJSON {
				return sites.WriteLinkedJSON(stdout, l)
			}
			if len(l.Sites) > 0 && l.Sites[0].Origin == sites.FromDecode {
				fmt.Fprintln(stdout, "(found by decoding function entries: no __mcount_loc)")
			}
			return sites.WriteLinked(stdout, l)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of the table")
	cmd.Flags().BoolVar(&dynamic, "dynamic", false, "list every function with the site it can have: the compiler's, one made from its prologue, or none and why")
	return cmd
}
