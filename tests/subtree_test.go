package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"ftpatch/internal/golden"
	"ftpatch/model"
	"ftpatch/trace"
)

// subtreeEnv are the subtree filters progs/subtree.c and subtree.cc are
// written for (see there): c_* chosen, q_* notrace.
var subtreeEnv = []string{"FTRACE_GRAPH_FUNCS=c_*,!c_never", "FTRACE_GRAPH_NOTRACE=q_*"}

// A subtreeFilter says what a trace recorded under the subtree filters
// holds, in terms of an unfiltered trace of the same run: the calls of
// chosen functions (every call, when funcs is false) and all they call,
// at most depth deep counted from the outermost chosen call (0: any
// depth), but for notrace functions and all they call.
type subtreeFilter struct {
	funcs   bool
	chosen  func(name string) bool
	notrace func(name string) bool
	depth   int
}

// prefixed chooses the functions whose names begin with p, but those
// named in not.
func prefixed(p string, not ...string) func(string) bool {
	return func(name string) bool { return strings.HasPrefix(name, p) && !slices.Contains(not, name) }
}

// named chooses the functions named.
func named(names ...string) func(string) bool {
	return func(name string) bool { return slices.Contains(names, name) }
}

// forests renders each thread's and context's calls (model.Graph's
// order) as shape does, a call left without returning marked "!", as
// the filter f would have recorded them; forests left empty are left out.
func (f subtreeFilter) forests(threads []model.Thread) []string {
	var prune func(n *model.Node, inside bool, depth int, out *[]*model.Node)
	prune = func(n *model.Node, inside bool, depth int, out *[]*model.Node) {
		if f.notrace != nil && f.notrace(n.Func) {
			return
		}
		if !inside && (!f.funcs || f.chosen(n.Func)) {
			inside, depth = true, 0
		}
		if !inside {
			for _, c := range n.Children {
				prune(c, false, 0, out)
			}
			return
		}
		if f.depth > 0 && depth >= f.depth {
			return
		}
		kept := &model.Node{Func: n.Func}
		if n.Unwound {
			kept.Func += "!"
		}
		for _, c := range n.Children {
			prune(c, true, depth+1, &kept.Children)
		}
		*out = append(*out, kept)
	}
	var lines []string
	for _, th := range threads {
		var roots []*model.Node
		for _, n := range th.Roots {
			prune(n, false, 0, &roots)
		}
		var line []string
		for _, n := range roots {
			line = append(line, shape(n))
		}
		if len(line) > 0 {
			lines = append(lines, strings.Join(line, " "))
		}
	}
	return lines
}

// everything is the filter that keeps a trace as it is.
var everything = subtreeFilter{}

// checkSubtree checks the trace tr of a run under the filter f (its
// graph: filtered) against the unfiltered trace of the same program
// (full): the same calls, nested the same, that f keeps, the calls left
// without returning (longjmp, exceptions, a thread's end) the same, as
// many as tr counts; and none of the functions named in absent.
func checkSubtree(t *testing.T, name string, tr *trace.Trace, full, filtered []model.Thread, f subtreeFilter, absent ...string) {
	t.Helper()
	checkNesting(t, filtered)
	want, got := f.forests(full), everything.forests(filtered)
	if !slices.Equal(got, want) {
		t.Errorf("%s: the graph, a line per thread and context:\n%s\nwant (the unfiltered graph, filtered):\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := strings.Count(strings.Join(got, ""), "!"); uint64(n) != tr.Meta.Unwound {
		t.Errorf("%s: the trace counts %d calls unwound, and holds %d", name, tr.Meta.Unwound, n)
	}
	for _, s := range model.Stats(filtered) {
		for _, p := range absent {
			if strings.HasPrefix(s.Func, p) {
				t.Errorf("%s: %d calls of %s recorded", name, s.Calls, s.Func)
			}
		}
	}
}

// A subtreeProg is a program of progs/ built to be traced, with what its
// untraced build prints and exits with, and the graph of its unfiltered
// trace.
type subtreeProg struct {
	tg                 target
	dir, prog, wantOut string
	wantCode           int
	full               []model.Thread
}

// newSubtreeProg builds src with tg and flags into a new directory, runs
// its untraced build, and traces it unfiltered.
func newSubtreeProg(t *testing.T, tg target, flags, src string) *subtreeProg {
	t.Helper()
	p := &subtreeProg{tg: tg, dir: t.TempDir()}
	p.wantOut, p.wantCode = untraced(t, tg, p.dir, src)
	p.prog = traced(t, tg, p.dir, flags, true, src)
	_, out := runTracedOn(t, tg, p.dir, p.prog, "function_graph", p.wantOut, p.wantCode)
	_, p.full = graphOf(t, out)
	return p
}

// record traces the program under function_graph with env set, into
// dir/name, its output and exit status the untraced build's; returns its
// stderr, its trace and the trace's graph.
func (p *subtreeProg) record(t *testing.T, name string, env ...string) (string, *trace.Trace, []model.Thread) {
	t.Helper()
	stderr, out := runTracedArgv(t, p.dir, p.tg.on(p.prog), "function_graph", name, env, p.wantOut, p.wantCode)
	tr, threads := graphOf(t, out)
	return stderr, tr, threads
}

// subtreeMasked is masked, with the thread a context runs on masked too.
func subtreeMasked(b []byte) []byte {
	return regexp.MustCompile(`on thread [0-9]+`).ReplaceAll(masked(b), []byte("on thread TID"))
}

// TestSubtreeFilters: FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE on
// progs/subtree.c (a chosen function at several depths, recursion,
// chosen calls nested, notrace calls inside and outside chosen ones,
// longjmp out of both, signal handlers inside, outside and on an
// alternate stack, a thread inside a chosen call while another calls
// outside, a thread ending inside a notrace call inside a chosen one, a
// coroutine yielding inside a chosen call), built by both compilers
// with every kind of entry site and with -pg's (the C path), on x86-64
// and on arm64 (under qemu): the
// program's output and exit status are the untraced build's, and the
// trace holds exactly what the unfiltered trace of the same program
// holds inside chosen calls and outside notrace ones, also with
// FTRACE_GRAPH_NOTRACE alone, and with FTRACE_DEPTH counted from the
// outermost chosen call; it replays to the golden graph, and its
// metadata names the filters.
func TestSubtreeFilters(t *testing.T) {
	t.Parallel()
	sites := map[string][]string{
		"x86_64": {"-O2 -pg -mfentry", "-O2 -fpatchable-function-entry=5", "-O2 -pg", "-O0 -pg -mfentry -fcf-protection"},
		"arm64":  {"-O2 -fpatchable-function-entry=4,2 -falign-functions=8", "-O2 -pg -mbranch-protection=standard"},
	}
	forSites(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, sites, func(t *testing.T, tg target, flags string) {
		p := newSubtreeProg(t, tg, flags, "subtree.c")
		full := p.full
		stderr, tr, threads := p.record(t, "filtered", subtreeEnv...)
		if stderr != "" {
			t.Errorf("stderr %q, want nothing: every glob names a traced function", stderr)
		}
		chosen, notrace := prefixed("c_", "c_never"), prefixed("q_")
		checkSubtree(t, "FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE", tr, full, threads, subtreeFilter{funcs: true, chosen: chosen, notrace: notrace}, "o_", "q_")
		if tr.Meta.GraphFuncs != "c_*,!c_never" || tr.Meta.GraphNotrace != "q_*" {
			t.Errorf("metadata: graph_funcs %q, graph_notrace %q; want the variables' values", tr.Meta.GraphFuncs, tr.Meta.GraphNotrace)
		}
		replay := graphReplay(t, tr, threads)
		// One golden for every build: each makes the same calls.
		golden.Check(t, filepath.Join("testdata", "subtree.golden"), subtreeMasked(replay))

		_, tr, threads = p.record(t, "notrace", subtreeEnv[1:]...)
		checkSubtree(t, "FTRACE_GRAPH_NOTRACE alone", tr, full, threads, subtreeFilter{notrace: notrace}, "q_")

		_, tr, threads = p.record(t, "depth", append([]string{"FTRACE_DEPTH=2"}, subtreeEnv...)...)
		checkSubtree(t, "FTRACE_DEPTH=2", tr, full, threads, subtreeFilter{funcs: true, chosen: chosen, notrace: notrace, depth: 2}, "o_", "q_")
	})
}

// TestSubtreeExceptions: the subtree filters on progs/subtree.cc, whose
// C++ exceptions leave chosen and notrace calls (their locals'
// destructors making traced calls as the stack unwinds), built by g++
// and clang++ at -O0 and -O2, with entry sites and -pg's, for x86-64 and
// for arm64 (under qemu): the program's
// output and exit status are the untraced build's, and the trace holds
// what the unfiltered trace holds inside chosen calls and outside
// notrace ones, as the golden graph shows. C++ functions are chosen by
// their demangled names, as FTRACE_FILTER chooses them.
func TestSubtreeExceptions(t *testing.T) {
	t.Parallel()
	sites := map[string][]string{
		"x86_64": {"-O0 -pg -mfentry", "-O2 -pg -mfentry", "-O2 -pg"},
		"arm64":  {"-O2 -fpatchable-function-entry=2 -mbranch-protection=standard", "-O2 -pg"},
	}
	// The C++ drivers compile and link (untraced builds in one step).
	a64GXXOnly := target{"g++", "arm64", a64GXX.link, a64GXX.link, a64GXX.exec, a64GXX.objdump, a64GXX.tools}
	a64ClangXXOnly := target{"clang++", "arm64", []string{"clang++", "--target=aarch64-linux-gnu"}, []string{"clang++", "--target=aarch64-linux-gnu"},
		a64ClangXX.exec, a64ClangXX.objdump, a64ClangXX.tools}
	forSites(t, []target{
		{"g++", "x86_64", []string{"g++"}, []string{"g++"}, nil, "objdump", []string{"g++"}},
		{"clang++", "x86_64", []string{"clang++"}, []string{"clang++"}, nil, "objdump", []string{"clang++"}},
		a64GXXOnly, a64ClangXXOnly,
	}, sites, func(t *testing.T, tg target, flags string) {
		p := newSubtreeProg(t, tg, flags, "subtree.cc")
		stderr, tr, threads := p.record(t, "filtered", "FTRACE_GRAPH_FUNCS=c_*(*", "FTRACE_GRAPH_NOTRACE=q_*(*")
		if stderr != "" {
			t.Errorf("stderr %q, want nothing", stderr)
		}
		checkSubtree(t, "filtered", tr, p.full, threads, subtreeFilter{funcs: true, chosen: prefixed("c_"), notrace: prefixed("q_")}, "o_", "q_", "OGuard")
		replay := graphReplay(t, tr, threads)
		golden.Check(t, filepath.Join("testdata", "subtree-cc.golden"), masked(replay))
	})
}

// TestSubtreeSettings: what the runtime says of the subtree filters and
// where they apply. Under FTRACE=function they change nothing, which it
// says once. A FTRACE_GRAPH_FUNCS glob that names no traced function
// (none at all, or only functions FTRACE_FILTER leaves out, whose sites
// are not enabled and so never seen) is named on stderr, once, and
// nothing is recorded for it. A program pre-patched by ftpatch enable
// (its sites, those enabled, only checked at start) applies them to the
// sites the record enables.
func TestSubtreeSettings(t *testing.T) {
	t.Parallel()
	tg := x86GCC
	need(t, tg.tools...)
	p := newSubtreeProg(t, tg, "-O2 -pg -mfentry", "subtree.c")
	dir, prog, wantOut, wantCode := p.dir, p.prog, p.wantOut, p.wantCode

	_, out := runTraced(t, dir, prog, "function", wantOut, wantCode)
	all := traceCounts(t, out)
	stderr, out := runTracedEnv(t, dir, prog, "function", "function-filtered", subtreeEnv, wantOut, wantCode)
	const noEffect = "ftrt: FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE choose what function_graph records; the function tracer records every call of the traced functions\n"
	if stderr != noEffect {
		t.Errorf("FTRACE=function: stderr %q, want %q", stderr, noEffect)
	}
	if got := traceCounts(t, out); fmt.Sprint(got) != fmt.Sprint(all) {
		t.Errorf("FTRACE=function with the subtree filters traced %v, without %v", got, all)
	}
	if tr, err := trace.Read(out); err != nil || tr.Meta.GraphFuncs != "" || tr.Meta.GraphNotrace != "" {
		t.Errorf("FTRACE=function: the metadata says graph_funcs %q, graph_notrace %q (%v); want neither", tr.Meta.GraphFuncs, tr.Meta.GraphNotrace, err)
	}

	stderr, tr, threads := p.record(t, "unmatched", "FTRACE_GRAPH_FUNCS=c_*,nosuch*,,c_rec,!c_never", "FTRACE_FILTER=*,!c_rec", "FTRACE_GRAPH_NOTRACE=q_*,\nended 0")
	const unmatched = "ftrt: FTRACE_GRAPH_FUNCS: \"nosuch*\" matches no traced function (of those loaded at start)\n" +
		"ftrt: FTRACE_GRAPH_FUNCS: \"c_rec\" matches no traced function (of those loaded at start)\n"
	if stderr != unmatched {
		t.Errorf("stderr %q, want %q", stderr, unmatched)
	}
	chosen := prefixed("c_", "c_never", "c_rec")
	checkSubtree(t, "c_rec left out by FTRACE_FILTER", tr, p.full, threads, subtreeFilter{funcs: true, chosen: chosen, notrace: prefixed("q_")}, "o_", "q_", "c_rec")
	if tr.Meta.GraphNotrace != "q_*,?ended 0" || tr.Meta.Unended {
		t.Errorf("FTRACE_GRAPH_NOTRACE with a newline: the metadata says %q, unended %v; want it on one line, the newline a '?'", tr.Meta.GraphNotrace, tr.Meta.Unended)
	}

	// Pre-patched with c_* and w_* enabled: c_outer's calls alone, as
	// those sites alone are seen.
	enabled := filepath.Join(dir, "enabled")
	run(t, dir, tool("ftpatch"), "enable", "--tracer", "function_graph", "-o", enabled, prog, "c_*", "w_*")
	stderr, out = runTracedEnv(t, dir, enabled, "", "enabled-filtered", []string{"FTRACE_GRAPH_FUNCS=c_outer", "FTRACE_DEBUG=1"}, wantOut, wantCode)
	if m := pageLine.FindStringSubmatch(stderr); m == nil || m[2] != "0" || m[3] != "patched" {
		t.Errorf("pre-patched: want no code page written, config patched:\n%s", stderr)
	}
	_, threads = graphOf(t, out)
	if got := everything.forests(threads); strings.Join(got, "\n") != "c_outer(c_inner(w_leaf),w_leaf)" {
		t.Errorf("pre-patched, FTRACE_GRAPH_FUNCS=c_outer: the graph %q, want c_outer(c_inner(w_leaf),w_leaf)", got)
	}
}

// TestSubtreeSignalStress: progs/sigstress.c (eight threads, a signal
// every 50 us to each, whose handler makes traced calls, nested, on
// alternate stacks, threads made and forks) with mid chosen and hwork,
// which the handler calls, notrace: the output and exit status are the
// untraced program's; the loops' calls of mid and leaf are all there,
// each mid a root; the handler's calls are there only inside a mid, and
// hwork and what it calls never.
func TestSubtreeSignalStress(t *testing.T) {
	t.Parallel()
	builds := []ccBuild{{x86GCC, "-O2 -pg -mfentry"}, {x86GCC, "-O2 -pg"}, {x86Clang, "-O0 -fpatchable-function-entry=5"}}
	forProgram(t, "sigstress.c", builds, func(t *testing.T, _ target, dir, prog, wantOut string, wantCode int) {
		for i := range 2 {
			stderr, out := runTracedEnv(t, dir, prog, "function_graph", fmt.Sprint("run", i),
				[]string{"FTRACE_GRAPH_FUNCS=mid", "FTRACE_GRAPH_NOTRACE=hwork"}, wantOut, wantCode)
			made := countLine(t, stderr, "made")
			tr, syms := readTrace(t, out)
			threads := model.Graph(tr, syms)
			checkNesting(t, threads)
			if tr.Meta.Unwound != 0 || tr.Meta.Overflow != 0 {
				t.Errorf("%d calls taken for left by a longjmp, %d not graphed; want none", tr.Meta.Unwound, tr.Meta.Overflow)
			}
			got := map[string]int{}
			for _, s := range model.Stats(threads) {
				got[s.Func] = s.Calls
			}
			if got["mid"] != made["mid"] || got["leaf"] != made["leaf"] || got["hwork"]+got["hleaf"] != 0 || got["on_prof"] == 0 {
				t.Errorf("calls recorded %v; want mid %d and leaf %d, all the loops made, on_prof's inside them, no hwork or hleaf", got, made["mid"], made["leaf"])
			}
			for _, th := range threads {
				for _, n := range th.Roots {
					if n.Func != "mid" {
						t.Errorf("thread %d: a call of %s outside every mid", th.Tid, n.Func)
					}
				}
			}
		}
	})
}

// TestSubtreeModules: the subtree filters across shared objects
// (modmain, libmod.so linked at start, libplug.so loaded by dlopen and
// unloaded, twice), every site kind: a chosen function of the plugin is
// found in each load of it (a table of its own, gone at its dlclose),
// its calls into libmod recorded under it; a chosen function of libmod
// too; a notrace function of the plugin leaves its calls out. The
// program's output and exit status are the untraced run's. The plugin's
// function, loaded after the program started, is named on stderr as
// matching nothing traced then.
func TestSubtreeModules(t *testing.T) {
	t.Parallel()
	tg := x86GCC
	for _, b := range modBuilds {
		t.Run(slug(b.flags), func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			prog, plug := linkModules(t, tg, dir, b)
			wantOut, wantCode := untracedModules(t, tg, dir, prog, plug)
			record := func(name string, env ...string) (*trace.Trace, []model.Thread, string) {
				out := filepath.Join(dir, name)
				got, stderr, code, err := runStatusEnv(dir, append([]string{"FTRACE=function_graph", "FTRACE_OUT=" + out}, env...), prog, plug)
				if err != nil || got != wantOut || code != wantCode {
					t.Fatalf("%s: exit %d (%v), output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", name, code, err, got, wantCode, wantOut, stderr)
				}
				tr, threads := graphOf(t, out)
				return tr, threads, stderr
			}
			_, full, _ := record("full")
			tr, threads, stderr := record("filtered", "FTRACE_GRAPH_FUNCS=plug_run,lib_scale", "FTRACE_GRAPH_NOTRACE=plug_step")
			checkSubtree(t, "filtered", tr, full, threads, subtreeFilter{funcs: true, chosen: named("plug_run", "lib_scale"), notrace: named("plug_step")}, "plug_step", "main")
			if got, want := everything.forests(threads), "lib_scale plug_run(lib_sum(lib_leaf,lib_leaf,lib_leaf)) plug_run(lib_sum(lib_leaf,lib_leaf,lib_leaf))"; len(got) != 1 || got[0] != want {
				t.Errorf("the graph %q, want %q", got, want)
			}
			if want := "ftrt: FTRACE_GRAPH_FUNCS: \"plug_run\" matches no traced function (of those loaded at start)\n"; !strings.HasPrefix(stderr, want) {
				t.Errorf("stderr %q, want it to begin %q", stderr, want)
			}
		})
	}
}
