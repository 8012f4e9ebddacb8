// Package viewcheck reads back what the timeline views write, for tests:
// the calls a Chrome trace-event JSON or a Perfetto protobuf trace holds,
// checking on the way what a viewer relies on (every call an event of its
// own, callees within their callers on each thread, names and tracks
// declared before they are used), and the calls an Input holds, for the
// two to be compared. It also renders an SVG with a real renderer
// (rsvg-convert) and lists its frames.
package viewcheck

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"ftpatch/runtime/abi"
	"ftpatch/trace"
	"ftpatch/views"
)

// A Call is one call as a timeline shows it.
type Call struct {
	Pid, Tid   int
	Context    uint64
	Func       string
	Start, End int64  // ns since the trace's start, rounded
	Depth      int    // 0: an outermost call of its thread
	Note       string // "unwound", "open" or ""
	Instant    bool   // a function trace's call: no duration
}

func (c Call) String() string {
	return fmt.Sprintf("%d/%d/%d %s [%d,%d] depth %d %s", c.Pid, c.Tid, c.Context, c.Func, c.Start, c.End, c.Depth, c.Note)
}

// Sort orders calls by thread, start, depth: the order Expected gives.
func Sort(calls []Call) {
	slices.SortStableFunc(calls, func(a, b Call) int {
		return cmp.Or(cmp.Compare(a.Pid, b.Pid), cmp.Compare(a.Tid, b.Tid), cmp.Compare(a.Context, b.Context),
			cmp.Compare(a.Start, b.Start), cmp.Compare(a.Depth, b.Depth), cmp.Compare(a.Func, b.Func))
	})
}

// Expected is the calls of in, as the timelines should show them.
func Expected(in views.Input) []Call {
	var out []Call
	round := func(ns float64) int64 { return int64(math.Round(max(ns, 0))) }
	for th := range in.Threads {
		var open []int // indexes in out
		var last float64
		for ev := range th.Events {
			last = ev.NS
			switch ev.Kind {
			case views.Off: // no call; the thread's last event its end, when last
				last = max(ev.NS, ev.End)
			case views.Enter:
				open = append(open, len(out))
				out = append(out, Call{Pid: th.Pid, Tid: th.Tid, Context: th.Context, Func: ev.Func, Start: round(ev.NS), Depth: len(open) - 1})
			case views.Call:
				out = append(out, Call{Pid: th.Pid, Tid: th.Tid, Context: th.Context, Func: ev.Func, Start: round(ev.NS), End: round(ev.NS), Depth: len(open), Instant: true})
			default:
				if len(open) == 0 {
					continue
				}
				c := &out[open[len(open)-1]]
				open = open[:len(open)-1]
				c.End = max(round(ev.NS), c.Start)
				switch ev.Kind {
				case views.Unwound:
					c.Note = "unwound"
				case views.Open:
					c.Note = "open"
				}
			}
		}
		for _, i := range slices.Backward(open) {
			out[i].End, out[i].Note = max(round(last), out[i].Start), "open"
		}
	}
	Sort(out)
	return out
}

// A State is a time a timeline shows its thread in one state: off the
// CPU ("sleeping", and Chrome's "pre-empted" or Perfetto's "runnable
// (pre-empted)"), or on it (Perfetto's "running").
type State struct {
	Pid, Tid   int
	Context    uint64
	State      string
	Start, End int64 // ns since the trace's start, rounded
}

func (s State) String() string {
	return fmt.Sprintf("%d/%d/%d %s [%d,%d]", s.Pid, s.Tid, s.Context, s.State, s.Start, s.End)
}

// SortStates orders states by thread and start.
func SortStates(states []State) {
	slices.SortStableFunc(states, func(a, b State) int {
		return cmp.Or(cmp.Compare(a.Pid, b.Pid), cmp.Compare(a.Tid, b.Tid), cmp.Compare(a.Context, b.Context),
			cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
	})
}

// ExpectedStates is the states of in's threads as the timeline view
// ("chrome" or "perfetto") should show them: each time off the CPU, up
// to the thread's next event at most, named for why; and for Perfetto,
// where a function_graph trace recorded scheduler events (its metadata
// says so, or it holds some), on a thread's own stack (not a context's), "running"
// over each run of
// its calls' events between two times off the CPU, from the end of the
// one before (or the run's first event) to the start of the one after
// (or the run's last event; a call still open at the end is no event of
// its own).
func ExpectedStates(in views.Input, timeline string) []State {
	round := func(ns float64) int64 { return int64(math.Round(max(ns, 0))) }
	preempted := "pre-empted"
	if timeline == "perfetto" {
		preempted = "runnable (pre-empted)"
	}
	sched := (in.Meta.Sched == abi.SchedOn || in.Trace != nil && in.Trace.HasSched()) && in.Meta.Tracer != abi.TracerFunctionName
	var out []State
	for th := range in.Threads {
		add := func(name string, from, to float64) {
			out = append(out, State{Pid: th.Pid, Tid: th.Tid, Context: th.Context, State: name, Start: round(from), End: round(to)})
		}
		evs := slices.Collect(th.Events)
		running := timeline == "perfetto" && sched && th.Context == 0
		inRun := false       // a run of calls' events is being read
		var from, to float64 // its first event, or the time off the CPU's end before it; its last event
		offEnd := math.NaN() // the end of the last time off the CPU
		for i, ev := range evs {
			switch ev.Kind {
			case views.Off:
				end := ev.End
				if i+1 < len(evs) {
					end = min(end, evs[i+1].NS)
				}
				end = max(end, ev.NS)
				if running && inRun {
					add("running", from, ev.NS)
				}
				name := "sleeping"
				if ev.Why == trace.Preempted {
					name = preempted
				}
				add(name, ev.NS, end)
				inRun, offEnd = false, end
			case views.Open:
			default:
				if !inRun {
					inRun, from = true, ev.NS
					if !math.IsNaN(offEnd) {
						from = offEnd
					}
				}
				to = ev.NS
			}
		}
		if running && inRun {
			add("running", from, to)
		}
	}
	SortStates(out)
	return out
}

// DiffStates describes how got differs from want (both sorted), or is
// "".
func DiffStates(want, got []State) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("state %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d states, want %d: got %v, want %v", len(got), len(want), got, want)
	}
	return ""
}

// Diff describes how got differs from want (both sorted), or is "".
func Diff(want, got []Call) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("call %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d calls, want %d", len(got), len(want))
	}
	return ""
}

// nest gives each call of one thread, sorted by start and then outer
// first, its depth, checking that each lies within the one it nests in:
// a call nests in the innermost still running when it starts (one
// starting at another's end nests in it only when it takes no time).
func nest(calls []*Call) error {
	var st []*Call
	for _, c := range calls {
		for len(st) > 0 {
			top := st[len(st)-1]
			if c.Start < top.End || (c.Start == top.End && c.End == c.Start && !c.Instant) {
				break
			}
			st = st[:len(st)-1]
		}
		if len(st) > 0 && c.End > st[len(st)-1].End {
			return fmt.Errorf("%v overlaps %v without nesting in it", *c, *st[len(st)-1])
		}
		c.Depth = len(st)
		if !c.Instant {
			st = append(st, c)
		}
	}
	return nil
}
