package views

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"ftpatch/internal/tracetest"
	"ftpatch/model"
	"ftpatch/trace"
)

type step = tracetest.Step

// TestStreamingMatchesTrees: replay and report read as streams print
// and count what the in-memory trees with the same filter do, for
// random threads with contexts, unwound and unfinished calls.
func TestStreamingMatchesTrees(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	threads := map[int][]step{}
	for tid := 1; tid <= 3; tid++ {
		threads[tid] = tracetest.RandomThread(r, 3000, 8, tid-1)
	}
	dir := tracetest.WriteDir(t, "function_graph", threads)
	syms := tracetest.Names(8)
	for _, f := range []trace.Filter{{}, {Depth: 2}, {Threshold: 40}, {Tids: []int{2}}, {Depth: 3, Threshold: 20}} {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			mem, err := trace.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			var want, got bytes.Buffer
			if err := WriteTrees(&want, mem, model.Apply(f, model.Graph(mem, syms))); err != nil {
				t.Fatal(err)
			}
			tr, err := trace.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := ReplayGraph(&got, tr, syms, &f); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed replay differs from the trees':\n%s", lineDiff(got.String(), want.String()))
			}
			if !strings.Contains(got.String(), "context 1 (makecontext)") && !slices.Equal(f.Tids, []int{1}) {
				t.Errorf("no context in the replay:\n%.2000s", got.String())
			}
			stats, err := model.ReportGraph(tr, syms, &f)
			if err != nil {
				t.Fatal(err)
			}
			wantStats := model.Stats(model.Apply(f, model.Graph(mem, syms)))
			if len(stats) != len(wantStats) {
				t.Fatalf("%d functions reported, the trees give %d", len(stats), len(wantStats))
			}
			for i := range stats {
				a, b := stats[i], wantStats[i]
				if a.Func != b.Func || a.Calls != b.Calls || a.Unwound != b.Unwound || a.Open != b.Open || !near(a.Total, b.Total) || !near(a.Self, b.Self) {
					t.Errorf("reported %+v, the trees give %+v", a, b)
				}
			}
		})
	}
}

// near: equal but for the order floating-point sums were made in.
func near(a, b float64) bool { return a-b < 1e-6*max(1, b) && b-a < 1e-6*max(1, b) }

// lineDiff shows the first line where two outputs differ.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got %q\nwant %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// TestManyContexts: a thread that ran many contexts, switching between
// them often, prints them in the order it first ran them, as the trees
// do, its stream read once: the contexts' calls are kept aside, not read
// again.
func TestManyContexts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	dir := tracetest.WriteDir(t, "function_graph", map[int][]step{1: tracetest.RandomThread(r, 40000, 5, 300)})
	syms := tracetest.Names(5)
	mem, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := WriteTrees(&want, mem, model.Graph(mem, syms)); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ReplayGraph(&got, tr, syms, &trace.Filter{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got.String(), "(makecontext)"); n < 250 {
		t.Errorf("%d contexts replayed, want at least 250", n)
	}
	if got.String() != want.String() {
		t.Errorf("replay differs from the trees':\n%s", lineDiff(got.String(), want.String()))
	}
	if n := tr.BytesRead.Load(); n > tr.Size() {
		t.Errorf("%d bytes of streams read for %d of them: read more than once", n, tr.Size())
	}
}

// TestMergeCalls: a function trace's streams replay merged by time, a
// stream before the next at equal times, and filters keep the calls of
// the chosen functions and time.
func TestMergeCalls(t *testing.T) {
	dir := tracetest.WriteDir(t, "function", map[int][]step{
		1: {{K: trace.Call, Fn: "f0", TS: 10}, {K: trace.Call, Fn: "f1", TS: 30}, {K: trace.Call, Fn: "f2", TS: 50}},
		2: {{K: trace.Call, Fn: "f1", TS: 20}, {K: trace.Call, Fn: "f0", TS: 30}, {K: trace.Call, Fn: "f0", TS: 60}},
	})
	syms := tracetest.Names(3)
	for _, c := range []struct {
		f    trace.Filter
		want string
	}{
		{trace.Filter{}, "1:f0 2:f1 1:f1 2:f0 1:f2 2:f0"},
		{trace.Filter{Funcs: []string{"f0"}}, "1:f0 2:f0 2:f0"},
		{trace.Filter{Hide: []string{"f0"}, Tids: []int{1}}, "1:f1 1:f2"},
		{trace.Filter{TimeFrom: 25, TimeTo: 55, Until: true}, "1:f1 2:f0 1:f2"},
	} {
		tr, err := trace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		f := c.f
		if err := ReplayCalls(&out, tr, syms, &f); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(out.String(), "\n") {
			if fs := strings.Fields(line); len(fs) >= 3 && !strings.HasPrefix(line, "#") {
				got = append(got, fs[1]+":"+fs[2])
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%+v: %v, want %s\n%s", c.f, got, c.want, out.String())
		}
		counts, events, err := model.ReportCalls(tr, syms, &f)
		if err != nil || events != len(got) {
			t.Errorf("%+v: report counts %d calls (%v), replay shows %d", c.f, events, err, len(got))
		}
		_ = counts
	}
}

// TestUntimedCalls: a plain call in a function_graph trace (one the graph
// tracer recorded without hooking its return: an arm64 -pg site whose
// prologue it could not read, or any call while a context's stack was
// unknown) is shown where it was made, untimed, by the streamed replay
// and the trees alike, and counted in the report with no time, also
// when the report merges threads.
func TestUntimedCalls(t *testing.T) {
	dir := tracetest.WriteDir(t, "function_graph", map[int][]step{1: {
		{K: trace.Entry, Fn: "f0", TS: 100},
		{K: trace.Call, Fn: "f1", TS: 150},
		{K: trace.Entry, Fn: "f1", TS: 200},
		{K: trace.Exit, TS: 260},
		{K: trace.Call, Fn: "f2", TS: 300},
		{K: trace.Exit, TS: 400},
	}, 2: {
		{K: trace.Entry, Fn: "f2", TS: 500},
		{K: trace.Exit, TS: 530},
	}})
	syms := tracetest.Names(3)
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := ReplayGraph(&got, tr, syms, &trace.Filter{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| f0() {",
		"|   f1(); /* not timed: its return was not traced */",
		"|   f1();",
		"|   f2(); /* not timed: its return was not traced */",
		"| } /* f0 */",
	}
	var body []string // thread 1's calls
	for _, l := range strings.Split(strings.TrimSpace(got.String()), "\n") {
		if _, rest, ok := strings.Cut(l, "[     1] "); ok {
			body = append(body, rest)
		}
	}
	if strings.Join(body, "\n") != strings.Join(want, "\n") {
		t.Errorf("replay:\n%s\nwant the calls\n%s", got.String(), strings.Join(want, "\n"))
	}
	mem, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var trees bytes.Buffer
	if err := WriteTrees(&trees, mem, model.Graph(mem, syms)); err != nil {
		t.Fatal(err)
	}
	if trees.String() != got.String() {
		t.Errorf("the trees' replay differs from the stream's:\n%s", lineDiff(trees.String(), got.String()))
	}
	stats, err := model.ReportGraph(tr, syms, &trace.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]model.Stat{}
	for _, s := range stats {
		by[s.Func] = s
	}
	if f1 := by["f1"]; f1.Calls != 2 || f1.Untimed != 1 || f1.Total != 60 || f1.Min != 60 || f1.Max != 60 {
		t.Errorf("f1: %+v; want 2 calls, 1 untimed, 60 ns in the timed one", f1)
	}
	if f2 := by["f2"]; f2.Calls != 2 || f2.Untimed != 1 || f2.Total != 30 || f2.Min != 30 || f2.Max != 30 {
		t.Errorf("f2: %+v; want 2 calls, 1 untimed (thread 1), 30 ns in the timed one (thread 2)", f2)
	}
}
