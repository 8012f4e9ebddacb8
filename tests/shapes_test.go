package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ftpatch/elfx"
	"ftpatch/internal/sitetest"
	"ftpatch/isa/x86"
	"ftpatch/model"
	ftrt "ftpatch/runtime"
	"ftpatch/sites"
)

// shapeBuilds are the builds of progs/shapes.c: gcc's nested function
// (a chain site under -mfentry) and the patchable_function_entry
// attribute beside the compiler's call, under every site flag set that
// makes them, PIE or not; clang, which has no nested functions, for the
// attribute.
var shapeBuilds = []struct {
	tg    target
	flags string
	pie   bool
}{
	{x86GCC, "-pg -mfentry", true},
	{x86GCC, "-pg -mfentry", false},
	{x86GCC, "-pg -mfentry -fcf-protection", true},
	{x86GCC, "-pg", true},
	{x86GCC, "-fpatchable-function-entry=5 -pg -mfentry", true},
	{x86GCC, "-fpatchable-function-entry=5 -pg", false},
	{x86GCC, "-O0 -pg -mfentry", true},
	{x86Clang, "-pg -mfentry", true},
	{x86Clang, "-fpatchable-function-entry=5 -pg -mfentry -fcf-protection", false},
}

// shapesCalls are the calls progs/shapes.c makes (n = 3), by reading it:
// outer three times, each calling apply, which calls add (or, in
// clang's build, leaf) through a pointer, and add once directly; add,
// padded and padded_pre each call leaf.
func shapesCalls(cc string) map[string]int {
	calls := map[string]int{"main": 1, "shapes_run": 1, "outer": 3, "apply": 3, "leaf": 12, "padded": 3, "padded_pre": 3}
	if cc == "gcc" {
		calls["add.0"] = 6
	}
	return calls
}

// shapesNesting are the graph's shapes that must each appear three times
// in the replay: the nested function under apply (called through the
// pointer) and under outer (called directly), its call of leaf under it,
// and the patchable functions with theirs.
var shapesNesting = map[string][]*regexp.Regexp{
	"gcc": {
		regexp.MustCompile(`(?s)outer\(\) \{[^{}]*apply\(\) \{[^{}]*add\.0\(\) \{[^{}]*leaf\(\);[^{}]*\} /\* add\.0 \*/[^{}]*\} /\* apply \*/` +
			`[^{}]*add\.0\(\) \{[^{}]*leaf\(\);[^{}]*\} /\* add\.0 \*/[^{}]*\} /\* outer \*/`),
		regexp.MustCompile(`(?s)padded\(\) \{[^{}]*leaf\(\);[^{}]*\} /\* padded \*/`),
		regexp.MustCompile(`(?s)padded_pre\(\) \{[^{}]*leaf\(\);[^{}]*\} /\* padded_pre \*/`),
	},
	"clang": {
		regexp.MustCompile(`(?s)outer\(\) \{[^{}]*apply\(\) \{[^{}]*leaf\(\);[^{}]*\} /\* apply \*/[^{}]*leaf\(\);[^{}]*\} /\* outer \*/`),
		regexp.MustCompile(`(?s)padded\(\) \{[^{}]*leaf\(\);[^{}]*\} /\* padded \*/`),
		regexp.MustCompile(`(?s)padded_pre\(\) \{[^{}]*leaf\(\);[^{}]*\} /\* padded_pre \*/`),
	},
}

// checkShapesGraph: the function_graph trace in dir has every call of
// want, nested as shapesNesting says.
func checkShapesGraph(t *testing.T, dir, cc string, want map[string]int) {
	t.Helper()
	tr, threads := graphOf(t, dir)
	checkNesting(t, threads)
	calls := map[string]int{}
	for _, s := range model.Stats(threads) {
		calls[s.Func] = s.Calls
	}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("%s: graphed %v, want %v", dir, calls, want)
	}
	replay := graphReplay(t, tr, threads)
	for _, re := range shapesNesting[cc] {
		if n := len(re.FindAllIndex(replay, -1)); n != 3 {
			t.Errorf("%s: %d times %v in the graph, want 3:\n%s", dir, n, re, replay)
		}
	}
}

// checkShapesCallers: in the function trace in dir, the nested function
// was called from apply and from outer, three times each: the chain
// site's trampoline read the return address above the saved r10.
func checkShapesCallers(t *testing.T, dir string) {
	t.Helper()
	callers := map[string]int{}
	for _, e := range traceEvents(t, dir) {
		if e.Func == "add.0" {
			fn, _, _ := strings.Cut(e.Caller, "+")
			callers[fn]++
		}
	}
	if fmt.Sprint(callers) != fmt.Sprint(map[string]int{"apply": 3, "outer": 3}) {
		t.Errorf("%s: add.0 called from %v, want apply and outer three times each", dir, callers)
	}
}

// TestOddShapes: gcc's nested functions, whose -mfentry site follows
// `push %r10` (a chain site), and functions with a patchable area beside
// the compiler's call (the patchable_function_entry attribute, or the
// flag with -pg -mfentry) are recorded by recordmcount and traced: under
// FTRACE=function and function_graph the program prints and exits as
// the one built without instrumentation (the nested function computes
// from its enclosing function's variables, through the static chain),
// every call is counted, the graph is nested right and the nested
// function's caller is recorded right. ftpatch sites shows the chain
// site and no area; ftpatch enable (both tracers) writes the chain
// site's own trampoline, verify accepts it, the program traces the same
// with nothing set, and disable brings back an untraced program.
func TestOddShapes(t *testing.T) {
	t.Parallel()
	for _, b := range shapeBuilds {
		tg := b.tg
		t.Run(fmt.Sprintf("%s/%s/%s", tg.name, slug(b.flags), picFlag(b.pie)), func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			_, wantOut, wantCode := plainRun(t, tg, b.pie, "bfd", "shapes.c")
			if wantCode == 0 {
				t.Fatalf("untraced: exit 0, want shapes.c's nonzero status:\n%s", wantOut)
			}
			prog := traced(t, tg, dir, b.flags, b.pie, "shapes.c")
			want := shapesCalls(tg.name)
			chain := tg.name == "gcc" && strings.Contains(b.flags, "-mfentry")
			checkShapeSites(t, prog, chain, "")
			// Never through recordmcount: ftpatch finds the same sites by
			// decoding the function entries (the patchable areas' list,
			// which the program has, notwithstanding).
			noRecDir := t.TempDir()
			noRec := filepath.Join(noRecDir, "prog")
			run(t, noRecDir, append(append(append([]string{}, tg.link...), "-o", noRec, picLink(b.pie)),
				append(buildSrc(t, tg, noRecDir, b.flags, b.pie, "shapes.c"), ftrt.LinkFlags(runtimeArchive(t))...)...)...)
			checkShapeSites(t, noRec, chain, "")
			if got, want := shapeSiteLines(t, noRec), shapeSiteLines(t, prog); got != want {
				t.Errorf("decoded sites:\n%s\nthe table's:\n%s", got, want)
			}

			runAs := func(name, bin string, env ...string) string {
				t.Helper()
				out := filepath.Join(dir, name)
				got, errOut, code := runNoFtrace(t, dir, append(env, "FTRACE_OUT="+out), bin)
				if got != wantOut || code != wantCode {
					t.Fatalf("%s: exit %d, output\n%s\nstderr\n%s\nwant exit %d, output\n%s", name, code, got, errOut, wantCode, wantOut)
				}
				return out
			}
			if _, err := os.Stat(runAs("untraced", prog)); !os.IsNotExist(err) {
				t.Errorf("untraced run: %v; want no trace directory", err)
			}
			fn := runAs("function", prog, "FTRACE=function")
			if got := traceCounts(t, fn); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("function: traced %v, want %v", got, want)
			}
			if tg.name == "gcc" {
				checkShapesCallers(t, fn)
			}
			checkShapesGraph(t, runAs("function_graph", prog, "FTRACE=function_graph"), tg.name, want)

			// Baked in by ftpatch enable: the same, with nothing set.
			for _, tracer := range []string{"function_graph", "function"} {
				en := filepath.Join(dir, "en-"+tracer)
				run(t, dir, tool("ftpatch"), "enable", "--tracer", tracer, "-o", en, prog, "*")
				run(t, dir, tool("ftpatch"), "verify", en)
				checkShapeSites(t, en, chain, tracer)
				if chain {
					checkChainVerify(t, dir, en)
				}
				out := runAs("t-"+tracer, en)
				checkCounts(t, out, want, tracer, "patched")
				if tracer == "function_graph" {
					checkShapesGraph(t, out, tg.name, want)
				} else if tg.name == "gcc" {
					checkShapesCallers(t, out)
				}
				dis := filepath.Join(dir, "dis-"+tracer)
				run(t, dir, tool("ftpatch"), "disable", "-o", dis, en)
				run(t, dir, tool("ftpatch"), "verify", dis)
				checkShapeSites(t, dis, chain, "nop")
				if _, err := os.Stat(runAs("dis-"+tracer+"-run", dis)); !os.IsNotExist(err) {
					t.Errorf("disabled program: %v; want no trace directory", err)
				}
			}
		})
	}
}

// checkShapeSites: the program's sites are one per function (no area of
// the patchable functions listed beside their call), the nested
// function's a chain site when built with -mfentry by gcc, and each
// holds what enabled says: the compiler's hook call (""), a NOP
// ("nop"), or a call of the trampoline of its kind (a tracer's name).
func checkShapeSites(t *testing.T, prog string, chain bool, enabled string) {
	t.Helper()
	_, l := sitetest.Linked(t, prog)
	seen := map[string]int{}
	for _, s := range l.Sites {
		seen[s.Func]++
		if s.Func == "add.0" && (s.Kind == sites.X86Chain) != chain {
			t.Errorf("%s: add.0's site is a %v site at +%d", prog, s.Kind, s.FuncOff)
		}
		if (s.Func == "padded" || s.Func == "padded_pre") && s.Kind != sites.X86Fentry && s.Kind != sites.X86Mcount {
			t.Errorf("%s: %s's site is a %v site at +%d: want the compiler's call", prog, s.Func, s.Kind, s.FuncOff)
		}
		st := s.State
		switch {
		case enabled == "" && st != sites.StateHook,
			enabled == "nop" && st != sites.StateNop && st != sites.StateNops,
			enabled != "" && enabled != "nop" && st != sites.StateTraced:
			t.Errorf("%s: %s's site %v (%v), want it %q", prog, s.Func, st, s.Call, enabled)
		case st == sites.StateTraced && s.Kind == sites.X86Chain && !strings.HasPrefix(s.Call.Name, "ftrace_chain_caller"):
			t.Errorf("%s: chain site of %s calls %v, want ftrace_chain_caller%d", prog, s.Func, s.Call, s.Len)
		}
	}
	for fn, n := range seen {
		if n != 1 {
			t.Errorf("%s: %d sites in %s, want one", prog, n, fn)
		}
	}
	if _, ok := seen["padded_pre"]; !ok {
		t.Errorf("%s: no site in padded_pre (sites %v)", prog, seen)
	}
}

// checkChainVerify: ftpatch verify accepts at a chain site only the
// chain trampoline's call: the enabled program en with its nested
// function's site calling the entry trampoline of its length instead is
// a problem it names.
func checkChainVerify(t *testing.T, dir, en string) {
	t.Helper()
	f, l := sitetest.Linked(t, en)
	for _, s := range l.Sites {
		if s.Kind != sites.X86Chain {
			continue
		}
		entry := map[int]string{5: "ftrace_caller5", 6: "ftrace_caller6"}[s.Len]
		call, err := map[int]func(site, target uint64) ([]byte, error){5: x86.Call, 6: x86.Call6}[s.Len](s.Off, sitetest.Symbols(t, f)[entry])
		if err != nil {
			t.Fatal(err)
		}
		off, err := f.AddrToOff(elfx.Addr(s.Off), uint64(s.Len))
		if err != nil {
			t.Fatal(err)
		}
		img, err := os.ReadFile(en)
		if err != nil {
			t.Fatal(err)
		}
		copy(img[off:], call)
		bad := filepath.Join(dir, "wrong-"+filepath.Base(en))
		if err := os.WriteFile(bad, img, 0o755); err != nil {
			t.Fatal(err)
		}
		out, _, code := ftpatchStatus(t, dir, "verify", bad)
		if want := "calls " + entry + "; a " + fmt.Sprint(s.Len) + "-byte chain site"; code != 1 || !strings.Contains(out, want) {
			t.Errorf("verify of a chain site calling %s: exit %d, output\n%s\nwant exit 1 and %q", entry, code, out, want)
		}
		return
	}
	t.Errorf("%s: no chain site", en)
}

// shapeSiteLines lists a program's sites, each as its function, offset,
// kind and length.
func shapeSiteLines(t *testing.T, prog string) string {
	t.Helper()
	_, l := sitetest.Linked(t, prog)
	var b strings.Builder
	for _, s := range l.Sites {
		fmt.Fprintf(&b, "%s+%d %v %d\n", s.Func, s.FuncOff, s.Kind, s.Len)
	}
	return b.String()
}

// TestOddShapesModule: the nested function and the patchable ones in a
// shared object (module stub: its trampolines, the chain sites' among
// them, jump into the program's runtime through its slots), linked at
// start: traced like the program's own.
func TestOddShapesModule(t *testing.T) {
	t.Parallel()
	tg := x86GCC
	for _, flags := range []string{"-pg -mfentry", "-pg -mfentry -fcf-protection"} {
		t.Run(slug(flags), func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			lib := runtimeArchive(t)
			so := linkShared(t, tg, dir, "libshapes.so", buildSrc(t, tg, dir, flags+" -fPIC -DSHAPES_LIB", true, "shapes.c"))
			checkShapeSites(t, so, true, "")
			main := buildSrc(t, tg, dir, flags, true, "shapesmain.c")
			run(t, dir, append([]string{tool("recordmcount")}, main...)...)
			prog := filepath.Join(dir, "shapesmain")
			run(t, dir, append([]string{"gcc", "-pie", "-o", prog, main[0], "-L" + dir, "-lshapes", "-Wl,-rpath," + dir}, ftrt.LinkFlags(lib)...)...)
			wantOut, _, wantCode := runNoFtrace(t, dir, nil, prog)
			if wantOut != "3051\n" || wantCode != 3051%7 {
				t.Fatalf("untraced: exit %d, output %q; want shapes.c's", wantCode, wantOut)
			}
			want := shapesCalls("gcc")
			for _, mode := range []string{"function", "function_graph"} {
				out := filepath.Join(dir, mode)
				got, errOut, code := runNoFtrace(t, dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}, prog)
				if got != wantOut || code != wantCode {
					t.Fatalf("%s: exit %d, output %q, stderr\n%s", mode, code, got, errOut)
				}
				if mode == "function" {
					if got := traceCounts(t, out); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("function: traced %v, want %v", got, want)
					}
					checkShapesCallers(t, out)
				} else {
					checkShapesGraph(t, out, "gcc", want)
				}
			}
		})
	}
}
