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
