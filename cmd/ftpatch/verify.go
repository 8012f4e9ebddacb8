package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"ftpatch/elfx"
	"ftpatch/patch"
)

func newVerify(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "verify BIN",
		Short: "Check a linked file's sites, runtime and config record; exit status for build systems",
		Long: `verify checks a linked executable or shared object, and changes nothing:

  - the ftpatch runtime is linked, with its config record and trampolines;
  - every site in the table decodes to what the record says: after
    ftpatch enable or disable, a NOP or a call to the trampoline of its
    kind and the recorded tracer; as linked, the compiler's call or NOPs;
  - the record's counts match the table, and the executable segments,
    sites masked, are what they were when ftpatch wrote the file (nothing
    else in the text changed).

A good file prints one line on standard output, "BIN: ok: ..." with the
number of sites and what they call. Each problem prints as "BIN: problem"
on standard output, one per line, and the count ("N problems found") on
standard error.

Exit status:
  0  no problem: the file is as ftpatch enable or disable left it, or as
     linked (its sites the compiler's)
  1  problems found, or BIN is not a file ftpatch can check: not ELF
     (a libtool wrapper script is named as such, with the program it
     runs), malformed, stripped, no runtime linked, no patch sites
  2  a usage error, or BIN cannot be opened or read (missing, a
     directory, no permission)`,
		Example: `  ftpatch enable --funcs hot.txt ./prog && ftpatch verify ./prog

  # in a build, after the last step that writes the program
  ftpatch verify ./prog || exit 1
  ftpatch verify ./prog >/dev/null 2>&1; echo $?   # the status alone`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			limitMemory(path)
			f, err := elfx.Open(path)
			if err != nil {
				return fileError(wrapperError("verify", path, err, false))
			}
			b, err := patch.Load(f, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			r := b.Verify()
			for _, p := range r.Problems {
				fmt.Fprintf(stdout, "%s: %s\n", path, p)
			}
			if !r.OK() {
				n := "problems"
				if len(r.Problems) == 1 {
					n = "problem"
				}
				return fmt.Errorf("%s: %d %s found", path, len(r.Problems), n)
			}
			c := r.Config
			switch {
			case !c.Patched():
				_, err = fmt.Fprintf(stdout, "%s: ok: %d sites as linked; the runtime sets them at load time (FTRACE)\n", path, r.Sites)
			case c.Enabled == 0:
				_, err = fmt.Fprintf(stdout, "%s: ok: %d sites, all NOPs; text unchanged since ftpatch wrote it\n", path, r.Sites)
			default:
				into := ""
				if c.TraceDir != "" {
					into = " into " + c.TraceDir
				}
				_, err = fmt.Fprintf(stdout, "%s: ok: %d sites, %d call the %s tracer%s; text unchanged since ftpatch wrote it\n", path, r.Sites, r.Enabled, c.Tracer, into)
			}
			return err
		},
	}
}
