// Command ftpatch is the user's tool for ftpatch-instrumented programs:
// it lists a linked program's patch sites (and, as the project grows,
// enables tracing in them and reads the traces they record).
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"ftpatch/elfx"
	"ftpatch/sites"
)

func main() {
	if err := newRoot(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "ftpatch: %v\n", err)
		os.Exit(1)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "ftpatch",
		Short:         "Dynamic function tracing for ELF programs built with patch sites",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSites(stdout), newFlags(stdout), newRuntime(stdout), newReplay(stdout), newReport(stdout))
	return root
}

func newSites(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sites BIN",
		Short: "List the patch sites of a linked executable or shared object",
		Long: `sites reads the __mcount_loc table of a linked executable or shared object
(written by recordmcount, or by gcc -mrecord-mcount), resolves it as the
loader would (PIE relocations applied, load bias 0), checks that every
entry decodes to a call or NOP at an instruction boundary of a function,
and lists the sites: address, function(+offset), kind, length, state.
Entries in weak functions the linker discarded are counted and skipped.
A file without a table, built with -pg, has its function entries decoded.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := elfx.Open(args[0])
			if err != nil {
				return err
			}
			l, err := sites.FindLinked(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if asJSON {
				return sites.WriteLinkedJSON(stdout, l)
			}
			if len(l.Sites) > 0 && l.Sites[0].Discover == sites.FromDecode {
				fmt.Fprintln(stdout, "(found by decoding function entries: no __mcount_loc)")
			}
			return sites.WriteLinked(stdout, l)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
