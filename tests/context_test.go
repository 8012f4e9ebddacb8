package tests

import (
	"fmt"
	"strings"
	"testing"

	"ftpatch/model"
	"ftpatch/symbols"
	"ftpatch/trace"
)

// shape prints a call tree as nested names: f(g(h),k).
func shape(n *model.Node) string {
	var b strings.Builder
	b.WriteString(n.Func)
	if len(n.Children) > 0 {
		b.WriteByte('(')
		for i, c := range n.Children {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(shape(c))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// TestContexts: coroutines made by makecontext and switched by swapcontext
// (progs/contexts.c: each yields from two traced calls deep, two hand
// over to each other directly, one is made again on a finished one's
// stack, one's function takes eight arguments, two of them on its stack)
// keep their output and exit status under both tracers, every site kind
// of x86-64 and of arm64 (under qemu),
// both compilers, PIE or not and linked statically, and with the runtime
// preloaded (makecontext interposed); every call is in the
// trace, and function_graph graphs each context's calls as they nest on
// its own stack: the thread's own stack holds main, schedule and make,
// each worker's context the worker with its four steps, none unwound or
// left open.
func TestContexts(t *testing.T) {
	t.Parallel()
	type build struct {
		tg     target
		flags  string
		pie    bool
		static bool
		rt     runtimeMode
	}
	var builds []build
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		sets := x86Traced
		if tg.arch != "x86_64" {
			sets = flagSets[tg.arch]
		}
		for i, flags := range sets {
			builds = append(builds, build{tg, flags, i%2 == 0, false, linkedMode})
		}
	}
	builds = append(builds, build{x86GCC, "-pg -mfentry", false, true, linkedMode},
		// Preloaded (makecontext interposed): hooks called through the
		// GOT, the PLT, and patchable entries.
		build{x86GCC, "-pg -mfentry", true, false, preloadedMode},
		build{x86Clang, "-pg", false, false, preloadedMode},
		build{x86GCC, "-fpatchable-function-entry=5", true, false, preloadedMode},
		build{a64GCC, "-fpatchable-function-entry=4,2 -falign-functions=8", true, false, preloadedMode},
		build{a64Clang, "-pg", true, false, preloadedMode})
	for _, b := range builds {
		name := fmt.Sprintf("%s/%s/%s/%s/%s", b.tg.arch, b.tg.name, slug(b.flags), picFlag(b.pie), b.rt)
		if b.static {
			name += "/static"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			need(t, b.tg.tools...)
			dir := t.TempDir()
			wantOut, wantCode := untraced(t, b.tg, dir, "contexts.c")
			objs := buildSrc(t, b.tg, dir, "-O2 "+b.flags, b.pie, "contexts.c")
			flags := []string{picLink(b.pie)}
			if b.static {
				flags = append(flags, "-static")
			}
			prog, runOn := linkAs(t, b.tg, dir, b.rt, objs, flags...)
			for _, tracer := range []string{"function", "function_graph"} {
				stderr, out := runTracedOn(t, runOn, dir, prog, tracer, wantOut, wantCode)
				made := countLine(t, stderr, "made")
				tr, syms := readTrace(t, out)
				if tracer == "function" {
					counts := tally(model.Events(tr, syms))
					for f, n := range made {
						if counts[f] != n {
							t.Errorf("function: %s traced %d times, the program made %d calls", f, counts[f], n)
						}
					}
					continue
				}
				checkContextGraph(t, tr, syms, made)
			}
		})
	}
}

// checkContextGraph checks progs/contexts.c's function_graph trace.
func checkContextGraph(t *testing.T, tr *trace.Trace, syms *symbols.Table, made map[string]int) {
	t.Helper()
	if tr.Meta.Unwound != 0 {
		t.Errorf("%d calls taken for left by a longjmp; there is none", tr.Meta.Unwound)
	}
	threads := model.Graph(tr, syms)
	checkNesting(t, threads)
	calls := map[string]int{}
	for _, s := range model.Stats(threads) {
		calls[s.Func] = s.Calls
		if s.Unwound+s.Open != 0 {
			t.Errorf("%s: %d calls unwound, %d left open; every call returns", s.Func, s.Unwound, s.Open)
		}
	}
	for f, n := range made {
		if calls[f] != n {
			t.Errorf("function_graph: %s graphed %d times, the program made %d calls", f, calls[f], n)
		}
	}
	// The thread's own stack, then the five contexts in the order they
	// first ran: workers 0 and 1 hand over to each other in their second
	// step, worker 1 runs again from the start as context 4, and sum8 in
	// a context of its own.
	step := "step(inner(leaf,leaf))"
	pong := "step(inner(leaf,leaf),pong)"
	want := []string{
		"main(schedule(make,make,make,make))",
		"worker(" + step + "," + pong + "," + step + "," + step + ")",
		"worker(" + step + "," + pong + "," + step + "," + step + ")",
		"worker(" + step + "," + step + "," + step + "," + step + ")",
		"worker(" + step + "," + step + "," + step + "," + step + ")",
		"sum8",
	}
	var got []string
	for i, th := range threads {
		if th.Context != uint64(i) {
			t.Errorf("thread %d of the graph is context %d, want %d", i, th.Context, i)
		}
		var roots []string
		for _, n := range th.Roots {
			roots = append(roots, shape(n))
		}
		got = append(got, strings.Join(roots, " "))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("graph, a line per context:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
