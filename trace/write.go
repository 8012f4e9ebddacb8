package trace

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
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
// list in time order, named by syms (the process's, from LoadProcess:
// each call, and its caller, from the modules mapped when it was
// recorded).
func Events(t *Trace, syms *Symbols) []Event {
	var out []Event
	for _, s := range t.Streams {
		for _, r := range s.Records {
			if _, sw := r.Context(); sw || (r.Kind() != Call && r.Kind() != Entry) {
				continue
			}
			out = append(out, Event{
				Pid: s.Pid, Tid: s.Tid, Nanos: t.Meta.Nanos(r.TS),
				Func:   syms.FuncAt(r.IP, r.TS),
				Caller: syms.NameAt(r.Parent(), r.TS),
			})
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.Nanos, b.Nanos) })
	return out
}

// WriteReplay prints the function trace: one line per call, in time
// order, with the thread and the caller.
func WriteReplay(w io.Writer, t *Trace, events []Event) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %10s  %7s  %s\n", "TIME(us)", "TID", "FUNCTION <- CALLER")
	for _, e := range events {
		fmt.Fprintf(bw, "%12.3f  %7d  %s <- %s\n", e.Nanos/1000, e.Tid, e.Func, e.Caller)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return writeSummary(w, t, len(events))
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

// WriteReport prints the calls per function.
func WriteReport(w io.Writer, t *Trace, counts []Count, events int) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CALLS\tFUNCTION")
	for _, c := range counts {
		fmt.Fprintf(tw, "%d\t%s\n", c.Calls, c.Func)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeSummary(w, t, events)
}

func writeSummary(w io.Writer, t *Trace, events int) error {
	m := &t.Meta
	threads := "threads"
	if len(t.Streams) == 1 {
		threads = "thread"
	}
	_, err := fmt.Fprintf(w, "# %d events in %d %s; %d of %d sites traced", events, len(t.Streams), threads, m.Enabled, m.Sites)
	if m.Unsupported > 0 {
		_, err = fmt.Fprintf(w, ", %d matched but not traceable yet (sites after the prologue: -pg without -mfentry)", m.Unsupported)
	}
	if m.Skipped+m.Failed > 0 {
		_, err = fmt.Fprintf(w, ", %d skipped (unexpected bytes), %d could not be written", m.Skipped, m.Failed)
	}
	if m.Overflow > 0 {
		_, err = fmt.Fprintf(w, "; %d calls too deep to graph (shadow stack full)", m.Overflow)
	}
	if m.Unwound > 0 {
		_, err = fmt.Fprintf(w, "; %d graphed calls unwound by longjmp or an exception (no exit time)", m.Unwound)
	}
	if m.Dropped > 0 {
		_, err = fmt.Fprintf(w, "; %d events DROPPED (see the warnings)", m.Dropped)
	}
	fmt.Fprintln(w)
	return err
}
