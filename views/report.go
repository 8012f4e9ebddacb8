package views

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"

	"ftpatch/internal/escape"
	"ftpatch/model"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// Report writes report's tables of the trace in.Trace, named by
// in.Names, the calls in.Filter keeps: per function, its calls and, for
// function_graph, its total and self time (with opt.Avg its average,
// shortest and longest call), in opt.Sort's order, and the trace's
// summary; with opt.PerThread, a table per thread and no summary.
func Report(w io.Writer, in Input, opt Options) error {
	t := in.Trace
	graph := t.Meta.Tracer == abi.TracerGraphName
	switch {
	case opt.PerThread:
		return reportThreads(w, in, opt)
	case graph:
		stats, err := model.ReportGraph(t, in.Names, in.Filter)
		if err == nil {
			err = model.SortStats(stats, opt.Sort)
		}
		if err == nil {
			markStats(stats, in)
			err = WriteStats(w, t, stats, opt.Avg)
		}
		return err
	}
	counts, calls, err := model.ReportCalls(t, in.Names, in.Filter)
	if err == nil {
		markCounts(counts, in)
		err = WriteCounts(w, t, counts, calls)
	}
	return err
}

// LibraryMark follows the name of a library function's row in report's
// tables: a call into a shared library through a GOT slot (ftpatch
// record's library calls), told apart from the program's own functions.
// funclist.ParseReport reads a marked row's name without it.
const LibraryMark = " [lib]"

// A libraryNaming says which names are library functions' (symbols.Table).
type libraryNaming interface{ LibraryCall(name string) bool }

// libraryCall says whether name is a library function's in any of ins.
func libraryCall(name string, ins ...Input) bool {
	for _, in := range ins {
		if l, ok := in.Names.(libraryNaming); ok && l.LibraryCall(name) {
			return true
		}
	}
	return false
}

// markStats marks the rows of library functions (LibraryMark), once
// sorted: the mark is not part of the name the sort sees.
func markStats(stats []model.Stat, ins ...Input) {
	for i := range stats {
		if libraryCall(stats[i].Func, ins...) {
			stats[i].Func += LibraryMark
		}
	}
}

// markCounts is markStats of a function trace's counts.
func markCounts(counts []model.Count, ins ...Input) {
	for i := range counts {
		if libraryCall(counts[i].Func, ins...) {
			counts[i].Func += LibraryMark
		}
	}
}

// reportThreads writes a report per thread.
func reportThreads(w io.Writer, in Input, opt Options) error {
	t := in.Trace
	per, err := model.ReportThreads(t, in.Names, in.Filter)
	if err != nil {
		return err
	}
	for i, th := range per {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# thread %d (process %d)\n", th.Tid, th.Pid)
		if err := model.SortStats(th.Stats, opt.Sort); err != nil {
			return err
		}
		markStats(th.Stats, in)
		if err := WriteStatsTable(w, th.Stats, opt.Avg, t.Meta.Tracer == abi.TracerGraphName, t.HasSched()); err != nil {
			return err
		}
	}
	return nil
}

// Diff writes the change per function from the base trace,
// opt.Against, to the new one, in (report NEW --diff BASE, as uftrace
// reads it): each one's total and self time (function_graph) and calls,
// and the change from base to new, negative where the new trace took
// less, the biggest change first (model.Diff). Both are read as Report
// reads them, through in.Filter.
func Diff(w io.Writer, in Input, opt Options) error {
	return diffSessions(w, []Input{in}, opt)
}

// diffSessions is Diff of sessions: the new one's processes, news, and
// the base's (opt.AgainstAll, else opt.Against), each side's functions
// summed over its processes (model.MergeStats), named by the
// directories given.
func diffSessions(w io.Writer, news []Input, opt Options) error {
	bases := opt.AgainstAll
	if len(bases) == 0 {
		bases = []Input{*opt.Against}
	}
	filter := news[0].Filter
	side := func(ins []Input) ([]model.Stat, error) {
		var per [][]model.Stat
		for _, in := range ins {
			s, err := model.ReportAll(in.Trace, in.Names, filter)
			if err != nil {
				return nil, err
			}
			per = append(per, s)
		}
		return model.MergeStats(per...), nil
	}
	b, err := side(bases)
	if err != nil {
		return err
	}
	n, err := side(news)
	if err != nil {
		return err
	}
	return WriteDiff(w, cmp.Or(bases[0].Dir, bases[0].Trace.Dir), cmp.Or(news[0].Dir, news[0].Trace.Dir), model.Diff(b, n),
		news[0].Trace.Meta.Tracer == abi.TracerGraphName)
}

// WriteCounts prints the calls per function, and the trace's summary of
// calls in all.
func WriteCounts(w io.Writer, t *trace.Trace, counts []model.Count, calls int) error {
	if err := writeCountsTable(w, counts); err != nil {
		return err
	}
	return writeSummary(w, t, calls)
}

// writeCountsTable prints the calls per function, without a summary.
func writeCountsTable(w io.Writer, counts []model.Count) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CALLS\tFUNCTION")
	for _, c := range counts {
		fmt.Fprintf(tw, "%d\t%s\n", c.Calls, c.Func)
	}
	return tw.Flush()
}

// WriteStats prints the graph report: calls, total and self time (with
// avg, the average, shortest and longest call instead of the self time),
// and the trace's summary.
func WriteStats(w io.Writer, t *trace.Trace, stats []model.Stat, avg bool) error {
	if err := WriteStatsTable(w, stats, avg, true, t.HasSched()); err != nil {
		return err
	}
	calls := 0
	for _, s := range stats {
		calls += s.Calls
	}
	return writeSummary(w, t, calls)
}

// WriteStatsTable prints figures per function without the trace's
// summary: calls, and with times (function_graph) total and self, or
// with avg the average, shortest and longest call; with offcpu (a trace
// with scheduler events) the total split into the time on the CPU and
// the time off it.
func WriteStatsTable(w io.Writer, stats []model.Stat, avg, times, offcpu bool) error {
	bw := bufio.NewWriter(w)
	switch {
	case !times:
		fmt.Fprintf(bw, "%8s  %s\n", "CALLS", "FUNCTION")
	case avg:
		fmt.Fprintf(bw, "%10s  %10s  %10s  %10s  %8s  %s\n", "TOTAL", "AVG", "MIN", "MAX", "CALLS", "FUNCTION")
	case offcpu:
		fmt.Fprintf(bw, "%10s  %10s  %10s  %10s  %8s  %s\n", "TOTAL", "ON-CPU", "OFF-CPU", "SELF", "CALLS", "FUNCTION")
	default:
		fmt.Fprintf(bw, "%10s  %10s  %8s  %s\n", "TOTAL", "SELF", "CALLS", "FUNCTION")
	}
	for _, s := range stats {
		switch {
		case !times:
			fmt.Fprintf(bw, "%8d  %s\n", s.Calls, s.Func)
		case avg:
			fmt.Fprintf(bw, "%s  %s  %s  %s  %8d  %s\n", dur(s.Total), dur(s.Total/float64(max(s.Calls, 1))), dur(s.Min), dur(s.Max), s.Calls, s.Func)
		case offcpu:
			fmt.Fprintf(bw, "%s  %s  %s  %s  %8d  %s\n", dur(s.Total), dur(max(s.Total-s.Off, 0)), dur(s.Off), dur(s.Self), s.Calls, s.Func)
		default:
			fmt.Fprintf(bw, "%s  %s  %8d  %s\n", dur(s.Total), dur(s.Self), s.Calls, s.Func)
		}
	}
	return bw.Flush()
}

// WriteDiff prints a diff of two reports, headed with the base trace's
// name and the new one's: per function, the total time, the self time
// (both with times: function_graph) and the calls in the base and in the
// new trace, each followed by its change from base to new (negative:
// the new trace took less, or made fewer calls), the total's also as a
// share of the base's ("new" and "gone" for a function only one trace
// called).
func WriteDiff(w io.Writer, base, new string, changes []model.Change, times bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# base: %s\n# new:  %s\n# CHANGE is new - base: negative where the new trace took less time or made fewer calls\n", escape.Text(base), escape.Text(new))
	if !times {
		fmt.Fprintf(bw, "%10s  %10s  %8s  %s\n", "CALLS BASE", "CALLS NEW", "CHANGE", "FUNCTION")
		for _, c := range changes {
			fmt.Fprintf(bw, "%10d  %10d  %+8d  %s\n", c.Base.Calls, c.New.Calls, c.CallsChange, c.Func)
		}
		return bw.Flush()
	}
	fmt.Fprintf(bw, "%10s  %10s  %11s  %8s  %10s  %10s  %11s  %10s  %10s  %8s  %s\n",
		"TOTAL BASE", "TOTAL NEW", "CHANGE", "", "SELF BASE", "SELF NEW", "CHANGE", "CALLS BASE", "CALLS NEW", "CHANGE", "FUNCTION")
	for _, c := range changes {
		pct := "        "
		switch {
		case c.Base.Calls == 0:
			pct = "     new"
		case c.New.Calls == 0:
			pct = "    gone"
		case c.Base.Total > 0:
			pct = fmt.Sprintf("%+7.1f%%", 100*c.TotalChange/c.Base.Total)
		}
		fmt.Fprintf(bw, "%s  %s  %s  %s  %s  %s  %s  %10d  %10d  %+8d  %s\n",
			dur(c.Base.Total), dur(c.New.Total), signedDur(c.TotalChange), pct,
			dur(c.Base.Self), dur(c.New.Self), signedDur(c.SelfChange),
			c.Base.Calls, c.New.Calls, c.CallsChange, c.Func)
	}
	return bw.Flush()
}

// signedDur formats a change of duration as dur does, eleven columns,
// its sign before its first digit: "  -1.500 us", "+120.000 ms".
func signedDur(ns float64) string {
	sign := byte('+')
	if ns < 0 {
		sign, ns = '-', -ns
	}
	b := appendDur([]byte{' '}, ns)
	i := 0
	for b[i+1] == ' ' {
		i++
	}
	b[i] = sign
	return string(b)
}

// flushSummary ends a text view written through bw to w: unless err
// (what writing it returned), bw flushed and the trace's summary after
// it, calls the calls the view showed.
func flushSummary(bw *bufio.Writer, w io.Writer, t *trace.Trace, calls int, err error) error {
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return writeSummary(w, t, calls)
}

// writeSummary writes the trace's summary line: the calls shown (as
// info counts them), its threads, the sites traced and what the runtime
// could not trace (calls it dropped, too deep to graph, unwound).
func writeSummary(w io.Writer, t *trace.Trace, calls int) error {
	m := &t.Meta
	_, err := fmt.Fprintf(w, "# %s in %s; %d of %d sites traced", plural(calls, "call", "calls"), plural(len(t.Streams), "thread", "threads"), m.Enabled, m.Sites)
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
		_, err = fmt.Fprintf(w, "; %d calls DROPPED (see the warnings)", m.Dropped)
	}
	fmt.Fprintln(w)
	return err
}
