package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"ftpatch/ccwrap"
)

// newCC is ftpatch cc (name "cc") or ftpatch c++ (name "c++"): the
// compiler wrapper.
func newCC(name string, stderr io.Writer) *cobra.Command {
	env, def, lang := "FTPATCH_CC", "cc", "C"
	if name == "c++" {
		env, def, lang = "FTPATCH_CXX", "c++", "C++"
	}
	cmd := &cobra.Command{
		Use:   name + " [COMPILER] ARGS...",
		Short: "Run the " + lang + " compiler so that what it builds can be traced (for any build system)",
		Long: name + ` runs a ` + lang + ` compiler command so that the program or library it
builds has patch sites, its site table and the runtime, with nothing else
changed: a build system that calls it as its compiler builds a program
that ftpatch record traces.

  CC="ftpatch cc" CXX="ftpatch c++" ./configure && make
  CC="ftpatch cc clang" cmake -S . -B build && make -C build
  cmake -DCMAKE_C_COMPILER_LAUNCHER="ftpatch;cc" -DCMAKE_C_LINKER_LAUNCHER="ftpatch;cc" \
        -DCMAKE_CXX_COMPILER_LAUNCHER="ftpatch;c++" -DCMAKE_CXX_LINKER_LAUNCHER="ftpatch;c++" ...

COMPILER is the compiler to run, a name (gcc, clang, g++, clang++-14,
aarch64-linux-gnu-gcc) or a path, optionally after a launcher (ccache
gcc); without one, $` + env + ` (a command, split at spaces) or ` + def + `. The
first argument is taken for COMPILER unless it is an option, a response
file or a file named as a source or object (a.c, a.o), or is no command
in PATH. Every other argument is the compiler's, read as its driver reads
them, response files (@file) included: read as gcc reads them, nested
ones too (an @file that cannot be opened stays an argument; /dev/zero is
empty), a directory or a FIFO named one an error, with at most 2000 @
arguments (gcc's bound), 64 MiB of response files and a million
arguments in all.

What it does with each command:

  compile (-c): the compile flags ftpatch flags --cflags gives for the
      compiler's target (-dumpmachine: -pg -mfentry on x86-64) are added
      before the command's own, the directory of ftrace.h (the runtime's
      API) with -idirafter, searched after the command's own and the
      system's, then the object pass (recordmcount's)
      runs on every object the compiler wrote: -o's, or each source's
      default .o in the working directory for -c of several sources. A
      dependency file (-MD, -MMD, -MF) is the compiler's, untouched. A
      precompiled header gets the flags and no pass.
  link: the runtime is added after the command's own arguments (the
      flags of ftpatch flags --libs, its archive built into ~/.cache on
      first use with the C compiler beside COMPILER, and used only when
      no other user could have changed it); with -shared, the
      module stub instead (ftpatch flags --libs --shared); with -r (a
      partial link), or for a program linked -nostdlib, which has no C
      library for the runtime, nothing.
  compile and link at once (cc a.c b.c -o prog): each source is
      compiled apart, as for -c, into a temporary directory (the options
      that concern the link alone left out), its object passed, then the
      objects are linked in the sources' places as above and removed. A
      dependency file asked for with -MD or -MMD and no -MF is named for
      the source (a.d, target a.o) in the working directory. Files named
      after the object (-save-temps, --coverage, -gsplit-dwarf) would be
      made in the temporary directory, and a note says so: compile with
      -c and link apart to keep them.
  anything else runs unchanged, its exit status and output the
      compiler's: queries (--version, -v, -dumpmachine, -print-*,
      --help), preprocessing (-E, -M, -MM), -S, -fsyntax-only, -###,
      a compile of assembler sources (.s, .S) only, a command with no
      input file.

The command's own options stay as given, with two exceptions in what it
compiles. -flto (and the other link-time optimisation options) is
dropped, from compiles and links alike: an LTO build generates its code
at the link, out of the object pass's reach, and gcc does not carry -pg
to that step, so the program would have no site table; the build gets
ordinary objects instead, optimised per file. -fomit-frame-pointer is
dropped where -pg is added, as gcc refuses the two together (-O2's
implied one stays; clang accepts both).

With CMake, wrap the C and the C++ compiler alike: CMake learns each
compiler's implicit libraries from a link it makes, the runtime's
archive among them, and adds one language's to a target linked by the
other's driver.

The object pass rewrites an object atomically; when it fails on one (an
object for a target ftpatch does not trace, -m32), the object is
removed, as a half-made one, and the command fails (exit 1) with the
error. A compile that fails leaves what the compiler left, every object
it wrote passed. A command that would write over one of its inputs or
response files (-o, a.out, an object it compiles, by any name: a link,
a hard link, another path) is refused before anything runs, as gcc
refuses -o naming an input. Exit status: the compiler's (a compiler killed by a
signal: ftpatch is killed by the same); 1 when the wrapper fails.
Configure scripts' probes go through it like any compile and link: their
test programs link the runtime and run untraced.

With no argument, or only --help or -h, this help (the compiler's own:
ftpatch ` + name + ` gcc --help).`,
		Example: `  ftpatch ` + name + ` gcc -O2 -c a.c -o a.o        # a.o with its site table
  ftpatch ` + name + ` gcc -O2 a.o b.c -o prog          # b.c compiled apart, the runtime linked
  ftpatch ` + name + ` clang -shared -fPIC lib.c -o libx.so  # a shared object with the module stub
  ftpatch record ./prog`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || (len(args) == 1 && (args[0] == "--help" || args[0] == "-h")) {
				return cmd.Help()
			}
			dflt := strings.Fields(os.Getenv(env))
			if len(dflt) == 0 {
				dflt = []string{def}
			}
			compiler, rest := ccwrap.SplitCompiler(args, dflt)
			w := &ccwrap.Wrapper{Compiler: compiler, Stderr: stderr}
			st, err := w.Run(context.Background(), rest)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return exitAs(st)
		},
	}
	return cmd
}
