package trace_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"ftpatch/internal/tracetest"
	"ftpatch/trace"
)

type step = tracetest.Step

// TestStreamChunks: a stream read a small chunk at a time, its records
// split across chunks at every offset, gives the records read whole.
func TestStreamChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dir := tracetest.WriteDir(t, "function_graph", map[int][]step{1: tracetest.RandomThread(r, 20000, 10, 3)})
	whole, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := whole.Streams[0].Records
	if len(want) < 20000 {
		t.Fatalf("%d records, want 20000", len(want))
	}
	for _, chunk := range []int{trace.MinChunk, trace.MinChunk + 8, trace.MinChunk + 13, 3*trace.MinChunk + 5} {
		tr, err := trace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		sr, err := tr.OpenStream(0, chunk)
		if err != nil {
			t.Fatal(err)
		}
		var got []trace.Record
		for {
			recs, err := sr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if recs == nil {
				break
			}
			got = append(got, recs...)
		}
		sr.Close()
		if !slices.Equal(got, want) {
			t.Errorf("chunk %d: %d records, differing from the %d read whole", chunk, len(got), len(want))
		}
		if w := tr.Warnings(); len(w) != 0 {
			t.Errorf("chunk %d: warnings %v", chunk, w)
		}
	}
}

// TestFilterSubtrees: -F keeps the calls of the chosen functions and
// what they call, depth counted from the chosen call; -N hides a
// function and what it calls; a time range keeps the callees of a call
// that began outside it.
func TestFilterSubtrees(t *testing.T) {
	// f0 { f1 { f2 { f3 } } f2 { f1 { f3 } } } f3, at ts 10, 20, ...
	var steps []step
	ts := uint64(0)
	add := func(k trace.Kind, fn string) {
		ts += 10
		steps = append(steps, step{K: k, Fn: fn, TS: ts})
	}
	add(trace.Entry, "f0")
	add(trace.Entry, "f1")
	add(trace.Entry, "f2")
	add(trace.Entry, "f3")
	add(trace.Exit, "")
	add(trace.Exit, "")
	add(trace.Exit, "")
	add(trace.Entry, "f2")
	add(trace.Entry, "f1")
	add(trace.Entry, "f3")
	add(trace.Exit, "")
	add(trace.Exit, "")
	add(trace.Exit, "")
	add(trace.Exit, "")
	add(trace.Entry, "f3")
	add(trace.Exit, "")
	dir := tracetest.WriteDir(t, "function_graph", map[int][]step{1: steps})
	syms := tracetest.Names(4)
	for _, c := range []struct {
		f    trace.Filter
		want string // the calls shown: name and depth
	}{
		{trace.Filter{}, "f0:1 f1:2 f2:3 f3:4 f2:2 f1:3 f3:4 f3:1"},
		{trace.Filter{Funcs: []string{"f1"}}, "f1:1 f2:2 f3:3 f1:1 f3:2"},
		{trace.Filter{Funcs: []string{"f1"}, Depth: 2}, "f1:1 f2:2 f1:1 f3:2"},
		{trace.Filter{Funcs: []string{"f2", "f1"}}, "f1:1 f2:2 f3:3 f2:1 f1:2 f3:3"},
		{trace.Filter{Hide: []string{"f2"}}, "f0:1 f1:2 f3:1"},
		{trace.Filter{Funcs: []string{"f[01]"}, Hide: []string{"f3"}}, "f0:1 f1:2 f2:3 f2:2 f1:3"},
		{trace.Filter{TimeFrom: 25, TimeTo: 95, Until: true}, "f2:1 f3:2 f2:1 f1:2"},
		{trace.Filter{TimeFrom: 140}, "f3:1"},
	} {
		tr, err := trace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var calls []string
		var readErr error
		f := c.f
		for th := range tr.Threads(syms, &f, &readErr) {
			depth := 0 // of the kept calls open
			for ev := range th.Events {
				switch ev.Kind {
				case trace.CallEnter:
					depth++
					calls = append(calls, fmt.Sprintf("%s:%d", ev.Func, depth))
				case trace.CallExit, trace.CallUnwound, trace.CallOpen:
					depth--
				}
			}
		}
		if readErr != nil {
			t.Fatal(readErr)
		}
		if got := strings.Join(calls, " "); got != c.want {
			t.Errorf("%+v: %s, want %s", c.f, got, c.want)
		}
	}
}
