package trace

import (
	"iter"
	"strconv"
	"sync"

	"ftpatch/runtime/abi"
)

// A CallEvent is one step of a thread's calls as the views read them.
type CallEvent struct {
	Kind CallKind
	Func string  // the call's function (for an end: the call it ends); "" for CallOff
	NS   float64 // ns since tracing started
	// A CallOff's end (ns since tracing started) and why the thread was
	// off the CPU.
	End float64
	Why OffReason
}

// A CallKind says what a CallEvent is.
type CallKind uint8

// The kinds of CallEvent.
const (
	CallEnter   CallKind = iota // a graphed call began
	CallExit                    // the innermost open call returned
	CallUnwound                 // the innermost open call was left without returning (longjmp, exception)
	CallOpen                    // the innermost open call was still running when the thread's trace ended
	CallOnly                    // the function tracer's call: no end follows
	CallOff                     // the thread was off the CPU from NS to End, inside the open calls (scheduler events)
)

// Ends says whether an event of kind k ends the innermost open call
// (CallExit, CallUnwound, CallOpen).
func (k CallKind) Ends() bool { return k == CallExit || k == CallUnwound || k == CallOpen }

var callKindNames = [...]string{CallEnter: "enter", CallExit: "exit", CallUnwound: "unwound", CallOpen: "open", CallOnly: "call", CallOff: "off-cpu"}

// String names the kind: "enter", "exit", "unwound", "open", "call",
// "off-cpu".
func (k CallKind) String() string {
	if int(k) < len(callKindNames) {
		return callKindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ThreadCalls are one thread's kept calls, or those it ran in one
// context (Context != 0, a makecontext stack of its own), in order.
type ThreadCalls struct {
	Pid, Tid int
	Context  uint64
	// Events yields the calls, read from the stream as they are
	// yielded: iterate it once.
	Events iter.Seq[CallEvent]
}

// Threads yields each thread's kept calls, streams in order: a thread's
// own stack's calls, then each context's (makecontext), in the order it
// first ran them. A stream is read once: by its own stack's Events,
// which keep its contexts' records aside for theirs (in memory, then a
// temporary file); or, when those Events have not begun by the time
// the contexts are asked for, then (and the own stack's Events read it
// again, for it alone).
//
// Where the metadata counts contexts (Meta.Contexts), a thread's are
// known only once its own stack's calls have been read: each
// ThreadCalls' Events must be read before the next is asked for. Where
// it counts none, the Events of several may be read at once, on
// several goroutines, and each thread is handed over without waiting
// for the one before it to be read; the contexts of a stream that does
// hold some (a trace whose metadata does not count them) come after
// every thread's own stack.
//
// Memory is bounded by the calls' depth and the number of contexts, not
// the trace's size, and the work is linear in its size. A stream that
// cannot be read ends the sequence; its error is *err (set by the
// goroutine reading it).
func (t *Trace) Threads(names Naming, f *Filter, err *error) iter.Seq[ThreadCalls] {
	var mu sync.Mutex
	fail := func(e error) {
		mu.Lock()
		if e != nil && *err == nil {
			*err = e
		}
		mu.Unlock()
	}
	return func(yield func(ThreadCalls) bool) {
		var late []*graphReading // streams whose contexts follow every own stack
		defer func() {
			for _, g := range late {
				g.release()
			}
		}()
		for i := range t.Streams {
			if !f.ThreadKept(t.Streams[i].Tid) {
				continue
			}
			if t.Meta.Tracer != abi.TracerGraphName {
				if !yield(t.functionCalls(i, names, f, fail)) {
					return
				}
				continue
			}
			g := t.newGraphReading(i, names, f, fail)
			g.late = t.Meta.Contexts == 0
			if !g.yieldOwn(yield) {
				return
			}
			if g.late {
				late = append(late, g)
			} else if !g.yieldContexts(yield) {
				return
			}
		}
		for len(late) > 0 {
			g := late[0]
			late = late[1:]
			if !g.yieldContexts(yield) {
				return
			}
		}
	}
}

// streamThreads yields stream i's ThreadCalls, its own stack's and then
// its contexts', as Threads does for a trace that counts its contexts:
// false when yield said stop, or the stream could not be read. A
// failure to read the stream goes to fail.
func (t *Trace) streamThreads(i int, names Naming, f *Filter, fail func(error), yield func(ThreadCalls) bool) bool {
	if t.Meta.Tracer != abi.TracerGraphName {
		return yield(t.functionCalls(i, names, f, fail))
	}
	g := t.newGraphReading(i, names, f, fail)
	return g.yieldOwn(yield) && g.yieldContexts(yield)
}

// functionCalls are the calls of stream i of a function trace, which
// follows no context: those a thread made in its contexts are its own.
func (t *Trace) functionCalls(i int, names Naming, f *Filter, fail func(error)) ThreadCalls {
	s := &t.Streams[i]
	return ThreadCalls{Pid: s.Pid, Tid: s.Tid, Events: func(yield func(CallEvent) bool) {
		nm := names.Namer()
		stop := false
		e := t.EachRecord(i, func(recs []Record) {
			for _, r := range recs {
				if stop || !r.IsCall() {
					continue
				}
				fn, ns := nm.FuncAt(r.IP, r.TS), t.Meta.Nanos(r.TS)
				if f.CallKept(fn, ns) && !yield(CallEvent{Kind: CallOnly, Func: fn, NS: ns}) {
					stop = true
				}
			}
		})
		fail(e)
	}}
}

// A graphReading is the one reading of a function_graph stream (split)
// that the ThreadCalls Threads yields for it share: its own stack's
// Events read it, keeping its contexts' records aside, or the contexts,
// asked for first, read it for themselves; each context's Events walk
// what was kept aside for it. What was kept aside goes once the
// contexts' Events have all been read and no more are to come.
type graphReading struct {
	t     *Trace
	i     int
	names Naming
	f     *Filter
	fail  func(error)
	late  bool // the contexts are asked for after other streams': what is kept aside waits on disk

	mu      sync.Mutex
	started bool          // the reading has begun
	ready   chan struct{} // and ended: sp and err are set
	sp      *split        // the stream read, its contexts' records kept aside
	err     error         // why it could not be read
	pending int           // the contexts yielded whose Events have not been read, and the yielding: sp is closed at 0
}

// newGraphReading returns stream i's reading, not begun.
func (t *Trace) newGraphReading(i int, names Naming, f *Filter, fail func(error)) *graphReading {
	return &graphReading{t: t, i: i, names: names, f: f, fail: fail, ready: make(chan struct{}), pending: 1}
}

// read reads the stream, its own stack's calls to own (nil: not
// wanted), unless its reading has begun: then it waits for it to end.
// It says whether it read.
func (g *graphReading) read(own Sink) bool {
	g.mu.Lock()
	begun := g.started
	g.started = true
	g.mu.Unlock()
	if begun {
		<-g.ready
		return false
	}
	g.sp, g.err = g.t.split(g.i, g.names.Namer(), g.f, own)
	if g.err == nil && g.late && own != nil {
		g.err = g.sp.spool.settle()
	}
	close(g.ready)
	return true
}

// release says one holder of what was kept aside is done with it: the
// last lets it go.
func (g *graphReading) release() {
	g.mu.Lock()
	g.pending--
	last := g.pending == 0
	g.mu.Unlock()
	if last {
		g.sp.close()
	}
}

// yieldOwn yields the ThreadCalls of the thread's own stack: false when
// yield said stop (the reading is then let go).
func (g *graphReading) yieldOwn(yield func(ThreadCalls) bool) bool {
	s := &g.t.Streams[g.i]
	own := ThreadCalls{Pid: s.Pid, Tid: s.Tid, Events: func(yield func(CallEvent) bool) {
		y := &yielder{yield: yield}
		if g.read(y) {
			g.fail(g.err)
			return
		}
		// Read already for the contexts (or not wanted for them): read
		// for the own stack alone.
		g.fail(g.t.WalkStream(g.i, g.names.Namer(), g.f, func(ctx uint64) Sink {
			if ctx == 0 {
				return y
			}
			return nil
		}))
	}}
	if yield(own) {
		return true
	}
	g.mu.Lock()
	begun := g.started
	g.started = true // the stream need not be read: an Events still to come reads its own stack's calls
	g.mu.Unlock()
	if begun {
		<-g.ready
	} else {
		close(g.ready)
	}
	g.release()
	return false
}

// yieldContexts yields the ThreadCalls of each context the thread ran,
// reading the stream unless its own stack's Events have: false when
// yield said stop or the stream could not be read.
func (g *graphReading) yieldContexts(yield func(ThreadCalls) bool) bool {
	g.read(nil)
	defer g.release()
	if g.err != nil {
		g.fail(g.err)
		return false
	}
	s := &g.t.Streams[g.i]
	for _, c := range g.sp.spool.order {
		g.mu.Lock()
		g.pending++
		g.mu.Unlock()
		var once sync.Once
		th := ThreadCalls{Pid: s.Pid, Tid: s.Tid, Context: c.ctx, Events: func(yield func(CallEvent) bool) {
			y := &yielder{yield: yield}
			g.fail(g.sp.walk(c, g.names.Namer(), y))
			once.Do(g.release)
		}}
		if !yield(th) {
			return false
		}
	}
	return true
}

// yielder hands a context's kept calls to an iterator's yield, until it
// says stop.
type yielder struct {
	yield func(CallEvent) bool
	stop  bool
}

// Enter yields the call's start.
func (y *yielder) Enter(fn, src string, ns float64, depth int) {
	y.stop = y.stop || !y.yield(CallEvent{Kind: CallEnter, Func: fn, NS: ns})
}

// Close yields the call's end, as the kind of its ending.
func (y *yielder) Close(how EndKind, fn string, start, ns float64) {
	k := CallExit
	switch how {
	case LeftEarly:
		k = CallUnwound
	case Running:
		k = CallOpen
	}
	// Untimed: its exit where it began, a call of no length.
	y.stop = y.stop || !y.yield(CallEvent{Kind: k, Func: fn, NS: ns})
}

// OffCPU yields a time off the CPU.
func (y *yielder) OffCPU(why OffReason, start, end float64, depth int) {
	y.stop = y.stop || !y.yield(CallEvent{Kind: CallOff, NS: start, End: end, Why: why})
}
