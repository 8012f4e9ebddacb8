package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/instrument"
	"ftpatch/outfile"
	"ftpatch/prologue"
)

func newInstrument(stdout, stderr io.Writer) *cobra.Command {
	var lf listFlags
	var out string
	cmd := &cobra.Command{
		Use:   "instrument [--funcs LIST]... [--funcs-from REPORT]... -o OUT BIN [FUNC-GLOB...]",
		Short: "Write a copy of a program built without tracing flags, with a site in every function",
		Long: `instrument writes OUT, a copy of the linked executable or shared object
BIN in which every chosen function has a patch site, though BIN was built
with no tracing flag at all: each function's first instructions (after an
endbr64 or bti, which stay) move into a trampoline, rewritten for their
new place (pc-relative operands, branches, calls), behind an ordinary
disabled site; a jump to the trampoline takes their place. The
trampolines, their table (section __ftrt_prologue) and the program
header table go into one new loadable segment; each trampoline gets a
local symbol of its function's name, so that traces, debuggers and
profilers name it as the function. BIN itself is never changed.

OUT is then an ordinary file with sites: ftpatch sites, enable, disable
and verify work on it, and ftpatch record traces it (its runtime
preloaded, or linked). Untraced, it runs as BIN does, at the cost of one
direct jump per instrumented function.

Functions are chosen as by ftpatch enable (--funcs LIST, --funcs-from
REPORT, FUNC-GLOBs; every function when none is given). A function that
already has a compiler site keeps it; one that cannot be moved safely is
left alone: ftpatch sites --dynamic BIN says which and why. A last line
counts them.

Exit status: 0 written, 1 BIN cannot be instrumented (not ELF, already
instrumented, packed (UPX leaves no section headers: instrument the
unpacked file), signed (a signature appended, which a rewrite breaks), no
function that can have a site, no room for a segment),
2 a usage error or a file that cannot be read or written.`,
		Example: `  ftpatch instrument -o sort.traced /usr/bin/sort
  ftpatch record -- ./sort.traced -n numbers.txt
  ftpatch instrument -o prog.i ./prog 'parse_*' '!parse_debug'`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageHint(cmd, fmt.Errorf("instrument needs -o OUT: it never changes BIN"))
			}
			list, inputs, err := lf.list(args[1:])
			if err != nil {
				return usage(err)
			}
			limitMemory(args[0])
			o, err := outfile.Plan(args[0], out)
			if err != nil {
				return err
			}
			if o.InPlace {
				return usageHint(cmd, fmt.Errorf("-o %s names BIN itself: instrument writes a copy", out))
			}
			f, err := elfx.Open(o.In)
			if err != nil {
				return fileError(wrapperError("instrument", args[0], err, false))
			}
			if err := instrument.Check(f); err != nil {
				return err
			}
			t, err := prologue.Find(f)
			if err != nil {
				return err
			}
			var choose func(*prologue.Func) bool
			if list != nil {
				names := make([]string, len(t.Funcs))
				for i := range t.Funcs {
					names[i] = t.Funcs[i].Name
				}
				sel := list.SelectAlso(names, funclist.Demangled(names))
				if sel.Count == 0 {
					return fmt.Errorf("%s: no function matches %s", args[0], inputs)
				}
				byAddr := map[uint64]bool{}
				for i, c := range sel.Chosen {
					if c {
						byAddr[t.Funcs[i].Addr] = true
					}
				}
				choose = func(fn *prologue.Func) bool { return byAddr[fn.Addr] }
			}
			b, st, err := instrument.Rewrite(f, t, choose)
			if err != nil {
				return err
			}
			if err := o.Write(func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %d functions instrumented, %d kept their compiler site, %d left alone (ftpatch sites --dynamic %s says why); %d bytes added\n",
				out, st.Made, st.Compiler, st.Skipped, args[0], st.Bytes)
			return nil
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the instrumented copy to `OUT` (required)")
	return cmd
}
