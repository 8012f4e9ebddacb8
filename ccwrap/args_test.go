package ccwrap

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// noFiles is a read for command lines without response files.
func noFiles(name string, max int64) ([]byte, error) { return nil, fs.ErrNotExist }

// TestParse reads real command lines, as autotools (configure's probes,
// automake's rules), libtool and CMake (its compiler checks, try_compile,
// the Makefile generator's rules) run the compiler, and a few written to
// reach each rule of the driver: what each does, what it compiles, what
// objects it writes.
func TestParse(t *testing.T) {
	type want struct {
		action  Action
		sources []string // compiled inputs
		objects []string // for Compile
		output  string
		shared  bool
		nostd   bool
		reloc   bool
		lto     bool
		deps    bool
		aux     []string
	}
	for _, tc := range []struct {
		name, line string
		want       want
	}{
		// configure's compiler probes (autoconf 2.71, from config.log).
		{"configure --version", "--version", want{action: Pass}},
		{"configure -v", "-v", want{action: Pass}},
		{"configure -V", "-V", want{action: Pass}},
		{"configure -qversion", "-qversion", want{action: Pass}},
		{"configure a.out", "conftest.c", want{action: Link, sources: []string{"conftest.c"}}},
		{"configure -o conftest", "-o conftest -g -O2 conftest.c", want{action: Link, sources: []string{"conftest.c"}, output: "conftest"}},
		{"configure -c", "-c -g -O2 conftest.c", want{action: Compile, sources: []string{"conftest.c"}, objects: []string{"conftest.o"}}},
		{"configure -c -o", "-c conftest.c -o conftest2.o", want{action: Compile, sources: []string{"conftest.c"}, objects: []string{"conftest2.o"}, output: "conftest2.o"}},
		{"configure -E", "-E conftest.c", want{action: Pass}},
		{"configure library probe", "-o conftest -g -O2 conftest.c -lm", want{action: Link, sources: []string{"conftest.c"}, output: "conftest"}},
		{"configure -print-prog-name", "-print-prog-name=ld", want{action: Pass}},
		{"configure -print-search-dirs", "-print-search-dirs", want{action: Pass}},
		{"configure -dumpmachine", "-dumpmachine", want{action: Pass}},
		{"configure -dumpversion", "-dumpversion", want{action: Pass}},
		// automake's compile rule (depcomp's gcc3 mode), libogg.
		{"automake compile", "-DHAVE_CONFIG_H -I. -I../../libogg-1.3.5/src -I.. -I../../libogg-1.3.5/include -I../include -D_V_SELFTEST -O2 -Wall -ffast-math -fsigned-char -g -O2 -MT test_bitwise-bitwise.o -MD -MP -MF .deps/test_bitwise-bitwise.Tpo -c -o test_bitwise-bitwise.o ../../libogg-1.3.5/src/bitwise.c",
			want{action: Compile, sources: []string{"../../libogg-1.3.5/src/bitwise.c"}, objects: []string{"test_bitwise-bitwise.o"}, output: "test_bitwise-bitwise.o", deps: true}},
		{"automake link", "-D_V_SELFTEST -O2 -Wall -ffast-math -fsigned-char -g -O2 -o test_bitwise test_bitwise-bitwise.o",
			want{action: Link, output: "test_bitwise"}},
		// libtool (2.4.7) --mode=compile: the PIC object and the static one.
		{"libtool compile PIC", "-DHAVE_CONFIG_H -I. -I../../libogg-1.3.5/src -I.. -I../../libogg-1.3.5/include -I../include -O2 -Wall -ffast-math -fsigned-char -g -O2 -MT framing.lo -MD -MP -MF .deps/framing.Tpo -c ../../libogg-1.3.5/src/framing.c -fPIC -DPIC -o .libs/framing.o",
			want{action: Compile, sources: []string{"../../libogg-1.3.5/src/framing.c"}, objects: []string{".libs/framing.o"}, output: ".libs/framing.o", deps: true}},
		{"libtool compile static", "-DHAVE_CONFIG_H -I. -I.. -O2 -g -MT framing.lo -MD -MP -MF .deps/framing.Tpo -c ../../libogg-1.3.5/src/framing.c -o framing.o",
			want{action: Compile, sources: []string{"../../libogg-1.3.5/src/framing.c"}, objects: []string{"framing.o"}, output: "framing.o", deps: true}},
		// libtool --mode=link: a shared library, a program against one
		// not installed yet, and a C++ library (libtool links those
		// with -nostdlib and the compiler's own start files).
		{"libtool link shared", "-shared -fPIC -DPIC .libs/framing.o .libs/bitwise.o -O2 -g -O2 -Wl,-soname -Wl,libogg.so.0 -o .libs/libogg.so.0.8.5",
			want{action: Link, shared: true, output: ".libs/libogg.so.0.8.5"}},
		{"libtool link program", "-g -O2 -o .libs/prog prog.o ../src/.libs/libogg.so -Wl,-rpath -Wl,/usr/local/lib",
			want{action: Link, output: ".libs/prog"}},
		{"libtool link C++ shared", "-fPIC -DPIC -shared -nostdlib /usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/crti.o /usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o .libs/foo.o -L/usr/lib/gcc/x86_64-linux-gnu/12 -lstdc++ -lm -lc -lgcc_s /usr/lib/gcc/x86_64-linux-gnu/12/crtendS.o /usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/crtn.o -O2 -Wl,-soname -Wl,libfoo.so.0 -o .libs/libfoo.so.0.0.0",
			want{action: Link, shared: true, nostd: true, output: ".libs/libfoo.so.0.0.0"}},
		{"libtool print-prog-name", "-print-prog-name=ld", want{action: Pass}},
		// CMake (3.25, Unix Makefiles): a shared library's object and link,
		// a program against it, try_compile's check of a flag, and the
		// compiler ABI probe (-v, which prints the link line CMake reads).
		{"cmake compile PIC", "-DCJSON_API_VISIBILITY -DCJSON_EXPORT_SYMBOLS -DENABLE_LOCALES -Dcjson_EXPORTS -std=c89 -pedantic -Wall -Wextra -Werror -fstack-protector-strong -fvisibility=hidden -fPIC -MD -MT CMakeFiles/cjson.dir/cJSON.c.o -MF CMakeFiles/cjson.dir/cJSON.c.o.d -o CMakeFiles/cjson.dir/cJSON.c.o -c /src/cJSON-1.7.15/cJSON.c",
			want{action: Compile, sources: []string{"/src/cJSON-1.7.15/cJSON.c"}, objects: []string{"CMakeFiles/cjson.dir/cJSON.c.o"}, output: "CMakeFiles/cjson.dir/cJSON.c.o", deps: true}},
		{"cmake link shared", "-fPIC -std=c89 -pedantic -Wall -Werror -fvisibility=hidden -shared -Wl,-soname,libcjson.so.1 -o libcjson.so.1.7.15 CMakeFiles/cjson.dir/cJSON.c.o -lm",
			want{action: Link, shared: true, output: "libcjson.so.1.7.15"}},
		{"cmake link program", "-std=c89 -pedantic -Wall -rdynamic CMakeFiles/parse_examples.dir/parse_examples.c.o -o parse_examples -Wl,-rpath,/b ../libcjson.so.1.7.15 libunity.a -lm",
			want{action: Link, output: "parse_examples"}},
		{"cmake try_compile", "-DFLAG_SUPPORTED_Wcomma -std=c89 -pedantic -Werror -Wcomma -o CMakeFiles/cmTC_e4262.dir/src.c.o -c /b/CMakeFiles/CMakeScratch/TryCompile-i7H6Cx/src.c",
			want{action: Compile, sources: []string{"/b/CMakeFiles/CMakeScratch/TryCompile-i7H6Cx/src.c"}, objects: []string{"CMakeFiles/cmTC_e4262.dir/src.c.o"}, output: "CMakeFiles/cmTC_e4262.dir/src.c.o"}},
		{"cmake ABI compile", "-v -o CMakeFiles/cmTC_e7800.dir/CMakeCCompilerABI.c.o -c /usr/share/cmake-3.25/Modules/CMakeCCompilerABI.c",
			want{action: Compile, sources: []string{"/usr/share/cmake-3.25/Modules/CMakeCCompilerABI.c"}, objects: []string{"CMakeFiles/cmTC_e7800.dir/CMakeCCompilerABI.c.o"}, output: "CMakeFiles/cmTC_e7800.dir/CMakeCCompilerABI.c.o"}},
		{"cmake ABI link", "-v -rdynamic CMakeFiles/cmTC_e7800.dir/CMakeCCompilerABI.c.o -o cmTC_e7800",
			want{action: Link, output: "cmTC_e7800"}},
		{"cmake compiler id", "CMakeCCompilerId.c", want{action: Link, sources: []string{"CMakeCCompilerId.c"}}},
		{"cmake C++ compile", "-DNDEBUG -O3 -std=gnu++17 -MD -MT CMakeFiles/prog.dir/shapes.cc.o -MF CMakeFiles/prog.dir/shapes.cc.o.d -o CMakeFiles/prog.dir/shapes.cc.o -c /src/shapes.cc",
			want{action: Compile, sources: []string{"/src/shapes.cc"}, objects: []string{"CMakeFiles/prog.dir/shapes.cc.o"}, output: "CMakeFiles/prog.dir/shapes.cc.o", deps: true}},
		{"cmake precompiled header", "-x c++-header -include /b/cmake_pch.hxx -o CMakeFiles/prog.dir/cmake_pch.hxx.gch -c /b/CMakeFiles/prog.dir/cmake_pch.hxx.cxx",
			want{action: Compile, sources: []string{"/b/CMakeFiles/prog.dir/cmake_pch.hxx.cxx"}, output: "CMakeFiles/prog.dir/cmake_pch.hxx.gch"}},
		{"cmake link objects response file", "-O2 @CMakeFiles/prog.dir/objects1.rsp -o prog @CMakeFiles/prog.dir/linkLibs.rsp",
			want{action: Link, output: "prog"}}, // unreadable here: kept as arguments, as gcc keeps them
		// The driver's rules.
		{"several sources -c", "-O2 -c a.c sub/b.c c.cpp", want{action: Compile, sources: []string{"a.c", "sub/b.c", "c.cpp"}, objects: []string{"a.o", "b.o", "c.o"}}},
		{"-o with several sources", "-c a.c b.c -o x.o", want{action: Compile, sources: []string{"a.c", "b.c"}, output: "x.o"}},
		{"joined -o", "-c a.c -oa.o", want{action: Compile, sources: []string{"a.c"}, objects: []string{"a.o"}, output: "a.o"}},
		{"--output", "-c a.c --output=o/a.o", want{action: Compile, sources: []string{"a.c"}, objects: []string{"o/a.o"}, output: "o/a.o"}},
		{"compile and link", "-O2 main.c util.c -o prog -lm", want{action: Link, sources: []string{"main.c", "util.c"}, output: "prog"}},
		{"compile and link with objects", "main.o util.c libx.a -o prog", want{action: Link, sources: []string{"util.c"}, output: "prog"}},
		{"-x c stdin", "-x c -c - -o s.o", want{action: Compile, sources: []string{"-"}, objects: []string{"s.o"}, output: "s.o"}},
		{"-xc stdin default name", "-xc -c -", want{action: Compile, sources: []string{"-"}, objects: []string{"-.o"}}},
		{"-x none", "-x c foo -x none bar.o -c", want{action: Compile, sources: []string{"foo"}, objects: []string{"foo.o"}}},
		{"assembler only", "-c start.s -o start.o", want{action: Pass}},
		{"assembler with cpp only", "-c a.S b.sx", want{action: Pass}},
		{"-x assembler", "-x assembler -c a.txt", want{action: Pass}},
		{"assembler and C", "-c a.S b.c", want{action: Compile, sources: []string{"a.S", "b.c"}, objects: []string{"a.o", "b.o"}}},
		{"-S", "-S -O2 a.c -o a.s", want{action: Pass}},
		{"-S wins over -c", "-c -S a.c", want{action: Pass}},
		{"-M", "-M a.c", want{action: Pass}},
		{"-MM", "-MM -MF a.d a.c", want{action: Pass}},
		{"-fsyntax-only", "-fsyntax-only -Wall a.c", want{action: Pass}},
		{"-###", "-### a.c -o a", want{action: Pass}},
		{"--help=", "--help=optimizers", want{action: Pass}},
		{"no input", "-O2 -lm", want{action: Pass}},
		{"only objects", "-c a.o", want{action: Pass}},
		{"header", "-c foo.h", want{action: Compile, sources: []string{"foo.h"}}},
		{"value looks like a source", "-include x.c -MT y.c -o z.o -c w.c", want{action: Compile, sources: []string{"w.c"}, objects: []string{"z.o"}, output: "z.o"}},
		{"lto", "-flto=auto -O2 -c a.c", want{action: Compile, sources: []string{"a.c"}, objects: []string{"a.o"}, lto: true}},
		{"lto undone", "-flto -fno-lto -c a.c", want{action: Compile, sources: []string{"a.c"}, objects: []string{"a.o"}}},
		{"partial link", "-r -nostdlib a.o b.o -o ab.o", want{action: Link, reloc: true, nostd: true, output: "ab.o"}},
		{"static", "-static a.o -o a", want{action: Link, output: "a"}},
		{"aux outputs", "--coverage -save-temps=obj -gsplit-dwarf -fdump-tree-all a.c -o a",
			want{action: Link, sources: []string{"a.c"}, output: "a", aux: []string{"--coverage", "-save-temps=obj", "-gsplit-dwarf", "-fdump-tree-all"}}},
		{"fortran", "-c f.f90", want{action: Compile, sources: []string{"f.f90"}, objects: []string{"f.o"}}},
		{"objective-c", "-c m.m", want{action: Compile, sources: []string{"m.m"}, objects: []string{"m.o"}}},
		{"shared object version in name", "a.o libfoo.so.1 -o a", want{action: Link, output: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(strings.Fields(tc.line), noFiles)
			if err != nil {
				t.Fatal(err)
			}
			var srcs []string
			for _, s := range c.Sources() {
				srcs = append(srcs, s.Path)
			}
			got := want{action: c.Action, sources: srcs, objects: c.Objects(), output: c.Output, shared: c.Shared,
				nostd: c.NoStdlib, reloc: c.Relocatable, lto: c.LTO, deps: c.Deps, aux: c.Aux}
			if tc.want.action == Pass {
				got = want{action: c.Action} // what it would write is the compiler's affair
			}
			if got.action != tc.want.action || !slices.Equal(got.sources, tc.want.sources) || !slices.Equal(got.objects, tc.want.objects) ||
				got.output != tc.want.output || got.shared != tc.want.shared || got.nostd != tc.want.nostd || got.reloc != tc.want.reloc ||
				got.lto != tc.want.lto || got.deps != tc.want.deps || !slices.Equal(got.aux, tc.want.aux) {
				t.Errorf("%s\n got %+v (%s)\nwant %+v", tc.line, got, c.Why, tc.want)
			}
			if c.Action == Pass && c.Why == "" {
				t.Errorf("%s: passed through without a reason", tc.line)
			}
		})
	}
}

// TestParseResponse: response files are expanded in place, nested ones
// too, with gcc's quoting; one that cannot be read stays an argument; one
// that names itself is an error, not a loop.
func TestParseResponse(t *testing.T) {
	files := map[string]string{
		"objs.rsp":  "a.o 'b c.o'\n\"d\\\"e.o\" @libs.rsp",
		"libs.rsp":  "-lm\t-L/x\\ y",
		"loop.rsp":  "-c @loop.rsp",
		"flags.rsp": "-O2 -c",
	}
	read := func(name string, max int64) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	c, err := Parse([]string{"-o", "prog", "@objs.rsp", "@missing.rsp", "x.c"}, read)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-o", "prog", "a.o", "b c.o", `d"e.o`, "-lm", "-L/x y", "@missing.rsp", "x.c"}
	if !slices.Equal(c.Args, want) || !c.Response || c.Action != Link || len(c.Sources()) != 1 {
		t.Errorf("expanded %q (response %v, %v, sources %v), want %q", c.Args, c.Response, c.Action, c.Sources(), want)
	}
	c, err = Parse([]string{"@flags.rsp", "a.c"}, read)
	if err != nil || c.Action != Compile || !slices.Equal(c.Objects(), []string{"a.o"}) {
		t.Errorf("@flags.rsp a.c: %v, %+v", err, c)
	}
	if _, err := Parse([]string{"@loop.rsp"}, read); err == nil {
		t.Error("a response file that names itself expanded without end")
	}
	if c, _ := Parse([]string{"a.c"}, read); c.Response {
		t.Error("no response file, but Response is set")
	}
}

// TestQuoteResponse: what QuoteResponse writes, SplitResponse (gcc's
// reading) reads back as the same arguments.
func TestQuoteResponse(t *testing.T) {
	args := []string{"plain", "with space", "tab\there", `back\slash`, `"dq"`, "'sq'", "", "new\nline", "-DX=\"a b\"", "ünïcode"}
	if got := SplitResponse(QuoteResponse(args)); !slices.Equal(got, args) {
		t.Errorf("round trip:\n got %q\nwant %q", got, args)
	}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a  b\n", []string{"a", "b"}},
		{`'a "b" c' "d 'e'"`, []string{`a "b" c`, `d 'e'`}},
		{`a\ b 'c\'d'`, []string{"a b", "c'd"}},
		{`x''y ""`, []string{"xy", ""}},
	} {
		if got := SplitResponse(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("SplitResponse(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSplitCompiler: the first argument is the compiler unless it is an
// option, a response file or an input by its suffix, or is no command; a
// launcher takes the compiler after it.
func TestSplitCompiler(t *testing.T) {
	def := []string{"cc"}
	for _, tc := range []struct {
		args, compiler, rest string
	}{
		{"gcc -c a.c", "gcc", "-c a.c"},
		{"/usr/bin/cc -c a.c", "/usr/bin/cc", "-c a.c"},
		{"-c a.c", "cc", "-c a.c"},
		{"a.c -o a", "cc", "a.c -o a"},
		{"a.o -o a", "cc", "a.o -o a"},
		{"@args.rsp", "cc", "@args.rsp"},
		{"no-such-compiler-here a.c", "cc", "no-such-compiler-here a.c"},
	} {
		c, r := SplitCompiler(strings.Fields(tc.args), def)
		if strings.Join(c, " ") != tc.compiler || strings.Join(r, " ") != tc.rest {
			t.Errorf("%q: compiler %q, args %q; want %q, %q", tc.args, c, r, tc.compiler, tc.rest)
		}
	}
}

// TestCCounterpart: the runtime is built with the C compiler beside a
// C++ one.
func TestCCounterpart(t *testing.T) {
	for in, want := range map[string]string{
		"g++": "gcc", "c++": "cc", "clang++": "clang", "clang++-14": "clang-14", "/usr/bin/g++-12": "/usr/bin/gcc-12",
		"aarch64-linux-gnu-g++": "aarch64-linux-gnu-gcc", "gcc": "gcc", "cc": "cc", "x86_64-linux-gnu-c++": "x86_64-linux-gnu-cc",
	} {
		if got := CCounterpart(in); got != want {
			t.Errorf("CCounterpart(%q) = %q, want %q", in, got, want)
		}
	}
}
