package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"ftpatch/arch"
	"ftpatch/internal/version"
	ftrt "ftpatch/runtime"
)

// buildFlags are the flags shared by the commands that build the runtime.
type buildFlags struct {
	cc   string
	arch string
}

func (b *buildFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.cc, "cc", "", "C compiler command to build the runtime with (default cc; aarch64-linux-gnu-gcc for --arch arm64)")
	cmd.Flags().StringVar(&b.arch, "arch", "x86_64", "target architecture: x86_64 or arm64")
}

func (b *buildFlags) options() (ftrt.Options, error) {
	a, err := arch.Parse(b.arch)
	if err != nil {
		return ftrt.Options{}, err
	}
	return ftrt.Options{CC: strings.Fields(b.cc), Arch: a}, nil
}

func newFlags(stdout, stderr io.Writer) *cobra.Command {
	var bf buildFlags
	var cflags, libs, shared bool
	cmd := &cobra.Command{
		Use:   "flags [--cflags] [--libs] [--shared]",
		Short: "Print the compile and link flags for a traced program (like pkg-config)",
		Long: `flags prints the flags that give a program patch sites (--cflags) and that
link the ftpatch runtime into it (--libs); with neither, both. An installed
ftpatch (make install) names the runtime installed beside it, built at
install: PREFIX/lib/ftpatch/ARCH/libftrt.a and PREFIX/include/ftpatch, as
pkg-config --cflags --libs ftrt does (ftrt-arm64 for --arch arm64,
ftrt-module for --shared). Otherwise, or with --cc, or when the installed
one is another version's, --libs builds the runtime with the system C
compiler into a per-user cache on first use (keyed by ftpatch's runtime
version, the architecture and the compiler), so

  cc $(ftpatch flags --cflags) -c a.c b.c
  recordmcount a.o b.o
  cc a.o b.o $(ftpatch flags --libs) -o prog

needs nothing but ftpatch and a compiler. What is linked runs in every
program built, so the cache and the installed runtime are used only when
no other user could have changed them: their files and every directory
on the way are yours or root's and writable by no one else, and their
files are as built (their digests are recorded beside them).
Otherwise the runtime is built again (into a directory of its own, for
the one command, when the cache itself is not safe), and a note on
stderr says why.

The link flags also wrap the
program's calls of the exec functions (so a process writes its trace
buffer out before an exec discards it), of posix_spawn and posix_spawnp
(they and the exec functions pass the tracing settings on to a child
given an environment without them; FTRACE_INHERIT=0 says not to), of
backtrace (so a walk of the stack sees through function_graph's hooks),
and of sigaction, signal, sigprocmask and pthread_sigmask (a program that
calls the live API of ftrace.h keeps SIGTRAP for the sites being
changed: its own traps still reach its handler, and it cannot block it;
under the flight recorder the runtime stands in for the default action
of the fatal signals, and the program's own handlers stay the kernel's).

--cflags names the directory of ftrace.h, the runtime's API (enable and
disable functions while the program runs, change the tracer, pause and
resume recording): #include <ftrace.h>. So it builds the runtime too.

A shared object with sites links the module stub instead (--shared): one
runtime, the program's, serves the whole process, and each shared object
registers its own site table with it when it is loaded (at start or by
dlopen) and takes it back at dlclose:

  cc $(ftpatch flags --cflags --shared) -c lib.c
  recordmcount lib.o
  cc -shared lib.o $(ftpatch flags --libs --shared) -o libx.so

The program must be linked with --libs (which exports the runtime's
registration to shared objects); in a program without the runtime a
shared object with sites runs untraced.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := bf.options()
			if err != nil {
				return err
			}
			if !cflags && !libs {
				cflags, libs = true, true
			}
			o.Notes = stderr
			lib, err := ftrt.Find(context.Background(), o, installPrefix())
			if err != nil {
				return err
			}
			var out []string
			if cflags {
				out = append(out, ftrt.CFlags(o.Arch)...)
				if shared {
					out = append(out, "-fPIC")
				}
				out = append(out, "-I"+lib.Include)
			}
			if libs {
				if shared {
					out = append(out, ftrt.ModuleLinkFlags(lib.Archive)...)
				} else {
					out = append(out, ftrt.LinkFlags(lib.Archive)...)
				}
			}
			_, err = fmt.Fprintln(stdout, strings.Join(out, " "))
			return err
		},
	}
	cmd.Flags().BoolVar(&cflags, "cflags", false, "print the compile flags (with -I of ftrace.h's directory)")
	cmd.Flags().BoolVar(&libs, "libs", false, "print the link flags (of the installed runtime, or building it into the cache if needed)")
	cmd.Flags().BoolVar(&shared, "shared", false, "for a shared object: --cflags adds -fPIC, --libs links the module stub, not the runtime")
	bf.register(cmd)
	return cmd
}

func newRuntime(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "Build the ftpatch runtime (libftrt.a) from the sources inside this binary",
	}
	var bf buildFlags
	var dir string
	build := &cobra.Command{
		Use:   "build [-o DIR]",
		Short: "Build libftrt.a (and the module stub, libftrt-module.a) with the system C compiler",
		Long: `build compiles the runtime's C and assembly sources, which are embedded in
the ftpatch binary, with the system C compiler, and writes DIR/libftrt.a,
DIR/libftrt-module.a, the stub a shared object with sites links, and
DIR/libftrt.so, the runtime to preload into a program with sites linked
without it (atomically). Link the first two with the flags ftpatch flags
--libs (--shared) prints; ftpatch record preloads the third
(LD_PRELOAD=DIR/libftrt.so does it by hand).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := bf.options()
			if err != nil {
				return err
			}
			o.Dir = dir
			lib, err := ftrt.Build(context.Background(), o)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, lib)
			return err
		},
	}
	build.Flags().StringVarP(&dir, "output", "o", ".", "directory to write libftrt.a into")
	bf.register(build)
	cmd.AddCommand(build, newRuntimeInstall())
	return cmd
}

// newRuntimeInstall is make install's step that builds the runtime and
// lays it out under the prefix, with its pkg-config files: hidden, as
// make uninstall removes only what make install records.
func newRuntimeInstall() *cobra.Command {
	var bf buildFlags
	var prefix, destdir string
	cmd := &cobra.Command{
		Use:    "install --prefix PREFIX [--destdir DESTDIR] [--arch ARCH]",
		Short:  "Build the runtime and install it under PREFIX with its pkg-config files (make install)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := bf.options()
			if err != nil {
				return err
			}
			return ftrt.Install(context.Background(), o, prefix, destdir, version.Get().Version)
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "/usr/local", "the prefix the files name")
	cmd.Flags().StringVar(&destdir, "destdir", "", "a directory the files are written under (DESTDIR+PREFIX)")
	bf.register(cmd)
	return cmd
}
