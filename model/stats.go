package model

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// A Stat is one function's line in the graph report.
type Stat struct {
	Func          string
	Calls         int
	Total, Self   float64 // ns
	Min, Max      float64 // ns: the shortest and the longest timed call (0 when none was)
	Unwound, Open int
	Untimed       int // calls whose return was not traced (trace.Untimed): in Calls, not in the times
	// Off and SelfOff are the parts of Total and Self the thread spent
	// off the CPU (the trace's scheduler events: asleep, or pre-empted),
	// ns: its calls waited that long, themselves or in their callees
	// (Off), or themselves (SelfOff). Total - Off ran on the CPU.
	Off, SelfOff float64
}

// statSink sums a context's kept calls per function into m.
type statSink struct {
	m      map[string]*Stat
	thresh float64
	stack  []statFrame // the open calls
}

// A statFrame is an open call's figures so far: the time of its kept
// callees, and the time off the CPU in it (off) and in it while it was
// the innermost kept call (selfOff).
type statFrame struct {
	inner, off, selfOff float64
}

// Enter opens a call: its callees' time starts at 0.
func (a *statSink) Enter(fn, src string, ns float64, depth int) {
	a.stack = append(a.stack, statFrame{})
}

// OffCPU adds a time off the CPU to the innermost open call's (none: a
// time outside every kept call, in no function's figures).
func (a *statSink) OffCPU(why trace.OffReason, start, end float64, depth int) {
	if k := len(a.stack) - 1; k >= 0 {
		a.stack[k].off += end - start
		a.stack[k].selfOff += end - start
	}
}

// Close adds the call to its function's figures, and its time to its
// caller's callees'.
func (a *statSink) Close(how trace.EndKind, fn string, start, ns float64) {
	k := len(a.stack) - 1
	fr := a.stack[k]
	inner := fr.inner
	a.stack = a.stack[:k]
	d := ns - start
	if k > 0 {
		a.stack[k-1].off += fr.off // within its caller's time, whatever is shown
	}
	if a.thresh > 0 && how != trace.Running && d < a.thresh {
		if k > 0 { // left out, and its callees with it: its time is its caller's own
			a.stack[k-1].selfOff += fr.off
		}
		return
	}
	s := a.m[fn]
	if s == nil {
		s = &Stat{Func: fn, Min: math.Inf(1), Max: math.Inf(-1)}
		a.m[fn] = s
	}
	s.Calls++
	if how == trace.Untimed {
		s.Untimed++ // counted, of no time
		if s.Calls == s.Untimed {
			s.Min, s.Max = 0, 0
		}
		return
	}
	if s.Calls == s.Untimed+1 { // its first timed call: the untimed ones set no bounds
		s.Min, s.Max = math.Inf(1), math.Inf(-1)
	}
	s.Total += d
	s.Self += d - inner
	s.Off += fr.off
	s.SelfOff += fr.selfOff
	s.Min, s.Max = min(s.Min, d), max(s.Max, d)
	switch how {
	case trace.LeftEarly:
		s.Unwound++
	case trace.Running:
		s.Open++
	}
	if k > 0 {
		a.stack[k-1].inner += d
	}
}

// statsOf makes the sorted list of m.
func statsOf(m map[string]*Stat) []Stat {
	out := make([]Stat, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Stat) int { return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Func, b.Func)) })
	return out
}

// Stats sums calls, total and self time per function over the trees,
// most total time first.
func Stats(threads []Thread) []Stat {
	m := map[string]*Stat{}
	for i := range threads {
		a := &statSink{m: m}
		WalkTrees(threads[i].Roots, trace.NewWalker(&trace.Meta{}, nil, &trace.Filter{}, func(uint64) trace.Sink { return a }))
	}
	return statsOf(m)
}

// merge adds the figures of o to m.
func merge(m map[string]*Stat, o map[string]*Stat) {
	for fn, s := range o {
		t := m[fn]
		if t == nil {
			c := *s
			m[fn] = &c
			continue
		}
		switch { // the bounds of the timed calls (trace.Untimed ones have none)
		case s.Calls == s.Untimed:
		case t.Calls == t.Untimed:
			t.Min, t.Max = s.Min, s.Max
		default:
			t.Min, t.Max = min(t.Min, s.Min), max(t.Max, s.Max)
		}
		t.Calls += s.Calls
		t.Total += s.Total
		t.Self += s.Self
		t.Off += s.Off
		t.SelfOff += s.SelfOff
		t.Unwound += s.Unwound
		t.Open += s.Open
		t.Untimed += s.Untimed
	}
}

// ReportGraph sums a function_graph trace's kept calls per function,
// most total time first, reading the streams as it goes (several at
// once): memory is bounded by the number of functions and the depth of
// the calls, not by the trace's size.
func ReportGraph(t *trace.Trace, names trace.Naming, f *trace.Filter) ([]Stat, error) {
	return ReportAll(t, names, f)
}

// ErrSortKey: an order was asked for by a key it does not know.
var ErrSortKey = errors.New("unknown sort key")

// SortStats orders a report by "total" (the default), "self", "calls",
// "avg", "min", "max", "name", or, for a trace with scheduler events,
// "offcpu" (the time off the CPU in each function's calls) or "oncpu"
// (the rest of their time).
func SortStats(stats []Stat, by string) error {
	var key func(s Stat) float64
	switch by {
	case "", "total":
		key = func(s Stat) float64 { return s.Total }
	case "self":
		key = func(s Stat) float64 { return s.Self }
	case "offcpu":
		key = func(s Stat) float64 { return s.Off }
	case "oncpu":
		key = func(s Stat) float64 { return s.Total - s.Off }
	case "calls":
		key = func(s Stat) float64 { return float64(s.Calls) }
	case "avg":
		key = func(s Stat) float64 { return s.Total / float64(max(s.Calls, 1)) }
	case "min":
		key = func(s Stat) float64 { return s.Min }
	case "max":
		key = func(s Stat) float64 { return s.Max }
	case "name":
		slices.SortFunc(stats, func(a, b Stat) int { return cmp.Compare(a.Func, b.Func) })
		return nil
	default:
		return fmt.Errorf("%w %q (want total, self, calls, avg, min, max, name, offcpu or oncpu)", ErrSortKey, by)
	}
	slices.SortFunc(stats, func(a, b Stat) int { return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(a.Func, b.Func)) })
	return nil
}

// Apply returns the threads and calls the filter keeps, as trees.
func Apply(f trace.Filter, threads []Thread) []Thread {
	var out []Thread
	for _, th := range threads {
		if !f.ThreadKept(th.Tid) {
			continue
		}
		b := &thresholdTree{treeSink: treeSink{th: Thread{Pid: th.Pid, Tid: th.Tid, Context: th.Context}}, thresh: f.Threshold}
		WalkTrees(th.Roots, trace.NewWalker(&trace.Meta{}, nil, &f, func(uint64) trace.Sink { return b }))
		out = append(out, b.th)
	}
	return out
}

// thresholdTree builds a tree of the calls a threshold keeps: a call
// shorter than it is taken out when it ends (with its callees, shorter
// still).
type thresholdTree struct {
	treeSink
	thresh float64
}

// Close ends the call, and takes it out of the tree when the threshold
// leaves it out.
func (b *thresholdTree) Close(how trace.EndKind, fn string, start, ns float64) {
	b.treeSink.Close(how, fn, start, ns)
	if b.thresh == 0 || how == trace.Running || ns-start >= b.thresh {
		return
	}
	if k := len(b.stack); k > 0 {
		p := b.stack[k-1]
		p.Children = p.Children[:len(p.Children)-1]
	} else {
		b.th.Roots = b.th.Roots[:len(b.th.Roots)-1]
	}
}

// ThreadStats are one thread's figures per function.
type ThreadStats struct {
	Pid, Tid int
	Stats    []Stat
}

// ReportThreads sums each thread's kept calls per function (function
// tracer: calls only), most total time first, threads in their order.
func ReportThreads(t *trace.Trace, names trace.Naming, f *trace.Filter) ([]ThreadStats, error) {
	out := make([]ThreadStats, len(t.Streams))
	err := t.ForStreams(f, func(i int) error {
		m, err := streamStats(t, i, names.Namer(), f)
		out[i] = ThreadStats{Pid: t.Streams[i].Pid, Tid: t.Streams[i].Tid, Stats: statsOf(m)}
		return err
	})
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for _, th := range out {
		if f.ThreadKept(th.Tid) {
			kept = append(kept, th)
		}
	}
	return kept, nil
}

// streamStats sums stream i's kept calls per function: graphed calls
// with their times, or the function tracer's calls.
func streamStats(t *trace.Trace, i int, names trace.Namer, f *trace.Filter) (map[string]*Stat, error) {
	m := map[string]*Stat{}
	if t.Meta.Tracer != abi.TracerGraphName {
		err := t.EachRecord(i, func(recs []trace.Record) {
			for _, r := range recs {
				if !r.IsCall() {
					continue
				}
				fn := names.FuncAt(r.IP, r.TS)
				if !f.CallKept(fn, t.Meta.Nanos(r.TS)) {
					continue
				}
				s := m[fn]
				if s == nil {
					s = &Stat{Func: fn}
					m[fn] = s
				}
				s.Calls++
			}
		})
		return m, err
	}
	byCtx := map[uint64]*statSink{}
	err := t.WalkStream(i, names, f, func(ctx uint64) trace.Sink {
		a := byCtx[ctx]
		if a == nil {
			a = &statSink{m: m, thresh: f.Threshold}
			byCtx[ctx] = a
		}
		return a
	})
	return m, err
}

// ReportAll sums the trace's kept calls per function, whichever its
// tracer (the function tracer's: calls only).
//
// The streams are summed on every core, each on its own, and their sums
// added in the streams' order, never in the order they finish: floating
// point addition is not associative, and the same trace must report the
// same figures on every run.
func ReportAll(t *trace.Trace, names trace.Naming, f *trace.Filter) ([]Stat, error) {
	per := make([]map[string]*Stat, len(t.Streams))
	err := t.ForStreams(f, func(i int) error {
		m, err := streamStats(t, i, names.Namer(), f)
		per[i] = m
		return err
	})
	if err != nil {
		return nil, err
	}
	all := map[string]*Stat{}
	for _, m := range per {
		merge(all, m)
	}
	return statsOf(all), nil
}

// A Change is one function's figures in two traces: a base and a new
// one (report NEW --diff BASE), and the change from the base to the new,
// negative where the new trace took less.
type Change struct {
	Func        string
	Base        Stat    // zero when the function made no call in the base trace
	New         Stat    // zero when it made none in the new trace
	TotalChange float64 // ns: New.Total - Base.Total
	SelfChange  float64 // ns: New.Self - Base.Self
	CallsChange int     // New.Calls - Base.Calls
}

// Diff pairs the functions of two reports, base's and new's, the
// biggest change in total time (or, without times, in calls) first.
func Diff(base, new []Stat) []Change {
	by := map[string]*Change{}
	for _, s := range base {
		by[s.Func] = &Change{Func: s.Func, Base: s}
	}
	for _, s := range new {
		c := by[s.Func]
		if c == nil {
			c = &Change{Func: s.Func}
			by[s.Func] = c
		}
		c.New = s
	}
	out := make([]Change, 0, len(by))
	for _, c := range by {
		c.TotalChange = c.New.Total - c.Base.Total
		c.SelfChange = c.New.Self - c.Base.Self
		c.CallsChange = c.New.Calls - c.Base.Calls
		out = append(out, *c)
	}
	abs := func(x float64) float64 { return math.Abs(x) }
	slices.SortFunc(out, func(a, b Change) int {
		return cmp.Or(cmp.Compare(abs(b.TotalChange), abs(a.TotalChange)),
			cmp.Compare(abs(float64(b.CallsChange)), abs(float64(a.CallsChange))), cmp.Compare(a.Func, b.Func))
	})
	return out
}

// MergeStats sums reports of several traces (a session's processes)
// per function, as one trace's threads are summed: most total time
// first.
func MergeStats(reports ...[]Stat) []Stat {
	m := map[string]*Stat{}
	for _, r := range reports {
		o := make(map[string]*Stat, len(r))
		for i := range r {
			o[r[i].Func] = &r[i]
		}
		merge(m, o)
	}
	return statsOf(m)
}
