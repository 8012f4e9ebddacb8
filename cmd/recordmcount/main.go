// Command recordmcount adds a __mcount_loc table listing every
// function-entry patch site to relocatable ELF objects, so a program linked
// from them can have its sites found and patched by the ftpatch runtime.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"ftpatch/internal/cmddoc"
	"ftpatch/internal/version"
	"ftpatch/record"
)

type options struct {
	record.Options
	out     string
	json    bool
	jobs    int
	verbose bool
}

func main() {
	// A short-lived pass over files held whole in memory: collecting no
	// garbage until the heap nears 1 GiB is worth more than the memory it
	// keeps (about 3x the input being processed); past the limit the
	// collector runs as usual.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	if err := newCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		// run reports each failure itself; what reaches here unreported
		// is a usage error from the flag or argument parser.
		if !errors.Is(err, errReported) {
			fmt.Fprintf(os.Stderr, "recordmcount: %v\nRun 'recordmcount --help' for usage.\n", err)
		}
		os.Exit(1)
	}
}

func newCommand(stdout, stderr io.Writer) *cobra.Command {
	var o options
	var gen cmddoc.Gen
	ver := version.Get()
	cmd := &cobra.Command{
		Use:   "recordmcount [flags] FILE.o...",
		Short: "Record every function-entry patch site of ELF objects in __mcount_loc",
		Long: `recordmcount reads relocatable ELF objects (x86-64 or arm64) compiled with
  -pg -mfentry          (x86-64; PIE or not, with or without -fcf-protection)
  -pg                   (x86-64 mcount after the prologue; arm64 bl _mcount)
  -fpatchable-function-entry=N[,M]   (x86-64 N-M >= 5; arm64 =2 or =4,2)
finds every function-entry patch site, checks each one by decoding it, and
rewrites each object in place with a __mcount_loc table the linker turns
into __start___mcount_loc..__stop___mcount_loc for the ftpatch runtime.

Objects that already carry __mcount_loc (from an earlier run, or from
gcc -mrecord-mcount) are left as they are. Files are processed in
parallel; each is replaced atomically, and a file that fails is left
byte-for-byte unchanged.

Writing, as ftpatch enable writes (see its --help): a new file beside the
object, synced, renamed over it, after checking the object did not change
since it was read. The object keeps its mode, owner, group and extended
attributes; given as a symbolic link, the file it names is rewritten and
the link stays, except a link the kernel's protected_symlinks rule would
not follow (another user's link in a sticky world-writable directory such
as /tmp). An object with other hard links, a write-protected one, one in a
directory the user cannot write or whose owner the user cannot give back
is refused (exit 1, nothing written): use -o OUT. With -o, a new OUT gets
the object's permission bits without setuid or setgid; an existing OUT is
replaced by the same rules, keeping its own. Anything that is not a
regular file (a directory, a device, a FIFO) is refused at once.`,
		Example: `  cc -O2 -pg -mfentry -c a.c b.c && recordmcount a.o b.o
  recordmcount --nop -o traced.o plain.o
  recordmcount --list --json *.o`,
		Args: func(cmd *cobra.Command, args []string) error {
			if gen.Requested() {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		Version:       ver.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if gen.Requested() {
				return gen.Write(cmd)
			}
			return run(o, args, stdout, stderr)
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	// --version: the version, the revision built from and the toolchain,
	// as ftpatch --version begins (a template of no actions: printed as
	// it is).
	cmd.SetVersionTemplate(ver.String("recordmcount"))
	fl := cmd.Flags()
	fl.BoolVar(&o.Nop, "nop", false, "also turn every call site into a NOP of its size (relocation retyped to R_*_NONE)")
	fl.BoolVarP(&o.List, "list", "l", false, "list the sites (object, section, offset, function, kind) without writing")
	fl.BoolVar(&o.json, "json", false, "with --list: print JSON")
	fl.StringVarP(&o.out, "output", "o", "", "write the result to `OUT` instead of in place (one input only)")
	fl.IntVarP(&o.jobs, "jobs", "j", 0, "files processed at once (default: 4 per CPU, as most of the time is waiting for fsync)")
	fl.BoolVarP(&o.verbose, "verbose", "v", false, "print a line per file, and notes on things not taken as sites")
	fl.Bool("version", false, "print the version, the revision built from and the Go toolchain")
	gen.Register(fl, "recordmcount "+ver.Version)
	return cmd
}

func run(o options, args []string, stdout, stderr io.Writer) error {
	if o.out != "" && len(args) != 1 {
		fmt.Fprintln(stderr, "recordmcount: -o takes exactly one input file")
		return errReported
	}
	if o.json && !o.List {
		fmt.Fprintln(stderr, "recordmcount: --json goes with --list")
		return errReported
	}
	var results []record.Result
	if o.out != "" {
		results = []record.Result{record.File(args[0], o.out, o.Options)}
	} else {
		results = record.Files(args, o.Options, o.jobs)
	}
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stderr, "recordmcount: %v\n", r.Err)
			continue
		}
		for _, w := range r.Object.Warnings {
			fmt.Fprintf(stderr, "recordmcount: %s: warning: %s\n", r.Path, w)
		}
		if o.verbose {
			for _, n := range r.Object.Notes {
				fmt.Fprintf(stderr, "recordmcount: %s: note: %s\n", r.Path, n)
			}
		}
		if !o.List && (o.verbose || (!r.Changed && len(args) == 1)) {
			fmt.Fprintf(stderr, "recordmcount: %s\n", r.Summary())
		}
	}
	if o.List {
		var err error
		if o.json {
			err = record.WriteJSON(stdout, results)
		} else {
			err = record.WriteList(stdout, results)
		}
		if err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files failed: %w", failed, len(results), errReported)
	}
	return nil
}

// errReported marks an error whose message run has already printed.
var errReported = errors.New("reported")
