package trace_test

import (
	"iter"
	"math/rand/v2"
	"testing"

	"ftpatch/internal/tracetest"
	"ftpatch/trace"
)

// TestThreadsAtOnce: where the metadata counts no contexts, the views
// read several threads at once (trace.Trace.Threads), so a thread is
// handed over before the one before it is read: asking for the next
// reads nothing. A thread whose stream does hold contexts (a trace whose
// metadata does not count them) still has them all, after every
// thread's own stack, in the order it first ran them.
func TestThreadsAtOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dir := tracetest.WriteDir(t, "function_graph", map[int][]tracetest.Step{
		7: tracetest.RandomThread(r, 3000, 5, 0),
		8: tracetest.RandomThread(r, 3000, 5, 4),
		9: tracetest.RandomThread(r, 3000, 5, 0),
	})
	syms := tracetest.Names(5)
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var readErr error
	next, stop := iter.Pull(tr.Threads(syms, &trace.Filter{}, &readErr))
	defer stop()
	var threads []trace.ThreadCalls
	for range tr.Streams {
		th, ok := next()
		if !ok {
			t.Fatalf("%d threads, want %d", len(threads), len(tr.Streams))
		}
		threads = append(threads, th)
	}
	if n := tr.BytesRead.Load(); n != 0 {
		t.Errorf("%d bytes read before a thread's calls were asked for: the threads are not handed over at once", n)
	}
	// Read them last first, each on a goroutine of its own, as workers
	// would; then the contexts.
	done := make(chan int, len(threads))
	for k := len(threads) - 1; k >= 0; k-- {
		go func() {
			n := 0
			for range threads[k].Events {
				n++
			}
			done <- n
		}()
	}
	for range threads {
		if n := <-done; n == 0 {
			t.Error("a thread with no calls")
		}
	}
	var contexts []uint64
	for {
		th, ok := next()
		if !ok {
			break
		}
		if th.Tid != 8 || th.Context == 0 {
			t.Errorf("tid %d context %d after the threads' own stacks", th.Tid, th.Context)
		}
		contexts = append(contexts, th.Context)
		for range th.Events {
		}
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	if len(contexts) != 4 {
		t.Errorf("contexts %v, want the 4 thread 8 ran", contexts)
	}
	if n := tr.BytesRead.Load(); n > tr.Size() {
		t.Errorf("%d bytes of streams read for %d: read more than once", n, tr.Size())
	}
}
