package trace_test

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"ftpatch/internal/tracetest"
	"ftpatch/trace"
	"ftpatch/views"
)

// TestLinearInContexts: every reading command reads a trace whose thread
// ran 50,000 contexts (makecontext), most once, some again later, with
// work linear in its size: its streams read a bounded number of times,
// not once per context. Work is counted (the bytes of streams read, and
// of the contexts' records read back from where they were kept aside),
// not timed; reading a stream again for each context would count 50,000
// times its size, and is stopped as soon as the bound is passed.
func TestLinearInContexts(t *testing.T) {
	const contexts = 50000
	var steps []tracetest.Step
	ts := uint64(1)
	step := func(s tracetest.Step) {
		s.TS = ts
		ts += 3
		steps = append(steps, s)
	}
	step(tracetest.Step{K: trace.Entry, Fn: "f0"})
	for c := 1; c <= contexts; c++ {
		again := c > 100 && c%100 == 0 // and context c-100 again, its call left open the first time
		for _, ctx := range []int{c, c - 100} {
			if ctx != c && !again {
				continue
			}
			step(tracetest.Step{K: trace.Entry, Ctx: ctx + 1})
			step(tracetest.Step{K: trace.Entry, Fn: fmt.Sprintf("f%d", 1+c%7)})
			if ctx%100 != 0 || ctx == c-100 {
				step(tracetest.Step{K: trace.Exit})
			}
			step(tracetest.Step{K: trace.Entry, Ctx: 1})
		}
	}
	step(tracetest.Step{K: trace.Exit})
	dir := tracetest.WriteDir(t, "function_graph", map[int][]tracetest.Step{1: steps})
	syms := tracetest.Names(8)
	// The metadata says how many contexts the program made, as the
	// runtime's does (the views then read a thread at a time), or
	// nothing, as a crafted trace's may (they read several at once).
	plain, err := os.ReadFile(filepath.Join(dir, "meta"))
	if err != nil {
		t.Fatal(err)
	}
	counted := append(slices.Clip(plain), fmt.Sprintf("contexts %d\n", contexts)...)
	// yielded counts the threads the views were given, each context's
	// calls a thread of their own.
	var yielded int
	open := func(t *testing.T) (*trace.Trace, views.Input, *error) {
		tr, err := trace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var readErr error
		f := &trace.Filter{}
		// Stop a reading that has passed the bound: quadratic, it would
		// go on for hours.
		bound := 4 * tr.Size()
		threads, counts := tr.Threads(syms, f, &readErr), tr.Counts(&readErr)
		return tr, views.Input{
			Meta: &tr.Meta, Trace: tr, Names: syms, Filter: f,
			Threads: func(yield func(trace.ThreadCalls) bool) { stopAt(threads, tr, bound, &yielded, yield) },
			Counts:  func(yield func(trace.ThreadCounts) bool) { stopAt(counts, tr, bound, &yielded, yield) },
		}, &readErr
	}
	for _, c := range []struct {
		name string
		meta []byte
	}{{"counted", counted}, {"uncounted", plain}} {
		if err := os.WriteFile(filepath.Join(dir, "meta"), c.meta, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, view := range []string{"replay", "report", "diff", "chrome", "perfetto", "flame-graph", "svg", "graph", "info"} {
			t.Run(c.name+"/"+view, func(t *testing.T) {
				yielded = 0
				tr, in, readErr := open(t)
				var opt views.Options
				if view == "diff" {
					_, base, _ := open(t)
					opt.Against = &base
				}
				var out countWriter
				if err := views.Write(&out, view, in, opt); err != nil {
					t.Fatal(err)
				}
				if *readErr != nil {
					t.Fatal(*readErr)
				}
				size := tr.Size()
				if work := trace.Work(tr); work > 3*size || (view != "diff" && work < size-16) {
					t.Errorf("%d bytes read for a stream of %d: want it read once or twice, not once per context", work, size)
				}
				if yielded != 0 && yielded != 1+contexts {
					t.Errorf("%d threads read, want the thread's own stack and its %d contexts", yielded, contexts)
				}
				if view == "replay" && out < contexts*50 {
					t.Errorf("%d bytes of replay for %d contexts", out, contexts)
				}
			})
		}
	}
}

// stopAt yields what seq does, counted in n, until the reading of tr has
// cost more than bound.
func stopAt[T any](seq iter.Seq[T], tr *trace.Trace, bound int64, n *int, yield func(T) bool) {
	for v := range seq {
		if trace.Work(tr) > bound {
			return
		}
		*n++
		if !yield(v) {
			return
		}
	}
}

// countWriter counts the bytes written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
