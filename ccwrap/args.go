// Package ccwrap is ftpatch's compiler wrapper: it reads a C or C++
// compiler's command line as the compiler driver (gcc's or clang's) does,
// says what the command does, and runs it so that what it builds can be
// traced: each compile gets the compile flags of package runtime, each
// object the compiler writes goes through the object pass (package
// record), and each link of a program gets the runtime (of a shared
// object, the module stub). Everything else runs as it was given.
//
// Reading (Parse) is separate from running (Run): the first is a pure
// function of the arguments and the response files they name, which the
// tests check against real command lines of autotools, libtool and CMake
// builds.
package ccwrap

import (
	"fmt"
	"path/filepath"
	"strings"
)

// An Action is what a compiler command does, as the wrapper sees it.
type Action uint8

// The actions.
const (
	// Pass: the command writes no object and links nothing (a query
	// such as --version, -v or -print-*, preprocessing, -S, assembler
	// sources only, a syntax check): it runs unchanged.
	Pass Action = iota
	// Compile: -c, sources to objects (or precompiled headers).
	Compile
	// Link: a program or shared object from objects and libraries, and
	// from any source on the same line, compiled first.
	Link
)

var actionNames = [...]string{Pass: "pass", Compile: "compile", Link: "link"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// An Input is a file operand of the command.
type Input struct {
	Pos  int    // its index in Command.Args
	Path string // as given; "-" is standard input
	// Lang is gcc's name of its language (the -x value in force at its
	// position, or what its suffix says: "c", "c++", "assembler",
	// "c-header"...); "" for a linker input (an object, an archive, a
	// shared object, anything with a suffix no compiler claims).
	Lang string
	// X is the -x value in force at its position, "" for none: a source
	// compiled on its own keeps it.
	X string
}

// Source reports whether the input is compiled (not only linked).
func (in Input) Source() bool { return in.Lang != "" }

// Header reports whether the input is a header, which -c turns into a
// precompiled header rather than an object.
func (in Input) Header() bool { return strings.HasSuffix(in.Lang, "-header") }

// Assembler reports whether the input is assembly, which the compile
// flags do not change.
func (in Input) Assembler() bool { return strings.HasPrefix(in.Lang, "assembler") }

// A Command is a compiler command line as the driver reads it.
type Command struct {
	// Args are the arguments after the compiler, response files
	// (@file) expanded in place.
	Args []string
	// Response: some argument was a response file, so Args differ from
	// the command line given.
	Response bool
	// ResponseFiles are the response files read, as named.
	ResponseFiles []string
	Action        Action
	// Why says, for Pass, what made the command one.
	Why string
	// Inputs are the file operands, in order.
	Inputs []Input
	// Output is -o's file, "" when none was given.
	Output string
	// Shared: -shared, a shared object; Relocatable: -r, a partial
	// link; NoStdlib: -nostdlib, no C library or start files.
	Shared, Relocatable, NoStdlib bool
	// LTO: the command asks for link-time optimisation (-flto, not
	// undone by a later -fno-lto).
	LTO bool
	// Deps: -MD or -MMD, a dependency file written beside the compile;
	// DepFile: -MF names it.
	Deps, DepFile bool
	// Aux are the options (as given) that write files named after the
	// object (-save-temps, --coverage, -gsplit-dwarf...).
	Aux []string
}

// Sources are the inputs that are compiled.
func (c *Command) Sources() []Input {
	var out []Input
	for _, in := range c.Inputs {
		if in.Source() {
			out = append(out, in)
		}
	}
	return out
}

// Objects are the objects a Compile command writes, in the order of its
// sources: -o's file for one source, else each source's name with its
// suffix replaced by .o, in the working directory, as the driver names
// them. Headers (precompiled, not objects) have none; neither has a
// command the driver will refuse (-o with several sources).
func (c *Command) Objects() []string {
	srcs := c.Sources()
	if c.Action != Compile {
		return nil
	}
	if c.Output != "" {
		if len(srcs) != 1 || srcs[0].Header() {
			return nil
		}
		return []string{c.Output}
	}
	var out []string
	for _, s := range srcs {
		if !s.Header() {
			out = append(out, ObjectName(s.Path))
		}
	}
	return out
}

// ObjectName is the object the driver writes for source path under -c
// without -o: its base name, the last suffix replaced by .o.
func ObjectName(path string) string {
	base := filepath.Base(path)
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return base + ".o"
}

// langs maps a suffix to the language gcc compiles it as (gcc's
// default_compilers table, the languages this wrapper serves: C, C++,
// Objective-C, assembler, Fortran).
var langs = map[string]string{
	".c": "c", ".i": "cpp-output", ".h": "c-header",
	".cc": "c++", ".cp": "c++", ".cxx": "c++", ".cpp": "c++", ".CPP": "c++", ".c++": "c++", ".C": "c++",
	".ii": "c++-cpp-output",
	".hh": "c++-header", ".H": "c++-header", ".hp": "c++-header", ".hxx": "c++-header", ".hpp": "c++-header",
	".HPP": "c++-header", ".h++": "c++-header", ".tcc": "c++-header",
	".m": "objective-c", ".mi": "objective-c-cpp-output", ".mm": "objective-c++", ".M": "objective-c++",
	".mii": "objective-c++-cpp-output",
	".s":   "assembler", ".S": "assembler-with-cpp", ".sx": "assembler-with-cpp",
	".f": "f77", ".for": "f77", ".ftn": "f77", ".F": "f77-cpp-input", ".FOR": "f77-cpp-input",
	".fpp": "f77-cpp-input", ".FPP": "f77-cpp-input", ".FTN": "f77-cpp-input",
	".f90": "f95", ".f95": "f95", ".f03": "f95", ".f08": "f95",
	".F90": "f95-cpp-input", ".F95": "f95-cpp-input", ".F03": "f95-cpp-input", ".F08": "f95-cpp-input",
}

// langOf is the language of an input named path with -x x in force.
func langOf(path, x string) string {
	if x != "" && x != "none" {
		return x
	}
	return langs[filepath.Ext(path)]
}

// LooksLikeInput reports whether arg names a file the compiler reads by
// its suffix: a source, an object, an archive or a shared object. The
// command-line tool uses it to tell `ftpatch cc a.c` (no compiler named)
// from `ftpatch cc gcc a.c`.
func LooksLikeInput(arg string) bool {
	ext := filepath.Ext(arg)
	if _, ok := langs[ext]; ok {
		return true
	}
	switch ext {
	case ".o", ".a", ".so", ".lo", ".la", ".obj":
		return true
	}
	return strings.Contains(filepath.Base(arg), ".so.")
}

// separate are the options whose value is the next argument when they
// stand alone (gcc's and clang's): the value is not an input.
var separate = map[string]bool{
	"-o": true, "-x": true, "-I": true, "-D": true, "-U": true, "-include": true, "-imacros": true,
	"-idirafter": true, "-iprefix": true, "-iwithprefix": true, "-iwithprefixbefore": true, "-isystem": true,
	"-iquote": true, "-isysroot": true, "-imultilib": true, "-iframework": true, "-MF": true, "-MT": true,
	"-MQ": true, "-MJ": true, "-Xlinker": true, "-Xassembler": true, "-Xpreprocessor": true, "-Xclang": true,
	"-u": true, "-L": true, "-l": true, "-T": true, "-e": true, "-z": true, "-B": true, "-aux-info": true,
	"-dumpbase": true, "-dumpbase-ext": true, "-dumpdir": true, "--param": true, "-target": true,
	"-arch": true, "-specs": true, "--sysroot": true, "-wrapper": true, "-mllvm": true,
	"-Xopenmp-target": true, "-ivfsoverlay": true, "-resource-dir": true, "-gcc-toolchain": true,
	"-working-directory": true, "-A": true, "--output": true, "--include": true, "--entry": true,
	"-include-pch": true, "-isystem-after": true, "-Xanalyzer": true,
}

// queries are options that make the driver print something and compile
// nothing.
var queries = map[string]bool{
	"--version": true, "-dumpmachine": true, "-dumpversion": true, "-dumpfullversion": true,
	"-dumpspecs": true, "--help": true, "--target-help": true, "-qversion": true, "-###": true,
}

// aux are the options (or prefixes, ending in '-' or '=') that make the
// compiler write files named after the object, beside it.
var aux = []string{"-save-temps", "--coverage", "-ftest-coverage", "-fprofile-arcs", "-fprofile-generate",
	"-gsplit-dwarf", "-fstack-usage", "-fcallgraph-info", "-fdump-", "-dumpbase", "-dumpdir"}

// Parse reads a compiler command line (the arguments after the
// compiler) as the driver does; read gives a response file's contents,
// at most max bytes (ReadResponse), which are expanded in place as gcc
// expands them (response.go: one that is not a response file stays an
// argument, as gcc leaves it; an error wrapping ErrResponse fails the
// command).
func Parse(args []string, read func(name string, max int64) ([]byte, error)) (*Command, error) {
	exp, files, err := expand(args, read)
	if err != nil {
		return nil, err
	}
	c := &Command{Args: exp, Response: len(files) > 0, ResponseFiles: files}
	var (
		x                                  string
		compile, asm, pre, syntax, deponly bool
		query                              string
	)
	for i := 0; i < len(exp); i++ {
		a := exp[i]
		next := func() string {
			if i+1 < len(exp) {
				i++
				return exp[i]
			}
			return ""
		}
		if a == "-" || !strings.HasPrefix(a, "-") || a == "" {
			c.Inputs = append(c.Inputs, Input{Pos: i, Path: a, Lang: langOf(a, x), X: x})
			continue
		}
		switch {
		case a == "-c":
			compile = true
		case a == "-S":
			asm = true
		case a == "-E":
			pre = true
		case a == "-M" || a == "-MM":
			deponly = true
		case a == "-fsyntax-only":
			syntax = true
		case a == "-MD" || a == "-MMD":
			c.Deps = true
		case a == "-MF":
			c.DepFile = true
			next()
		case strings.HasPrefix(a, "-MF"):
			c.DepFile = true
		case a == "-shared":
			c.Shared = true
		case a == "-r" || a == "-relocatable":
			c.Relocatable = true
		case a == "-nostdlib":
			c.NoStdlib = true
		case a == "-flto" || strings.HasPrefix(a, "-flto="):
			c.LTO = true
		case a == "-fno-lto":
			c.LTO = false
		case a == "-o" || a == "--output":
			c.Output = next()
		case strings.HasPrefix(a, "--output="):
			c.Output = a[len("--output="):]
		case strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "-objc"):
			c.Output = a[2:]
		case a == "-x":
			x = next()
		case strings.HasPrefix(a, "-x"):
			x = a[2:]
		case queries[a], strings.HasPrefix(a, "-print-"), strings.HasPrefix(a, "--print-"), strings.HasPrefix(a, "--help="):
			query = a
		case separate[a]:
			next()
		}
		for _, p := range aux {
			if a == p || (strings.HasPrefix(a, p) && (strings.HasSuffix(p, "-") || a[len(p)] == '=')) {
				c.Aux = append(c.Aux, a)
				break
			}
		}
	}
	srcs := c.Sources()
	c.Action = Pass
	switch {
	case query != "":
		c.Why = "a query (" + query + ")"
	case pre || deponly:
		c.Why = "preprocessing only (-E, -M, -MM)"
	case syntax:
		c.Why = "a syntax check (-fsyntax-only)"
	case asm:
		c.Why = "compiling to assembly (-S)"
	case len(c.Inputs) == 0:
		c.Why = "no input file"
	case compile && len(srcs) == 0:
		c.Why = "nothing to compile"
	case compile && allAssembler(srcs):
		c.Why = "assembler sources only"
	case compile:
		c.Action = Compile
	default:
		c.Action = Link
	}
	return c, nil
}

func allAssembler(srcs []Input) bool {
	for _, s := range srcs {
		if !s.Assembler() {
			return false
		}
	}
	return true
}
