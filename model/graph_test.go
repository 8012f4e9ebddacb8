package model_test

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"ftpatch/internal/tracetest"
	"ftpatch/model"
	"ftpatch/symbols"
	"ftpatch/trace"
	"ftpatch/views"
)

// synthetic builds a trace of one thread from (kind, function, time) steps,
// with functions at addresses 0x1000, 0x2000, ... and 1 tick = 1 ns.
func synthetic(steps []struct {
	k  trace.Kind
	fn string
	ts uint64
}) (*trace.Trace, *symbols.Table) {
	var out []tracetest.Step
	for _, s := range steps {
		out = append(out, tracetest.Step{K: s.k, Fn: s.fn, TS: s.ts})
	}
	return tracetest.InMemory(out)
}

func TestGraphModel(t *testing.T) {
	tr, syms := synthetic([]struct {
		k  trace.Kind
		fn string
		ts uint64
	}{
		{trace.Entry, "main", 0},
		{trace.Entry, "a", 10},
		{trace.Entry, "leaf", 20},
		{trace.Exit, "leaf", 25},
		{trace.Exit, "a", 40},
		{trace.Entry, "jumper", 50},
		{trace.Unwound, "jumper", 60},
		{trace.Entry, "b", 70},
		{trace.Entry, "leaf", 71},
		{trace.Exit, "leaf", 72},
	})
	threads := model.Graph(tr, syms)
	var out bytes.Buffer
	if err := views.WriteTrees(&out, tr, threads); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| main() {",
		"|   a() {",
		"|     leaf();",
		"|   } /* a */",
		"|   jumper(); /* unwound: longjmp or exception */",
		"|   b() {",
		"|     leaf();",
		"|   } /* b: did not return (still running at exit) */",
		"| } /* main: did not return (still running at exit) */",
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want)+2 {
		t.Fatalf("replay:\n%s", out.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i+1], w) {
			t.Errorf("line %d: %q, want suffix %q", i+1, lines[i+1], w)
		}
	}
	stats := map[string]model.Stat{}
	for _, s := range model.Stats(threads) {
		stats[s.Func] = s
	}
	if s := stats["a"]; s.Calls != 1 || s.Total != 30 || s.Self != 25 {
		t.Errorf("a: %+v, want 1 call, total 30 ns, self 25 ns", s)
	}
	if s := stats["leaf"]; s.Calls != 2 || s.Total != 6 {
		t.Errorf("leaf: %+v, want 2 calls, 6 ns", s)
	}
	if stats["jumper"].Unwound != 1 || stats["main"].Open != 1 {
		t.Errorf("unwound/open not counted: %+v", stats)
	}

	for _, c := range []struct {
		f     trace.Filter
		funcs int // calls left
	}{
		{trace.Filter{}, 6},
		{trace.Filter{Depth: 1}, 1},
		{trace.Filter{Depth: 2}, 4},
		{trace.Filter{Threshold: 9}, 4}, // main (open), a, jumper, b (open)
		{trace.Filter{Tids: []int{8}}, 0},
		{trace.Filter{Tids: []int{8, 7}}, 6}, // a list: its thread (tid 7) among them
	} {
		n := 0
		for _, s := range model.Stats(model.Apply(c.f, threads)) {
			n += s.Calls
		}
		if n != c.funcs {
			t.Errorf("%+v keeps %d calls, want %d", c.f, n, c.funcs)
		}
	}

	st := model.Stats(threads)
	for _, by := range []string{"total", "self", "calls", "name"} {
		if err := model.SortStats(st, by); err != nil {
			t.Fatal(err)
		}
	}
	if st[0].Func != "a" || st[len(st)-1].Func != "main" {
		t.Errorf("sorted by name: first %s, last %s", st[0].Func, st[len(st)-1].Func)
	}
	if err := model.SortStats(st, "bogus"); err == nil {
		t.Error("a bogus sort key was accepted")
	}
}

// TestGraphContexts: a thread that switches between contexts graphs
// each context's calls as a Thread of their own, each exit closing the
// innermost open call of the context it runs in: a coroutine that yields
// inside f1 (context 1) while the thread's own stack runs f0, and
// returns there later, closes f1 and not f0.
func TestGraphContexts(t *testing.T) {
	steps := []tracetest.Step{
		{K: trace.Entry, Fn: "f0", TS: 10},
		{K: trace.Entry, TS: 20, Ctx: 2}, // into context 1
		{K: trace.Entry, Fn: "f1", TS: 30},
		{K: trace.Entry, Fn: "f2", TS: 40},
		{K: trace.Exit, TS: 50},          // f2
		{K: trace.Entry, TS: 60, Ctx: 1}, // yield to the thread's own stack
		{K: trace.Exit, TS: 70},          // f0, not f1
		{K: trace.Entry, TS: 80, Ctx: 2},
		{K: trace.Exit, TS: 90}, // f1
	}
	tr, err := trace.Read(tracetest.WriteDir(t, "function_graph", map[int][]tracetest.Step{7: steps}))
	if err != nil {
		t.Fatal(err)
	}
	syms := tracetest.Names(3)
	threads := model.Graph(tr, syms)
	if len(threads) != 2 || threads[0].Context != 0 || threads[1].Context != 1 {
		t.Fatalf("threads %+v, want the own stack's and context 1's", threads)
	}
	own, ctx := threads[0].Roots, threads[1].Roots
	if len(own) != 1 || own[0].Func != "f0" || own[0].End != 70 || len(own[0].Children) != 0 {
		t.Errorf("own stack: %+v, want f0 alone, ending at 70", own)
	}
	if len(ctx) != 1 || ctx[0].Func != "f1" || ctx[0].End != 90 || len(ctx[0].Children) != 1 || ctx[0].Children[0].Func != "f2" {
		t.Errorf("context 1: %+v, want f1(f2), ending at 90", ctx)
	}
	var out bytes.Buffer
	if err := views.WriteTrees(&out, tr, threads); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "context 1 (makecontext), on thread 7:") {
		t.Errorf("replay does not say where context 1 begins:\n%s", out.String())
	}
	var events []string
	for _, e := range model.Events(tr, syms) {
		events = append(events, e.Func)
	}
	if strings.Join(events, " ") != "f0 f1 f2" {
		t.Errorf("events %v: a switch record is not a call", events)
	}
}

// capped keeps the first max bytes written to it and counts them all.
type capped struct {
	bytes.Buffer
	max, n int
}

func (c *capped) Write(p []byte) (int, error) {
	c.n += len(p)
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// TestGraphDeep: 30,000 nested calls (a crafted trace, or a runaway
// recursion) replay to output linear in their number: indentation stops
// at IndentLevels and the depth is shown as a number below it; the
// report and the filters walk them without recursing, within a small
// stack.
func TestGraphDeep(t *testing.T) {
	const depth = 30000
	// A walk that recursed would need more stack than this (about 200
	// bytes a level): the program would die of it, not fail this test.
	defer debug.SetMaxStack(debug.SetMaxStack(2 << 20))
	type step = struct {
		k  trace.Kind
		fn string
		ts uint64
	}
	deep := "|" + strings.Repeat("  ", views.IndentLevels) + " "
	for _, c := range []struct {
		returned bool
		want     []string
	}{
		{false, []string{
			"|" + strings.Repeat("  ", views.IndentLevels-1) + " f() {\n", // depth 64: indented
			deep + "[depth 65] f() {\n",
			deep + "[depth 30000] f() {\n",
			deep + "[depth 30000] } /* f: did not return (still running at exit) */\n",
		}},
		{true, []string{
			"|" + strings.Repeat("  ", views.IndentLevels-1) + " f() {\n",
			deep + "[depth 65] f() {\n",
			deep + "[depth 30000] f();\n",
			deep + "[depth 29999] } /* f */\n",
			"|" + strings.Repeat("  ", views.IndentLevels-1) + " } /* f */\n",
		}},
	} {
		var steps []step
		for i := range depth {
			steps = append(steps, step{trace.Entry, "f", uint64(i)})
		}
		for i := range depth {
			if c.returned {
				steps = append(steps, step{trace.Exit, "f", uint64(depth + i)})
			}
		}
		tr, syms := synthetic(steps)
		threads := model.Graph(tr, syms)
		// Two lines a call, each at most the deepest indentation, the
		// depth, the columns and the note: linear, where indenting every
		// level writes 2 * depth^2 bytes of spaces (1.8 GB).
		out := &capped{max: 2 * depth * (2*views.IndentLevels + 150)}
		if err := views.WriteTrees(out, tr, threads); err != nil {
			t.Fatal(err)
		}
		if out.n > out.max {
			t.Fatalf("returned %v: %d bytes of replay for %d nested calls, want at most %d", c.returned, out.n, depth, out.max)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("returned %v: no line %q in the replay", c.returned, w)
			}
		}
		if s := model.Stats(threads); len(s) != 1 || s[0].Calls != depth {
			t.Errorf("stats %+v, want %d calls of f", s, depth)
		}
		if s := model.Stats(model.Apply(trace.Filter{Depth: 100}, threads)); len(s) != 1 || s[0].Calls != 100 {
			t.Errorf("--depth 100 keeps %+v, want 100 calls", s)
		}
	}
}
