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
// them. Each context after the thread's own stack reads the stream
// again, and is known only once the own stack's calls have been read:
// a trace whose program made contexts (Meta.Contexts) must have each
// ThreadCalls' Events read before the next is asked for; without
// contexts, the Events of several may be read at once, on several
// goroutines. Memory is bounded by the calls' depth, not the trace's
// size. A stream that cannot be read ends the sequence; its error is
// *err (set by the goroutine reading it).
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
// when yield said stop. A failure to read the stream goes to fail.
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
	var order []uint64 // contexts after the own stack's, in the order first run
	known := map[uint64]bool{0: true}
	for k := -1; k < len(order); k++ {
		ctx := uint64(0)
		if k >= 0 {
			ctx = order[k]
		}
		th := ThreadCalls{Pid: s.Pid, Tid: s.Tid, Context: ctx, Events: func(yield func(CallEvent) bool) {
			y := &yielder{yield: yield}
			e := t.WalkStream(i, names.Namer(), f, func(c uint64) Sink {
				if !known[c] {
					known[c] = true
					order = append(order, c)
				}
				if c == ctx {
					return y
				}
				return nil
			})
			fail(e)
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
