package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A step of a synthetic thread: kind, function (for entries and calls),
// time, and a context to switch to (switch steps).
type step struct {
	k   Kind
	fn  string
	ts  uint64
	ctx int // > 0: switch to context ctx-1
}

// funcAddr is where a synthetic function named fN lives: 0x1000 * (N+1).
func funcAddr(fn string) uint64 {
	var n uint64
	fmt.Sscanf(fn, "f%d", &n)
	return (n + 1) << 12
}

// synthSyms names the synthetic functions f0..f(n-1).
func synthSyms(n int) *Symbols {
	s := &Symbols{}
	for i := range n {
		a := uint64(i+1) << 12
		s.funcs = append(s.funcs, fsym{a, a + 0x100, fmt.Sprintf("f%d", i), true})
	}
	s.index()
	return s
}

// writeSynthetic writes a function_graph (or function) trace directory
// of the threads' steps, in format 2 words, 1 tick = 1 ns.
func writeSynthetic(t *testing.T, tracer string, threads map[int][]step) string {
	t.Helper()
	dir := t.TempDir()
	meta := "format ftrt-trace 2\ntracer " + tracer + "\nclock tsc\nended 1\npid 1\nbias 0\ntsc_start 0\ntsc_end 1000000000\nmono_start_ns 0\nmono_end_ns 1000000000\n"
	if err := os.WriteFile(filepath.Join(dir, "meta"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for tid, steps := range threads {
		b := append([]byte("ftrtrec2"), le.AppendUint32(le.AppendUint32(nil, 1), uint32(tid))...)
		for _, s := range steps {
			b = le.AppendUint64(b, uint64(s.k)<<62|s.ts)
			switch {
			case s.ctx > 0:
				b = le.AppendUint64(b, ctxMark|uint64(s.ctx-1))
			case s.k == Entry:
				b = le.AppendUint64(b, funcAddr(s.fn))
			case s.k == Call:
				b = le.AppendUint64(le.AppendUint64(b, funcAddr(s.fn)), 0x99)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("1-%d.trace", tid)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// randomThread makes a thread of n random nested calls of nfuncs
// functions in contexts contexts (0: the own stack only), some unwound,
// some left open at the end.
func randomThread(r *rand.Rand, n, nfuncs, contexts int) []step {
	var out []step
	ts := uint64(1)
	depth := make([]int, contexts+1)
	ctx := 0
	for range n {
		ts += uint64(r.IntN(50))
		switch x := r.IntN(100); {
		case contexts > 0 && x < 5:
			ctx = r.IntN(contexts + 1)
			out = append(out, step{k: Entry, ts: ts, ctx: ctx + 1})
		case x < 55 || depth[ctx] == 0:
			out = append(out, step{k: Entry, fn: fmt.Sprintf("f%d", r.IntN(nfuncs)), ts: ts})
			depth[ctx]++
		case x < 97:
			out = append(out, step{k: Exit, ts: ts})
			depth[ctx]--
		default:
			out = append(out, step{k: Unwound, ts: ts})
			depth[ctx]--
		}
	}
	return out
}

// TestStreamChunks: a stream read a small chunk at a time, its records
// split across chunks at every offset, gives the records read whole.
func TestStreamChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dir := writeSynthetic(t, "function_graph", map[int][]step{1: randomThread(r, 20000, 10, 3)})
	whole, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := whole.Streams[0].Records
	if len(want) < 20000 {
		t.Fatalf("%d records, want 20000", len(want))
	}
	for _, chunk := range []int{minChunk, minChunk + 8, minChunk + 13, 3*minChunk + 5} {
		tr, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		sr, err := tr.OpenStream(0, chunk)
		if err != nil {
			t.Fatal(err)
		}
		var got []Record
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

// TestStreamingMatchesTrees: replay and report read as streams print
// and count what the in-memory trees with the same filter do, for
// random threads with contexts, unwound and unfinished calls.
func TestStreamingMatchesTrees(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	threads := map[int][]step{}
	for tid := 1; tid <= 3; tid++ {
		threads[tid] = randomThread(r, 3000, 8, tid-1)
	}
	dir := writeSynthetic(t, "function_graph", threads)
	syms := synthSyms(8)
	for _, f := range []Filter{{}, {Depth: 2}, {Threshold: 40}, {Tid: 2}, {Depth: 3, Threshold: 20}} {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			mem, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			var want, got bytes.Buffer
			if err := WriteGraph(&want, mem, f.Apply(Graph(mem, syms))); err != nil {
				t.Fatal(err)
			}
			tr, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteReplayGraph(&got, tr, syms, &f); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed replay differs from the trees':\n%s", lineDiff(got.String(), want.String()))
			}
			if !strings.Contains(got.String(), "context 1 (makecontext)") && f.Tid != 1 {
				t.Errorf("no context in the replay:\n%.2000s", got.String())
			}
			stats, err := ReportGraph(tr, syms, &f)
			if err != nil {
				t.Fatal(err)
			}
			wantStats := Stats(f.Apply(Graph(mem, syms)))
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

// TestContextPasses: a thread that ran more contexts than one pass
// keeps aside is read again for the rest, and prints them in the order
// it first ran them, as the trees do.
func TestContextPasses(t *testing.T) {
	defer func(n int) { maxSpills = n }(maxSpills)
	maxSpills = 2
	r := rand.New(rand.NewPCG(5, 6))
	dir := writeSynthetic(t, "function_graph", map[int][]step{1: randomThread(r, 4000, 5, 7)})
	syms := synthSyms(5)
	mem, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := WriteGraph(&want, mem, Graph(mem, syms)); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteReplayGraph(&got, tr, syms, &Filter{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got.String(), "(makecontext)"); n < 5 {
		t.Errorf("%d contexts replayed, want at least 5", n)
	}
	if got.String() != want.String() {
		t.Errorf("replay in passes differs from the trees':\n%s", lineDiff(got.String(), want.String()))
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
	add := func(k Kind, fn string) {
		ts += 10
		steps = append(steps, step{k: k, fn: fn, ts: ts})
	}
	add(Entry, "f0")
	add(Entry, "f1")
	add(Entry, "f2")
	add(Entry, "f3")
	add(Exit, "")
	add(Exit, "")
	add(Exit, "")
	add(Entry, "f2")
	add(Entry, "f1")
	add(Entry, "f3")
	add(Exit, "")
	add(Exit, "")
	add(Exit, "")
	add(Exit, "")
	add(Entry, "f3")
	add(Exit, "")
	dir := writeSynthetic(t, "function_graph", map[int][]step{1: steps})
	syms := synthSyms(4)
	for _, c := range []struct {
		f    Filter
		want string // the calls shown: name and depth
	}{
		{Filter{}, "f0:1 f1:2 f2:3 f3:4 f2:2 f1:3 f3:4 f3:1"},
		{Filter{Funcs: []string{"f1"}}, "f1:1 f2:2 f3:3 f1:1 f3:2"},
		{Filter{Funcs: []string{"f1"}, Depth: 2}, "f1:1 f2:2 f1:1 f3:2"},
		{Filter{Funcs: []string{"f2", "f1"}}, "f1:1 f2:2 f3:3 f2:1 f1:2 f3:3"},
		{Filter{Hide: []string{"f2"}}, "f0:1 f1:2 f3:1"},
		{Filter{Funcs: []string{"f[01]"}, Hide: []string{"f3"}}, "f0:1 f1:2 f2:3 f2:2 f1:3"},
		{Filter{TimeFrom: 25, TimeTo: 95, Until: true}, "f2:1 f3:2 f2:1 f1:2"},
		{Filter{TimeFrom: 140}, "f3:1"},
	} {
		tr, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		f := c.f
		if err := tr.walkStream(0, syms.Namer(), &f, func(uint64) sink { return rec }); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(rec.calls, " "); got != c.want {
			t.Errorf("%+v: %s, want %s", c.f, got, c.want)
		}
	}
}

// recorder notes each kept call as name:depth.
type recorder struct{ calls []string }

func (r *recorder) enter(fn, src string, ns float64, depth int) {
	r.calls = append(r.calls, fmt.Sprintf("%s:%d", fn, depth))
}
func (r *recorder) close(how EndKind, fn string, start, ns float64) {}

// TestMergeCalls: a function trace's streams replay merged by time, a
// stream before the next at equal times, and filters keep the calls of
// the chosen functions and time.
func TestMergeCalls(t *testing.T) {
	dir := writeSynthetic(t, "function", map[int][]step{
		1: {{k: Call, fn: "f0", ts: 10}, {k: Call, fn: "f1", ts: 30}, {k: Call, fn: "f2", ts: 50}},
		2: {{k: Call, fn: "f1", ts: 20}, {k: Call, fn: "f0", ts: 30}, {k: Call, fn: "f0", ts: 60}},
	})
	syms := synthSyms(3)
	for _, c := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "1:f0 2:f1 1:f1 2:f0 1:f2 2:f0"},
		{Filter{Funcs: []string{"f0"}}, "1:f0 2:f0 2:f0"},
		{Filter{Hide: []string{"f0"}, Tid: 1}, "1:f1 1:f2"},
		{Filter{TimeFrom: 25, TimeTo: 55, Until: true}, "1:f1 2:f0 1:f2"},
	} {
		tr, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		f := c.f
		if err := WriteReplayCalls(&out, tr, syms, &f); err != nil {
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
		counts, events, err := ReportCalls(tr, syms, &f)
		if err != nil || events != len(got) {
			t.Errorf("%+v: report counts %d calls (%v), replay shows %d", c.f, events, err, len(got))
		}
		_ = counts
	}
}

// TestDiff: a diff pairs functions by name, with the ones only one
// trace has, biggest change first.
func TestDiff(t *testing.T) {
	before := []Stat{{Func: "a", Calls: 2, Total: 100}, {Func: "b", Calls: 1, Total: 50}, {Func: "gone", Calls: 1, Total: 5}}
	after := []Stat{{Func: "a", Calls: 2, Total: 40}, {Func: "b", Calls: 3, Total: 70}, {Func: "new", Calls: 1, Total: 1}}
	var got []string
	for _, c := range Diff(before, after) {
		got = append(got, fmt.Sprintf("%s:%+g:%+d", c.Func, c.TotalChange, c.CallsChanged))
	}
	if want := "a:-60:+0 b:+20:+2 gone:-5:-1 new:+1:+1"; strings.Join(got, " ") != want {
		t.Errorf("diff %v, want %s", got, want)
	}
	var out bytes.Buffer
	if err := WriteDiff(&out, "A", "B", Diff(before, after), true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-0.060 us", "-60.0%", "+0.020 us", "gone", "new"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff output lacks %q:\n%s", want, out.String())
		}
	}
}
