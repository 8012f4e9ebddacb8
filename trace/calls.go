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
	Func string  // the call's function (for an end: the call it ends)
	NS   float64 // ns since tracing started
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
)

// Ends says whether an event of kind k ends the innermost open call
// (CallExit, CallUnwound, CallOpen).
func (k CallKind) Ends() bool { return k == CallExit || k == CallUnwound || k == CallOpen }

var callKindNames = [...]string{CallEnter: "enter", CallExit: "exit", CallUnwound: "unwound", CallOpen: "open", CallOnly: "call"}

// String names the kind: "enter", "exit", "unwound", "open", "call".
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

// Threads yields each thread's kept calls, streams in order, a thread's
// own stack's calls and then each context's, in the order it first ran
// them. A stream is read once, by its own stack's Events (or, when they
// are not read before the next ThreadCalls is asked for, then), which
// keep its contexts' records aside for theirs (in memory, then a
// temporary file): the contexts are known only once the own stack's
// calls have been read, so a trace whose program made contexts
// (Meta.Contexts) must have each ThreadCalls' Events read before the
// next is asked for; without contexts, the Events of several may be read
// at once, on several goroutines. Memory is bounded by the calls' depth
// and the number of contexts, not the trace's size, and the work is
// linear in its size. A stream that cannot be read ends the sequence;
// its error is *err (set by the goroutine reading it).
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
		for i := range t.Streams {
			if f.Tid != 0 && t.Streams[i].Tid != f.Tid {
				continue
			}
			if !t.streamThreads(i, names, f, fail, yield) {
				return
			}
		}
	}
}

// streamThreads yields stream i's ThreadCalls, as Threads does: false
// when yield said stop, or the stream could not be read. A failure to
// read the stream goes to fail.
func (t *Trace) streamThreads(i int, names Naming, f *Filter, fail func(error), yield func(ThreadCalls) bool) bool {
	s := &t.Streams[i]
	if t.Meta.Tracer != abi.TracerGraphName {
		th := ThreadCalls{Pid: s.Pid, Tid: s.Tid, Events: func(yield func(CallEvent) bool) {
			nm := names.Namer()
			stop := false
			e := t.EachRecord(i, func(recs []Record) {
				for _, r := range recs {
					if _, sw := r.Context(); stop || sw || (r.Kind() != Call && r.Kind() != Entry) {
						continue
					}
					fn, ns := nm.FuncAt(r.IP, r.TS), t.Meta.Nanos(r.TS)
					if f.CallKept(fn, ns) && !yield(CallEvent{CallOnly, fn, ns}) {
						stop = true
					}
				}
			})
			fail(e)
		}}
		return yield(th)
	}
	var (
		mu      sync.Mutex
		started bool                  // the stream's one reading has begun
		ready   = make(chan struct{}) // and ended: sp and spErr are set
		sp      *split                // the stream read, its contexts' records kept aside
		spErr   error                 // why it could not be read
		pending = 1                   // the contexts yielded whose Events have not been read, and this function: sp is closed at 0
	)
	split := func(own Sink) bool { // reads the stream unless begun: whether it did
		mu.Lock()
		begun := started
		started = true
		mu.Unlock()
		if begun {
			<-ready
			return false
		}
		sp, spErr = t.split(i, names.Namer(), f, own)
		close(ready)
		return true
	}
	release := func() {
		mu.Lock()
		pending--
		last := pending == 0
		mu.Unlock()
		if last {
			sp.close()
		}
	}
	own := ThreadCalls{Pid: s.Pid, Tid: s.Tid, Events: func(yield func(CallEvent) bool) {
		y := &yielder{yield: yield}
		if split(y) {
			fail(spErr)
			return
		}
		// Read already for the contexts (or not wanted for them): read
		// for the own stack alone.
		fail(t.WalkStream(i, names.Namer(), f, func(ctx uint64) Sink {
			if ctx == 0 {
				return y
			}
			return nil
		}))
	}}
	if !yield(own) {
		mu.Lock()
		begun := started
		started = true // the stream need not be read: an Events still to come reads its own stack's calls
		mu.Unlock()
		if begun {
			<-ready
		} else {
			close(ready)
		}
		release()
		return false
	}
	split(nil)
	defer release()
	if spErr != nil {
		fail(spErr)
		return false
	}
	for _, c := range sp.spool.order {
		mu.Lock()
		pending++
		mu.Unlock()
		var once sync.Once
		th := ThreadCalls{Pid: s.Pid, Tid: s.Tid, Context: c.ctx, Events: func(yield func(CallEvent) bool) {
			y := &yielder{yield: yield}
			fail(sp.walk(c, names.Namer(), y))
			once.Do(release)
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
	y.stop = y.stop || !y.yield(CallEvent{CallEnter, fn, ns})
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
	y.stop = y.stop || !y.yield(CallEvent{k, fn, ns})
}
