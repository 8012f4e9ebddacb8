package trace

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
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
// list in time order, named by names (the process's, symbols.LoadProcess:
// each call, and its caller, from the modules mapped when it was
// recorded). The list is held in memory: the commands merge the streams
// as they read them (WriteReplayCalls, ReportCalls); Events is for
// small traces and tests.
func Events(t *Trace, names Naming) []Event {
	var out []Event
	nm := names.Namer()
	for i := range t.Streams {
		s := &t.Streams[i]
		err := t.eachRecord(i, func(recs []Record) {
			for _, r := range recs {
				if _, sw := r.Context(); sw || (r.Kind() != Call && r.Kind() != Entry) {
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

// callFilter says whether the function tracer's call of fn at ns is
// kept: Funcs and Hide match the function itself (the function tracer
// has no callees to follow), TimeFrom and TimeTo its time.
func (f *Filter) callKept(fn string, ns float64) bool {
	switch {
	case f.Until && ns > f.TimeTo, ns < f.TimeFrom:
		return false
	case len(f.Funcs) > 0 && !match(f.Funcs, fn):
		return false
	}
	return len(f.Hide) == 0 || !match(f.Hide, fn)
}

// A cursor is a stream being merged: its reader, its current batch and
// the next record in it.
type cursor struct {
	i    int // the stream
	r    *StreamReader
	recs []Record
	k    int
}

// next moves to the stream's next call; false at its end.
func (c *cursor) next() (bool, error) {
	for {
		for ; c.k < len(c.recs); c.k++ {
			r := &c.recs[c.k]
			if _, sw := r.Context(); !sw && (r.Kind() == Call || r.Kind() == Entry) {
				return true, nil
			}
		}
		recs, err := c.r.Next()
		if err != nil || recs == nil {
			return false, err
		}
		c.recs, c.k = recs, 0
	}
}

// mergeCalls calls fn with every call (and graph entry) of the streams
// the filter keeps, in time order (streams in their order at equal
// times), reading every stream at once, each a chunk at a time: memory
// is bounded by the number of threads, not the trace's size.
func mergeCalls(t *Trace, f *Filter, fn func(s *Stream, r *Record) error) error {
	var curs []*cursor
	defer func() {
		for _, c := range curs {
			c.r.Close()
		}
	}()
	var streams []int
	for i := range t.Streams {
		if f.Tid == 0 || t.Streams[i].Tid == f.Tid {
			streams = append(streams, i)
		}
	}
	// All streams are open at once: 64 MiB of chunks between them.
	chunk := max(minChunk, min(DefaultChunk, (64<<20)/max(1, len(streams))))
	var heap []*cursor // a min-heap by (next record's time, stream)
	less := func(a, b *cursor) bool {
		ta, tb := a.recs[a.k].TS, b.recs[b.k].TS
		return ta < tb || ta == tb && a.i < b.i
	}
	down := func(j int) {
		for {
			l := 2*j + 1
			if l >= len(heap) {
				return
			}
			if r := l + 1; r < len(heap) && less(heap[r], heap[l]) {
				l = r
			}
			if !less(heap[l], heap[j]) {
				return
			}
			heap[j], heap[l] = heap[l], heap[j]
			j = l
		}
	}
	for _, i := range streams {
		r, err := t.OpenStream(i, chunk)
		if err != nil {
			return err
		}
		c := &cursor{i: i, r: r}
		curs = append(curs, c)
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap = append(heap, c)
		}
	}
	for j := len(heap)/2 - 1; j >= 0; j-- {
		down(j)
	}
	for len(heap) > 0 {
		c := heap[0]
		if err := fn(&t.Streams[c.i], &c.recs[c.k]); err != nil {
			return err
		}
		c.k++
		ok, err := c.next()
		if err != nil {
			return err
		}
		if !ok {
			heap[0] = heap[len(heap)-1]
			heap = heap[:len(heap)-1]
		}
		down(0)
	}
	return nil
}

// WriteReplayCalls prints a function trace as WriteReplay does, merging
// the streams by time as it reads them.
func WriteReplayCalls(w io.Writer, t *Trace, names Naming, f *Filter) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	fmt.Fprintf(bw, "# %10s  %7s  %s\n", "TIME(us)", "TID", "FUNCTION <- CALLER")
	nm := names.Namer()
	events := 0
	var line []byte
	err := mergeCalls(t, f, func(s *Stream, r *Record) error {
		fn := nm.FuncAt(r.IP, r.TS)
		ns := t.Meta.Nanos(r.TS)
		if !f.callKept(fn, ns) {
			return nil
		}
		events++
		line = appendPadded(line[:0], strconv.AppendFloat(nil, ns/1000, 'f', 3, 64), 12)
		line = append(line, "  "...)
		line = appendPadded(line, strconv.AppendInt(nil, int64(s.Tid), 10), 7)
		line = append(line, "  "...)
		line = append(line, fn...)
		line = append(line, " <- "...)
		line = append(line, nm.NameAt(r.Parent(), r.TS)...)
		if f.Source {
			line = appendSource(line, nm.SourceAt(r.IP, r.TS))
		}
		line = append(line, '\n')
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return writeSummary(w, t, events)
}

// appendPadded appends v right-aligned in width columns.
func appendPadded(b, v []byte, width int) []byte {
	for i := len(v); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, v...)
}

// ReportCalls counts a function trace's kept calls per function, most
// called first, reading the streams as it goes (several at once).
func ReportCalls(t *Trace, names Naming, f *Filter) ([]Count, int, error) {
	var mu sync.Mutex
	all := map[string]int{}
	err := forStreams(t, f, func(i int) error {
		nm := names.Namer()
		n := map[string]int{}
		err := t.EachRecord(i, func(recs []Record) {
			for _, r := range recs {
				if _, sw := r.Context(); sw || (r.Kind() != Call && r.Kind() != Entry) {
					continue
				}
				fn := nm.FuncAt(r.IP, r.TS)
				if f.callKept(fn, t.Meta.Nanos(r.TS)) {
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
