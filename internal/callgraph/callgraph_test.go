package callgraph

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"ftpatch/internal/golden"
)

// measureCase builds testdata/<name>/src and measures it with
// testdata/<name>/layers.txt.
func measureCase(t *testing.T, name string) (*Graph, *Measure) {
	t.Helper()
	dir := filepath.Join("testdata", name)
	g, err := Build(os.DirFS(filepath.Join(dir, "src")))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "layers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := ParseLayers(f, "layers.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.Measure(l)
	if err != nil {
		t.Fatal(err)
	}
	return g, m
}

// TestFixtures: on small trees, the calls running up and the circles
// between layers are found, and only they: a circle of two files in two
// layers, a call running up without a circle, a clean layering (whose
// lower layer tells the higher through a callback, which is no call), a
// static inline function of a header calling up and a macro calling
// within its layer, and assembly calling up into C (x86's call through
// an assembler macro's label, arm64's bl) and C calling and taking the
// address of assembly, each architecture's file linked to its own
// folder's twin. The whole report (figures, and each file's
// definitions and edges) is a golden, testdata/<case>/report.golden.
func TestFixtures(t *testing.T) {
	type fixture struct {
		name    string
		calls   int
		up      []string
		circles [][]string // between layers
	}
	cases := []fixture{
		{"circle", 2, []string{"lo/a.c:7 lo_a → hi_b in hi/b.c"}, [][]string{{"lo", "hi"}}},
		{"upward", 1, []string{"core/buf.c:15 buf_full → tracer_flush in tracers/flush.c"}, nil},
		{"clean", 3, nil, nil},
		{"macro", 4, []string{"lo/log.h:10 log_flush → hi_flush in hi/flush.c"}, [][]string{{"lo", "hi"}}},
		{"asm", 6, []string{
			"arch/arm64/entry.S:3 hook → tracer_enter in tracers/tracer.c",
			"arch/x86_64/entry.S:5 hook → tracer_enter in tracers/tracer.c",
		}, [][]string{{"arch", "tracers"}}},
	}
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "layers.txt"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixture in testdata/*/layers.txt (%v)", err)
	}
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		if !slices.ContainsFunc(cases, func(c fixture) bool { return c.name == name }) {
			t.Errorf("fixture %s has no case", name)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, m := measureCase(t, c.name)
			if m.Calls != c.calls {
				t.Errorf("calls between files: %d, want %d", m.Calls, c.calls)
			}
			var up []string
			for _, e := range m.Up {
				up = append(up, EdgeString(e))
			}
			if !slices.Equal(up, c.up) {
				t.Errorf("running up:\n%s\nwant:\n%s", strings.Join(up, "\n"), strings.Join(c.up, "\n"))
			}
			if !slices.EqualFunc(m.LayerCircles, c.circles, slices.Equal) {
				t.Errorf("circles between layers: %v, want %v", m.LayerCircles, c.circles)
			}
			if m.Failed() != (len(c.up) > 0 || len(c.circles) > 0) {
				t.Errorf("Failed() = %v", m.Failed())
			}
			var b bytes.Buffer
			if err := WriteReport(&b, m); err != nil {
				t.Fatal(err)
			}
			b.WriteString("\n")
			if err := WriteFiles(&b, g); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", c.name, "report.golden"), b.Bytes())
		})
	}
}

// uses gives a scan's uses as "kind name in where" lines, sorted, each
// once; a use that counts only if a macro is named is "macro?".
func uses(s *Scan) []string {
	var out []string
	for _, u := range s.Uses {
		k := u.Kind.String()
		if u.MacroOnly {
			k = "macro?"
		}
		out = append(out, k+" "+u.Name+" in "+u.In)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// defs gives a scan's definitions as "kind name [local]" lines.
func defs(s *Scan) []string {
	var out []string
	for _, d := range s.Defs {
		l := ""
		if d.Local {
			l = " local"
		}
		out = append(out, d.Kind.String()+" "+d.Name+l)
	}
	return out
}

// TestScanC: what the tokenizer takes for a definition, a call and a
// reference in C, and what it leaves: comments, strings, members,
// keywords, prototypes, parameters and variables named as a function
// elsewhere, struct members and tags.
func TestScanC(t *testing.T) {
	for _, c := range []struct {
		name, src  string
		defs, uses []string
	}{
		{"definition and call", "int f(int x)\n{\n\treturn g(x);\n}\n",
			[]string{"function f"}, []string{"call g in f"}},
		{"static, attributes before the brace", "static int f(void) __attribute__((noinline));\nstatic int f(void) __attribute__((unused))\n{\n\treturn 0;\n}\n",
			[]string{"function f local"}, []string{"macro? f in "}},
		{"comments and strings", "void f(void)\n{\n\t/* g(); */ // h();\n\tputs(\"k()\");\n\tchar c = '(';\n}\n",
			[]string{"function f"}, []string{"call puts in f"}},
		{"members and keywords", "void f(struct s *p)\n{\n\tp->g(1);\n\tp[0].h(2);\n\tif (sizeof(int))\n\t\treturn;\n}\n",
			[]string{"function f"}, nil},
		{"references", "void f(void)\n{\n\tset(g, (long)h);\n}\nstatic void (*hooks[])(void) = { k, [1] = m };\n",
			[]string{"function f"}, []string{"call set in f", "ref g in f", "ref h in f", "ref k in ", "ref m in "}},
		{"parameters and variables shadow", "void f(int now, int (*cb)(void))\n{\n\tint later = now, soon = 2;\n\tuse(now, later, soon, cb);\n\tcb();\n}\n",
			[]string{"function f"}, []string{"call use in f"}},
		{"struct members and tags", "struct now { int (*g)(void); long h; };\nvoid f(void)\n{\n\tstruct now n;\n\tstruct { int k; } x;\n}\n",
			[]string{"function f"}, nil},
		{"function-like macro", "#define LOG(x, n) \\\n\twrite_log(x, n, other)\n#define OBJ g()\n#define LIST(X) X(A, a_name) X(B, b_name)\n",
			[]string{"macro LOG", "macro LIST"}, []string{"call g in ", "call write_log in LOG", "ref other in LOG"}},
		{"macro run at file scope", "LIST(DECLARE)\nint x = SIZE(4);\n",
			nil, []string{"macro? LIST in ", "macro? SIZE in "}},
		{"includes", "#include \"a.h\"\n#include <stdio.h>\n  #  include \"b/c.h\" /* comment */\n", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ScanC([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := defs(s); !slices.Equal(got, c.defs) {
				t.Errorf("defs %q, want %q", got, c.defs)
			}
			if got := uses(s); !slices.Equal(got, c.uses) {
				t.Errorf("uses %q, want %q", got, c.uses)
			}
		})
	}
	s, err := ScanC([]byte("#include \"a.h\"\n#include <stdio.h>\n  #  include \"b/c.h\" /* comment */\n#include \\\n\t\"d.h\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Include{{"a.h", 1}, {"b/c.h", 3}, {"d.h", 4}}
	if !slices.Equal(s.Includes, want) {
		t.Errorf("includes %v, want %v", s.Includes, want)
	}
}

// TestScanAsm: labels (global or not, through an assembler macro's
// parameter), x86's call and jumps and arm64's branches as calls, other
// operands as references, registers, relocation operators and local
// labels left out.
func TestScanAsm(t *testing.T) {
	src := `#include "x.h"
.macro ENTRY name
	.globl	\name
\name:
	call	fixed_in_macro
.endm
	ENTRY	hook
	call	c_func@PLT		/* comment: call not_me */
	jne	.Lout
	jmp	*%r11
	movq	ftrt_tb@gottpoff(%rip), %rcx
	leaq	table(%rip), %rax
.Lout:	ret
local_only:
	bl	arm_func ; b.ne 1f
1:	adrp	x16, :lo12:page_sym
	.quad	data_ref
`
	s, err := ScanAsm([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantDefs := []string{"macro ENTRY", "label hook", "label local_only local"}
	if got := defs(s); !slices.Equal(got, wantDefs) {
		t.Errorf("defs %q, want %q", got, wantDefs)
	}
	wantUses := []string{
		"call ENTRY in ", "call arm_func in local_only", "call c_func in hook", "call fixed_in_macro in ENTRY",
		"ref data_ref in local_only", "ref ftrt_tb in hook", "ref page_sym in local_only", "ref table in hook",
		"ref x16 in local_only",
	}
	if got := uses(s); !slices.Equal(got, wantUses) {
		t.Errorf("uses %q,\nwant %q", got, wantUses)
	}
	// A macro of an included file defines the labels it is given.
	inc, err := ScanAsm([]byte(".macro FUNC name\n\t.globl \\name\n\\name:\n.endm\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err = ScanAsm([]byte("\tFUNC\tstub\n\tret\n"), inc.Macros)
	if err != nil {
		t.Fatal(err)
	}
	if got := defs(s); !slices.Equal(got, []string{"label stub"}) {
		t.Errorf("through an included macro: defs %q", got)
	}
}

// TestScanErrors: what the tokenizer cannot read is an error that says
// where.
func TestScanErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unclosed comment", "int x;\n/* no end\n", "line 2: comment not closed"},
		{"unclosed string", "void f(void)\n{\n\tputs(\"no end);\n}\n", "line 3: \" not closed"},
		{"extra brace", "void f(void)\n{\n}\n}\n", "line 4: '}' closes no brace"},
		{"missing brace", "void f(void)\n{\n", "1 brace(s) not closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ScanC([]byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	if _, err := ScanAsm([]byte(".macro M\n\tret\n"), nil); err == nil || !strings.Contains(err.Error(), ".macro M has no .endm") {
		t.Errorf("unclosed .macro: %v", err)
	}
}

// TestBuildErrors: a tree with a file it cannot read, an include that
// names no file of the tree, or no source at all is refused, naming
// the file.
func TestBuildErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"bad file", fstest.MapFS{"a/b.c": {Data: []byte("void f(void) {")}}, "a/b.c: 1 brace(s) not closed"},
		{"include", fstest.MapFS{"a.c": {Data: []byte("#include \"gone.h\"\n")}}, `a.c:1: #include "gone.h": no such file in the tree`},
		{"empty", fstest.MapFS{"README": {Data: []byte("x")}}, ErrNoSources.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(c.fs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestBuildResolve: how a use finds its definition: a file's own first
// (no edge), a static function of another .c never, a header's only
// through an include, and of several the nearest folder's.
func TestBuildResolve(t *testing.T) {
	fsys := fstest.MapFS{
		"a.c":          {Data: []byte("#include \"h.h\"\nstatic void own(void) {}\nvoid f(void)\n{\n\town();\n\thidden();\n\tinl();\n\tnotincluded();\n\ttwin();\n}\n")},
		"b.c":          {Data: []byte("void own(void) {}\nstatic void hidden(void) {}\n")},
		"h.h":          {Data: []byte("static inline void inl(void) {}\n")},
		"other.h":      {Data: []byte("static inline void notincluded(void) {}\n")},
		"x86_64/t.c":   {Data: []byte("void twin(void) {}\nvoid g(void) { twin2(); }\nvoid twin2(void) {}\n")},
		"x86_64/u.c":   {Data: []byte("void u(void) { twin2(); }\n")},
		"arm64/t.c":    {Data: []byte("void twin(void) {}\nvoid twin2(void) {}\n")},
		"module/x/s.c": {Data: []byte("void twin(void) {}\n")},
	}
	g, err := Build(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range g.Edges {
		got = append(got, EdgeString(e))
	}
	want := []string{
		"a.c:9 f → twin in arm64/t.c",
		"a.c:7 f → inl in h.h",
		"a.c:1 #include → h.h",
		"a.c:9 f → twin in x86_64/t.c",
		"x86_64/u.c:1 u → twin2 in x86_64/t.c",
	}
	if !slices.Equal(got, want) {
		t.Errorf("edges:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLayers: the map's rules (a glob before a folder, a deeper folder
// before a shallower, "." for everything) and its errors, each naming
// the map and the line.
func TestLayers(t *testing.T) {
	l, err := ParseLayers(strings.NewReader("# lowest first\narch x86_64/ arm64/\ncore . # the rest\npatch patch.c sites.c\ncore x86_64/sub/\n"), "m.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Names, []string{"arch", "core", "patch"}) {
		t.Errorf("names %v", l.Names)
	}
	for p, want := range map[string]string{
		"x86_64/poke.c": "arch", "x86_64/sub/a.c": "core", "arm64/x/y.h": "arch",
		"patch.c": "patch", "ring.c": "core", "module/m.c": "core",
	} {
		n, err := l.Of(p)
		if err != nil || l.Names[n] != want {
			t.Errorf("%s: layer %d (%v), want %s", p, n, err, want)
		}
	}
	for _, c := range []struct{ name, text, want string }{
		{"no pattern", "arch\n", "m.txt:1: layer arch has no pattern"},
		{"twice", "a x/\nb x/\n", "m.txt:2: x/ already given at line 1"},
		{"bad glob", "a [x\n", "m.txt:1: [x: syntax error"},
		{"empty", "# nothing\n", "m.txt: no layer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseLayers(strings.NewReader(c.text), "m.txt")
			if !errors.Is(err, ErrLayers) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	g, err := Build(fstest.MapFS{"a.c": {Data: []byte("void a(void) {}\n")}, "b.c": {Data: []byte("void b(void) {}\n")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, text, want string }{
		{"unclaimed", "x a.c\n", "m.txt: no layer claims b.c"},
		{"claims nothing", "x .\ny c.c\n", "m.txt:2: c.c claims no file"},
		{"two globs", "x ?.c\ny a.*\n", "m.txt: a.c is claimed by ?.c (line 1) and a.* (line 2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := ParseLayers(strings.NewReader(c.text), "m.txt")
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Measure(l)
			if !errors.Is(err, ErrLayers) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
