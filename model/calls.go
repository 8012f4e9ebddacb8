package model

import (
	"cmp"
	"slices"
	"sync"

	"ftpatch/trace"
)

// An Event is a record placed in the whole trace: its thread, its time
// and the names of its function and caller.
type Event struct {
	Pid, Tid int
	Nanos    float64 // since tracing started
	Func     string  // the function called
	Caller   string  // where it was called from: function+offset
}

// Events merges the calls (and graph entries) of all streams into one
// list in time order, named by names (the process's, symbols.LoadProcess:
// each call, and its caller, from the modules mapped when it was
// recorded). The list is held in memory: the commands merge the streams
// as they read them (views.ReplayCalls, ReportCalls); Events is for
// small traces and tests.
func Events(t *trace.Trace, names trace.Naming) []Event {
	var out []Event
	nm := names.Namer()
	for i := range t.Streams {
		s := &t.Streams[i]
		err := t.Each(i, func(recs []trace.Record) {
			for _, r := range recs {
				if !r.IsCall() {
					continue
				}
				out = append(out, Event{
					Pid: s.Pid, Tid: s.Tid, Nanos: t.Meta.Nanos(r.TS),
					Func:   nm.FuncAt(r.IP, r.TS),
					Caller: nm.NameAt(r.Parent(), r.TS),
				})
			}
		})
		if err != nil {
			continue // a stream that cannot be read: Read reported it
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.Nanos, b.Nanos) })
	return out
}

// A Count is one function's line in the report.
type Count struct {
	Func  string
	Calls int
}

// Counts tallies the calls per function, most called first.
func Counts(events []Event) []Count {
	n := map[string]int{}
	for _, e := range events {
		n[e.Func]++
	}
	out := make([]Count, 0, len(n))
	for f, c := range n {
		out = append(out, Count{f, c})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Func, b.Func)) })
	return out
}

// ReportCalls counts a function trace's kept calls per function, most
// called first, reading the streams as it goes (several at once).
func ReportCalls(t *trace.Trace, names trace.Naming, f *trace.Filter) ([]Count, int, error) {
	var mu sync.Mutex
	all := map[string]int{}
	err := t.ForStreams(f, func(i int) error {
		nm := names.Namer()
		n := map[string]int{}
		err := t.EachRecord(i, func(recs []trace.Record) {
			for _, r := range recs {
				if !r.IsCall() {
					continue
				}
				fn := nm.FuncAt(r.IP, r.TS)
				if f.CallKept(fn, t.Meta.Nanos(r.TS)) {
					n[fn]++
				}
			}
		})
		mu.Lock()
		for fn, c := range n {
			all[fn] += c
		}
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Count, 0, len(all))
	events := 0
	for fn, c := range all {
		out = append(out, Count{fn, c})
		events += c
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Func, b.Func)) })
	return out, events, nil
}

// MergeCounts sums counts of several traces (a session's processes) per
// function: most called first.
func MergeCounts(counts ...[]Count) []Count {
	all := map[string]int{}
	for _, c := range counts {
		for _, x := range c {
			all[x.Func] += x.Calls
		}
	}
	out := make([]Count, 0, len(all))
	for fn, c := range all {
		out = append(out, Count{fn, c})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Func, b.Func)) })
	return out
}
