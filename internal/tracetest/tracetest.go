// Package tracetest makes synthetic traces for the tests of the trace
// reader, the model and the views: a thread as steps (entries, exits,
// calls, context switches), written as a trace directory or held in
// memory, with functions f0, f1, ... at known addresses and a symbol
// table naming them.
package tracetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"ftpatch/runtime/abi"
	"ftpatch/symbols"
	"ftpatch/trace"
)

// A Step of a synthetic thread: kind, function (for entries and calls),
// time, and a context to switch to (switch steps).
type Step struct {
	K   trace.Kind
	Fn  string
	TS  uint64
	Ctx int // > 0: switch to context Ctx-1
}

// FuncAddr is where a synthetic function named fN lives: 0x1000 * (N+1).
func FuncAddr(fn string) uint64 {
	var n uint64
	fmt.Sscanf(fn, "f%d", &n)
	return (n + 1) << 12
}

// Names names the synthetic functions f0..f(n-1), each 0x100 bytes at
// FuncAddr.
func Names(n int) *symbols.Table {
	var funcs []symbols.Func
	for i := range n {
		a := uint64(i+1) << 12
		funcs = append(funcs, symbols.Func{Start: a, End: a + 0x100, Name: fmt.Sprintf("f%d", i)})
	}
	return symbols.New(funcs)
}

// Meta is the metadata WriteDir writes: format 2, the tracer, 1 tick =
// 1 ns over a second.
func Meta(tracer string) string {
	return "format ftrt-trace 2\ntracer " + tracer + "\nclock tsc\nended 1\npid 1\nbias 0\ntsc_start 0\ntsc_end 1000000000\nmono_start_ns 0\nmono_end_ns 1000000000\n"
}

// WriteDir writes a function_graph (or function) trace directory of the
// threads' steps, by tid, in format 2 words, 1 tick = 1 ns, and returns
// its path.
func WriteDir(t testing.TB, tracer string, threads map[int][]Step) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "meta"), []byte(Meta(tracer)), 0o600); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for tid, steps := range threads {
		b := append([]byte("ftrtrec2"), le.AppendUint32(le.AppendUint32(nil, 1), uint32(tid))...)
		for _, s := range steps {
			b = le.AppendUint64(b, uint64(s.K)<<62|s.TS)
			switch {
			case s.Ctx > 0:
				b = le.AppendUint64(b, trace.ContextMark|uint64(s.Ctx-1))
			case s.K == trace.Entry:
				b = le.AppendUint64(b, FuncAddr(s.Fn))
			case s.K == trace.Call:
				b = le.AppendUint64(le.AppendUint64(b, FuncAddr(s.Fn)), 0x99)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("1-%d.trace", tid)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A SchedEvent is a thread's scheduler event: at TS it left the CPU
// (Kind abi.SchedSleep or abi.SchedPreempt) or ran again (abi.SchedIn).
type SchedEvent struct {
	TS   uint64
	Kind int
}

// WriteSched writes the scheduler events of process 1's threads, by
// tid, into the trace directory dir (as WriteDir made it: 1 tick = 1
// ns), each thread's in chunks of at most chunk events (0: one), and
// says so in the metadata (sched on).
func WriteSched(t testing.TB, dir string, chunk int, threads map[int][]SchedEvent) {
	t.Helper()
	le := binary.LittleEndian
	b := le.AppendUint32(le.AppendUint32([]byte(abi.SchedMagic), 1), 0)
	switches := 0
	for tid, evs := range threads {
		for len(evs) > 0 {
			n := len(evs)
			if chunk > 0 {
				n = min(n, chunk)
			}
			b = le.AppendUint64(b, uint64(tid)|uint64(n)<<32)
			for _, e := range evs[:n] {
				b = le.AppendUint64(b, e.TS<<abi.SchedKindBits|uint64(e.Kind))
				if e.Kind != abi.SchedIn {
					switches++
				}
			}
			evs = evs[n:]
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "1"+abi.SchedSuffix), b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "meta"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = fmt.Fprintf(f, "sched on\nsched_switches %d\n", switches)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// RandomThread makes a thread of n random nested calls of nfuncs
// functions in contexts contexts (0: the own stack only), some unwound,
// some left open at the end.
func RandomThread(r *rand.Rand, n, nfuncs, contexts int) []Step {
	var out []Step
	ts := uint64(1)
	depth := make([]int, contexts+1)
	ctx := 0
	for range n {
		ts += uint64(r.IntN(50))
		switch x := r.IntN(100); {
		case contexts > 0 && x < 5:
			ctx = r.IntN(contexts + 1)
			out = append(out, Step{K: trace.Entry, TS: ts, Ctx: ctx + 1})
		case x < 55 || depth[ctx] == 0:
			out = append(out, Step{K: trace.Entry, Fn: fmt.Sprintf("f%d", r.IntN(nfuncs)), TS: ts})
			depth[ctx]++
		case x < 97:
			out = append(out, Step{K: trace.Exit, TS: ts})
			depth[ctx]--
		default:
			out = append(out, Step{K: trace.Unwound, TS: ts})
			depth[ctx]--
		}
	}
	return out
}

// InMemory is a function_graph trace of one thread (pid 1, tid 7) held
// in memory, its records as Read would give them (an exit's IP its
// entry's site), from the steps, each step's function at an address of
// its own (0x1000, 0x2000, ... in the order first seen), 1 tick = 1 ns;
// and the table naming them.
func InMemory(steps []Step) (*trace.Trace, *symbols.Table) {
	var funcs []symbols.Func
	addr := map[string]uint64{}
	for _, s := range steps {
		if _, ok := addr[s.Fn]; !ok {
			a := uint64(len(addr)+1) << 12
			addr[s.Fn] = a
			funcs = append(funcs, symbols.Func{Start: a, End: a + 0x100, Name: s.Fn})
		}
	}
	st := trace.Stream{Pid: 1, Tid: 7}
	for _, s := range steps {
		st.Records = append(st.Records, trace.Record{TS: s.TS, IP: addr[s.Fn], Info: uint64(s.K) << 62})
	}
	t := &trace.Trace{Meta: trace.Meta{Tracer: "function_graph", TSCStart: 0, TSCEnd: 1000, MonoStart: 0, MonoEnd: 1000}, Streams: []trace.Stream{st}}
	return t, symbols.New(funcs)
}
