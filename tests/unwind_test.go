package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"ftpatch/funclist"
	"ftpatch/model"
	"ftpatch/trace"
)

// The C++ targets: the C ones, linked by the C++ driver.
var (
	x86GXX     = target{"gcc", "x86_64", []string{"gcc"}, []string{"g++"}, nil, "objdump", []string{"gcc", "g++", "readelf", "objdump", "ld.lld"}}
	x86ClangXX = target{"clang", "x86_64", []string{"clang"}, []string{"clang++"}, nil, "objdump", []string{"clang", "clang++", "readelf", "objdump", "ld.lld"}}
	a64GXX     = target{"gcc", "arm64", a64GCC.cc, []string{"aarch64-linux-gnu-g++"}, a64GCC.exec, a64GCC.objdump,
		append(slices.Clone(a64GCC.tools), "aarch64-linux-gnu-g++")}
	a64ClangXX = target{"clang", "arm64", a64Clang.cc, []string{"aarch64-linux-gnu-g++"}, a64Clang.exec, a64Clang.objdump,
		append(slices.Clone(a64Clang.tools), "aarch64-linux-gnu-g++")}
)

// localDtor is the destructor of a local of the function it names
// (progs/unwind.cc declares each such class in the function that owns
// the object).
var localDtor = regexp.MustCompile(`^(.*)::(L|Careful)::~(L|Careful)\(\)$`)

// clones are the suffixes gcc gives the copies of a function it
// specialises (` [clone .constprop.0]`).
var clones = regexp.MustCompile(`( \[clone [^]]*\])+$`)

// unwindFilters choose patterns of the frames on the paths of
// progs/unwind.cc's exceptions.
var unwindFilters = []string{
	"u::thrower_thrown(*,!*::~*",                // only the thrower
	"u::*_catcher(*,u::catcher(*,!*::~*",        // only the catchers
	"u::*_thrown(*,!u::thrower_thrown(*,!*::~*", // only the frames between
	"u::*,!u::thrower_thrown(*",                 // all but the thrower
	"u::*::~*",                                  // only destructors
	"u::*,!*::~*",                               // all but destructors
}

// TestUnwinding: progs/unwind.cc throws through traced frames in every
// shape it knows (see there), built by both compilers at -O0 and -O2,
// with every x86-64 site kind, PIE and not, and every arm64 one (PIE,
// under qemu), and with the runtime preloaded. Under function_graph, with
// every function chosen and with unwindFilters, and, in the builds whose
// sites differ in their hooks (a trampoline per site at -pg -mfentry,
// return_to_handler at -pg), with each function alone and each left out,
// the program's output and exit status are the untraced build's. The
// graph of every function is right:
// each destructor run by the unwinding is graphed under the function
// whose local it destroys; every call left by an exception (the
// functions named *_thrown) is closed as unwound, and every other call
// returned; each function has the calls the function tracer counts. The
// graph of a filtered run is that graph with the functions the filter
// leaves out taken away.
func TestUnwinding(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GXX, x86ClangXX, a64GXX, a64ClangXX} {
		sets, pies, prefix := x86Traced, []bool{true, false}, ""
		if tg.arch != "x86_64" {
			sets, pies, prefix = flagSets[tg.arch], []bool{true}, tg.arch+"/"
		}
		for _, opt := range []string{"-O0", "-O2"} {
			t.Run(prefix+tg.name+"/"+opt, func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				objs := buildSrc(t, tg, dir, opt, true, "unwind.cc")
				plain := filepath.Join(dir, "plain")
				run(t, dir, append(append(append([]string{}, tg.link...), "-o", plain, "-pie", "-pthread"), objs...)...)
				wantOut, _, wantCode, err := runStatus(dir, tg.on(plain)...)
				if err != nil || !strings.Contains(wantOut, "thread_catcher caught bottom") {
					t.Fatalf("untraced: exit %d, %v, output\n%s", wantCode, err, wantOut)
				}
				for _, flags := range sets {
					for _, pie := range pies {
						t.Run(slug(flags)+"/"+picFlag(pie), func(t *testing.T) {
							dir := t.TempDir()
							prog := traced(t, tg, dir, opt+" "+flags, pie, "unwind.cc")
							each := tg.arch == "x86_64" && pie && (flags == "-pg -mfentry" || flags == "-pg")
							checkUnwinding(t, tg, dir, prog, wantOut, wantCode, each)
						})
					}
				}
				// Preloaded (the unwinder's entry points interposed):
				// the architecture's preferred sites, at -O2.
				if opt == "-O2" {
					t.Run(slug(preferred[tg.arch])+"/-fPIE/preloaded", func(t *testing.T) {
						dir := t.TempDir()
						prog, runOn := tracedAs(t, tg, dir, opt+" "+preferred[tg.arch], true, preloadedMode, "unwind.cc")
						checkUnwinding(t, runOn, dir, prog, wantOut, wantCode, false)
					})
				}
			})
		}
	}
}

// checkUnwinding runs prog (progs/unwind.cc) under function_graph with
// every function of the program chosen and checks its graph, then with
// unwindFilters and, if each, with each function alone and with each left
// out, and checks each graph against the first.
func checkUnwinding(t *testing.T, tg target, dir, prog, wantOut string, wantCode int, each bool) {
	t.Helper()
	record := func(name string, env ...string) (*trace.Trace, []model.Thread) {
		out := filepath.Join(dir, name)
		got, errOut, code, err := runStatusEnv(dir, append(env, "FTRACE_OUT="+out), tg.on(prog)...)
		if err != nil || got != wantOut || code != wantCode {
			t.Fatalf("%s: exit %d, %v, output\n%s\nstderr\n%s\nwant exit %d, output\n%s", env, code, err, got, errOut, wantCode, wantOut)
		}
		if strings.Contains(name, "fn") {
			return nil, nil
		}
		tr, threads := graphOf(t, out)
		if tr.Meta.Dropped != 0 || tr.Meta.Overflow != 0 {
			t.Errorf("%s: %d calls dropped, %d not graphed", env, tr.Meta.Dropped, tr.Meta.Overflow)
		}
		return tr, threads
	}
	record("fn", "FTRACE=function", "FTRACE_FILTER=u::*")
	counts := traceCounts(t, filepath.Join(dir, "fn"))
	_, full := record("all", "FTRACE=function_graph", "FTRACE_FILTER=u::*")
	checkNesting(t, full)

	var names []string // every function called, by its demangled name
	seen := map[string]bool{}
	var walk func(parent, n *model.Node)
	walk = func(parent, n *model.Node) {
		if !seen[n.Func] {
			seen[n.Func] = true
			names = append(names, n.Func)
		}
		fn := clones.ReplaceAllString(n.Func, "")
		if m := localDtor.FindStringSubmatch(fn); m != nil {
			if parent == nil {
				t.Errorf("%s graphed as a root, not under the function whose local it destroys", n.Func)
			} else if clones.ReplaceAllString(parent.Func, "") != m[1] {
				t.Errorf("%s graphed under %s, not under the function whose local it destroys", n.Func, parent.Func)
			}
		}
		base, _, _ := strings.Cut(fn, "(")
		thrown := strings.HasSuffix(base, "_thrown") && !localDtor.MatchString(fn)
		if n.Unwound != thrown || n.Open {
			t.Errorf("%s: unwound %v, still open %v; want unwound %v", n.Func, n.Unwound, n.Open, thrown)
		}
		for _, c := range n.Children {
			walk(n, c)
		}
	}
	for _, th := range full {
		for _, n := range th.Roots {
			walk(nil, n)
		}
	}
	calls := map[string]int{}
	for _, s := range model.Stats(full) {
		calls[s.Func] = s.Calls
	}
	if fmt.Sprint(calls) != fmt.Sprint(counts) {
		t.Errorf("calls graphed %v\nthe function tracer counted %v", calls, counts)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Each function alone (its locals' destructors left out), and each
	// left out (with them).
	filters := slices.Clone(unwindFilters)
	for _, n := range names {
		base, _, _ := strings.Cut(n, "(")
		if !each || localDtor.MatchString(clones.ReplaceAllString(n, "")) || slices.Contains(filters, base+"(*,!*::~*") {
			continue
		}
		filters = append(filters, base+"(*,!*::~*", "u::*,!"+base+"(*")
	}
	for i, f := range filters {
		l := &funclist.List{}
		for _, g := range strings.Split(f, ",") {
			if err := l.Add(g, "FTRACE_FILTER"); err != nil {
				t.Fatal(err)
			}
		}
		sel := l.Select(names)
		want := graphShapes(full, func(name string) bool { return sel.Chosen[slices.Index(names, name)] })
		_, threads := record(fmt.Sprintf("f%d", i), "FTRACE=function_graph", "FTRACE_FILTER="+f)
		if got := graphShapes(threads, func(string) bool { return true }); !slices.Equal(got, want) {
			t.Errorf("FTRACE_FILTER=%s: graph\n%s\nwant (the full graph without the functions left out)\n%s", f, strings.Join(got, "--\n"), strings.Join(want, "--\n"))
		}
	}
}

// graphShapes gives each thread's graph of the calls keep chooses (the
// others taken out, their callees in their place) as text: one line per
// call, its name, indented by its depth, and how it ended when it did not
// return. Threads with no call chosen are left out; the rest are sorted.
func graphShapes(threads []model.Thread, keep func(string) bool) []string {
	var shapes []string
	for _, th := range threads {
		var b strings.Builder
		var walk func(n *model.Node, depth int)
		walk = func(n *model.Node, depth int) {
			if keep(n.Func) {
				fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), n.Func)
				if n.Unwound {
					b.WriteString(" (unwound)")
				}
				if n.Open {
					b.WriteString(" (open)")
				}
				b.WriteByte('\n')
				depth++
			}
			for _, c := range n.Children {
				walk(c, depth)
			}
		}
		for _, n := range th.Roots {
			walk(n, 0)
		}
		if b.Len() > 0 {
			shapes = append(shapes, b.String())
		}
	}
	slices.Sort(shapes)
	return shapes
}
