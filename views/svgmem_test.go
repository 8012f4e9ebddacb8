package views_test

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"ftpatch/internal/tracetest"
	"ftpatch/trace"
	"ftpatch/views"
)

// TestSVGMemory: the flame graph holds what it draws, not every call
// path of the trace. 400,000 nested calls, each as wide as the ones
// inside it (a drawing 400,000 frames tall), cost a few hundred bytes a
// frame beyond what reading them costs (counting the calls); 400,000
// distinct paths each narrower than a pixel, merged into their callers,
// cost no more than a drawing of their callers. The peak of the heap and
// the goroutines' stacks in use is sampled as the view is written.
func TestSVGMemory(t *testing.T) {
	const n = 400000
	nested := func() []tracetest.Step {
		var s []tracetest.Step
		for i := range n {
			s = append(s, tracetest.Step{K: trace.Entry, Fn: fmt.Sprintf("f%d", i%3), TS: uint64(1 + i)})
		}
		return append(s, tracetest.Step{K: trace.Entry, Fn: "f3", TS: 10 * n}) // the trace's end: each call open until then
	}
	const funcs = 640 // 640² > n paths of two calls
	narrow := func() []tracetest.Step {
		s := []tracetest.Step{{K: trace.Entry, Fn: "f0", TS: 1}}
		ts := uint64(10)
		for i := range n {
			s = append(s,
				tracetest.Step{K: trace.Entry, Fn: fmt.Sprintf("f%d", i/funcs), TS: ts},
				tracetest.Step{K: trace.Entry, Fn: fmt.Sprintf("f%d", i%funcs), TS: ts + 1},
				tracetest.Step{K: trace.Exit, TS: ts + 2}, tracetest.Step{K: trace.Exit, TS: ts + 3})
			ts += 4
		}
		return append(s, tracetest.Step{K: trace.Exit, TS: 1e9}) // f0: a second, all the rest 1.6 ms
	}
	for _, c := range []struct {
		name   string
		steps  func() []tracetest.Step
		funcs  int
		budget int64 // bytes beyond the reading's
	}{
		{"nested", nested, 4, 300 * n},
		{"narrow", narrow, funcs, 16 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := tracetest.WriteDir(t, "function_graph", map[int][]tracetest.Step{1: c.steps()})
			syms := tracetest.Names(c.funcs)
			peak := func(view string) int64 {
				tr, err := trace.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				f := &trace.Filter{}
				var readErr error
				in := views.Input{Meta: &tr.Meta, Trace: tr, Names: syms, Filter: f, Threads: tr.Threads(syms, f, &readErr), Counts: nil}
				p := peakDuring(func() {
					var out countWriter
					if err := views.Write(&out, view, in, views.Options{}); err != nil {
						t.Fatal(err)
					}
				})
				if readErr != nil {
					t.Fatal(readErr)
				}
				return p
			}
			read, svg := peak("info"), peak("svg")
			t.Logf("peak: reading %d MB, svg %d MB", read>>20, svg>>20)
			if svg-read > c.budget {
				t.Errorf("svg's peak %d bytes, %d more than reading the calls: want at most %d", svg, svg-read, c.budget)
			}
		})
	}
}

// peakDuring runs f and returns the most memory the heap and the stacks
// held in the meantime, beyond what they held before, sampled every
// millisecond: the heap's live bytes as the last collection found them
// (the collector runs often meanwhile), so that a collector lagging on a
// loaded machine (the whole suite running beside) does not count
// garbage, as the heap in use did.
func peakDuring(f func()) int64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	held := func() int64 {
		metrics.Read(live)
		return int64(live[0].Value.Uint64() + live[1].Value.Uint64())
	}
	base := held()
	var peak int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, held()-base)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	runtime.GC() // what is live at the end counts too
	close(stop)
	<-done
	return max(peak, held()-base)
}
