package trace

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// A Filter selects the calls replay, report and the views show. A call
// is kept when every condition holds; a call left out by Depth,
// Threshold, Hide, or by being outside every Funcs call takes its
// callees with it, one left out only by TimeFrom/TimeTo does not: its
// callees are shown (one level up).
type Filter struct {
	Tids      []int   // only these threads (none: all)
	Depth     int     // only calls at most this deep (0: any): 1 is a thread's roots, or with Funcs, the chosen calls
	Threshold float64 // ns: only calls that took at least this long (0: all); calls still running at the end are kept
	// Funcs: only calls of a function matching one of these globs and
	// what they call (a subtree filter, as uftrace's -F).
	Funcs []string
	// Hide: no call of a function matching one of these globs, nor
	// what it calls (uftrace's -N).
	Hide []string
	// TimeFrom, TimeTo: only calls that began within [TimeFrom, TimeTo]
	// (ns since tracing started); TimeTo only when Until is set, else to
	// the end.
	TimeFrom, TimeTo float64
	Until            bool
	// Source: give each call its source file and line (replay --srcline).
	Source bool
}

// ThreadKept says whether the filter keeps the thread tid (Tids).
func (f *Filter) ThreadKept(tid int) bool {
	return len(f.Tids) == 0 || slices.Contains(f.Tids, tid)
}

// ParseGlobs checks a list of globs (path.Match syntax) and returns it.
func ParseGlobs(globs []string) ([]string, error) {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("bad pattern %q: %w", g, err)
		}
	}
	return globs, nil
}

// match says whether the function name matches one of the globs: the
// whole name, or, for a demangled C++ name with its parameter list, the
// name without it.
func match(globs []string, name string) bool {
	short := name
	if i := strings.IndexByte(name, '('); i > 0 {
		short = name[:i]
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, short); ok && short != name {
			return true
		}
	}
	return false
}

// A Namer names a trace's run-time addresses as they were when a record
// was made (ts, the record's time: a shared object may have been mapped
// there then and not later). The reader asks it for the function of each
// call it walks; symbols.Table gives one. One per goroutine: it may
// remember names without a lock.
type Namer interface {
	FuncAt(addr, ts uint64) string   // the function holding addr, or the bare address
	NameAt(addr, ts uint64) string   // function+0xoff, or the bare address
	SourceAt(addr, ts uint64) string // its function's source file:line, or ""
}

// Naming gives each goroutine reading a trace a Namer of its own: what
// the reader takes to name calls, so that it needs nothing from the
// package that reads symbol tables (which comes after it).
type Naming interface {
	Namer() Namer
}

// A Sink receives one context's kept calls from a Walker, in order:
// each Enter is closed by one Close, innermost first. What the model
// sums and what replay prints are sinks: the walk and its filters are
// the reader's, once.
type Sink interface {
	// Enter: a kept call of fn began at ns, depth levels deep (1: a
	// root); src is its source position when the walk was asked for
	// them (Filter.Source), else "".
	Enter(fn, src string, ns float64, depth int)
	// Close: the innermost kept call ended at ns, how says how
	// (Returned, LeftEarly, Running: still running at the thread's
	// last event, or Untimed: a call whose return was not traced, closed
	// where it began), having begun at start.
	Close(how EndKind, fn string, start, ns float64)
}

// A DataSink is a Sink that shows what FTRACE_ARGS and FTRACE_RETVAL
// recorded: Args, right after the Enter of a kept call, its arguments;
// Ret, right before the Close of one that returned, its return value
// (the runtime's formatting: "3, \"abc\"", "7").
type DataSink interface {
	Sink
	Args(args string)
	Ret(ret string)
}

// An OffCPUSink is a Sink told when its thread was off the CPU (the
// trace's scheduler events): OffCPU comes between the Enter and Close of
// the calls that were running then, start and end in ns since tracing
// began, depth the innermost kept call's (0: none was open). A time off
// the CPU inside a call the filter hides (Hide, Depth) is its kept
// callers'; one outside every Funcs call is left out.
type OffCPUSink interface {
	Sink
	OffCPU(why OffReason, start, end float64, depth int)
}

// An EndKind says how a graphed call ended.
type EndKind uint8

// How calls end.
const (
	Returned  EndKind = iota // it returned
	LeftEarly                // its frame was left without returning: longjmp or an exception
	Running                  // it had not returned when its thread's trace ended
	Untimed                  // recorded as a plain call in a graph trace: the tracer could not hook its return, so when it returned is not known
)

// frame is an open call as the walk sees it.
type frame struct {
	fn    string
	start float64
	kept  bool
	depth int  // of a kept call: its depth as shown; of another, its kept ancestors'
	in    bool // a call of Funcs is open here or below
	hide  bool
}

// A Walker turns one thread's graph records into its contexts' kept
// calls, through a Filter, handing them to the Sink of each context: the
// one walk that replay, report and the views share. It keeps the open
// calls of each context, so its memory is bounded by their depth.
type Walker struct {
	m      *Meta
	names  Namer
	f      *Filter
	stacks map[uint64][]frame // the other contexts' open calls
	stack  []frame            // the current context's
	ctx    uint64
	sinks  func(ctx uint64) Sink // nil: the context is not wanted
	cur    Sink
	last   float64 // ns of the thread's last event
}

// NewWalker returns a Walker of a thread of the trace whose metadata is
// m (its clock converts times to ns), naming calls with names (nil when
// only Push and Pop are used: a walk of calls already named), keeping
// what f keeps, and handing each context's kept calls to sinks(ctx)
// (nil: the context is not wanted).
func NewWalker(m *Meta, names Namer, f *Filter, sinks func(ctx uint64) Sink) *Walker {
	w := &Walker{m: m, names: names, f: f, stacks: map[uint64][]frame{}, sinks: sinks}
	w.cur = sinks(0)
	return w
}

// Records walks a batch of a stream's records.
func (w *Walker) Records(recs []Record) {
	m := w.m
	for _, r := range recs {
		if o, ok := r.OffCPU(); ok {
			w.offCPU(o)
			continue
		}
		ns := m.Nanos(r.TS)
		w.last = ns
		if id, ok := r.Context(); ok {
			w.stacks[w.ctx] = w.stack
			w.ctx = id
			w.stack = w.stacks[id]
			w.cur = w.sinks(id)
			continue
		}
		switch r.Kind() {
		case Entry:
			src := ""
			if w.f.Source {
				src = w.names.SourceAt(r.IP, r.TS)
			}
			w.Push(w.names.FuncAt(r.IP, r.TS), src, ns)
			w.data(r.Data, false)
		case Exit:
			w.data(r.Data, true)
			w.Pop(Returned, ns)
		case Unwound:
			w.Pop(LeftEarly, ns)
		case Call:
			// In a graph trace: a call the tracer recorded without
			// hooking its return (arm64's -pg site whose prologue it
			// could not read; any call while a context's stack was
			// unknown). It is shown where it was made, untimed.
			src := ""
			if w.f.Source {
				src = w.names.SourceAt(r.IP, r.TS)
			}
			w.Push(w.names.FuncAt(r.IP, r.TS), src, ns)
			w.data(r.Data, false)
			w.Pop(Untimed, ns)
		}
	}
}

// offCPU hands a time off the CPU to the current context's sink, when
// it shows them. One that lasted until the trace ended (In 0) ends
// there; the thread's last event is then its end.
func (w *Walker) offCPU(o OffCPU) {
	m := w.m
	start, end := m.Nanos(o.Out), m.OffEnd(o)
	w.last = max(w.last, end)
	s, ok := w.cur.(OffCPUSink)
	if !ok {
		return
	}
	f := w.f
	depth := 0
	if n := len(w.stack); n > 0 {
		fr := &w.stack[n-1]
		if len(f.Funcs) > 0 && !fr.in {
			return
		}
		depth = fr.depth
	} else if len(f.Funcs) > 0 {
		return
	}
	if !f.OffKept(start, end) {
		return
	}
	s.OffCPU(o.Why, start, end, depth)
}

// data hands a kept innermost call's arguments (ret: its return value)
// to a sink that shows them.
func (w *Walker) data(d string, ret bool) {
	if d == "" || len(w.stack) == 0 || !w.stack[len(w.stack)-1].kept {
		return
	}
	if ds, ok := w.cur.(DataSink); ok {
		if ret {
			ds.Ret(d)
		} else {
			ds.Args(d)
		}
	}
}

// Push opens a call of fn at ns in the current context (src: its source
// position, or ""): what Records does for an Entry, and a walk of calls
// already named (a call tree's) does itself.
func (w *Walker) Push(fn, src string, ns float64) {
	st := w.stack
	fr := frame{fn: fn, start: ns}
	var parent *frame
	if len(st) > 0 {
		parent = &st[len(st)-1]
		fr.in, fr.hide = parent.in, parent.hide
		fr.depth = parent.depth
	}
	f := w.f
	if len(f.Funcs) > 0 && match(f.Funcs, fn) {
		fr.in = true
	}
	if len(f.Hide) > 0 && match(f.Hide, fn) {
		fr.hide = true
	}
	switch {
	case w.cur == nil, fr.hide, len(f.Funcs) > 0 && !fr.in:
	case f.Depth > 0 && fr.depth+1 > f.Depth:
		// Left out by depth: so are its callees, deeper still.
	case f.Until && ns > f.TimeTo, ns < f.TimeFrom:
		// Left out by time: its callees may be kept.
	default:
		fr.kept = true
		fr.depth++
	}
	if fr.kept {
		w.cur.Enter(fn, src, ns, fr.depth)
	}
	w.stack = append(st, fr)
}

// Pop closes the innermost call of the current context at ns, how says
// how: what Records does for an Exit or Unwound.
func (w *Walker) Pop(how EndKind, ns float64) {
	st := w.stack
	if len(st) == 0 {
		return // its entry was before tracing began
	}
	fr := st[len(st)-1]
	w.stack = st[:len(st)-1]
	if fr.kept && w.cur != nil {
		w.cur.Close(how, fr.fn, fr.start, ns)
	}
}

// End closes every call still open, in every context, at the thread's
// last event.
func (w *Walker) End() {
	w.stacks[w.ctx] = w.stack
	w.stack = nil
	for ctx, st := range w.stacks {
		s := w.sinks(ctx)
		for i := len(st) - 1; i >= 0; i-- {
			if st[i].kept && s != nil {
				s.Close(Running, st[i].fn, st[i].start, w.last)
			}
		}
	}
	w.stacks = map[uint64][]frame{}
}

// WalkStream walks stream i of t through a Walker, each context's kept
// calls to the sink sinks gives for it (nil: not wanted).
func (t *Trace) WalkStream(i int, names Namer, f *Filter, sinks func(ctx uint64) Sink) error {
	w := NewWalker(&t.Meta, names, f, sinks)
	if err := t.EachRecord(i, w.Records); err != nil {
		return err
	}
	w.End()
	return nil
}

// WalkContexts walks stream i of t as WalkStream does, but a context at
// a time: the thread's own stack's kept calls to sinks(0) as the stream
// is read, then each context's, whole, in the order the thread first ran
// them, to the sink sinks gives it when its turn comes (asked once per
// context, and not before the one before it has had all its calls; nil:
// not wanted). The stream is read once: the contexts' records are kept
// aside as it is (in memory, then a temporary file), so the walk is
// linear in the stream's size however many contexts the thread ran.
func (t *Trace) WalkContexts(i int, names Namer, f *Filter, sinks func(ctx uint64) Sink) error {
	sp, err := t.split(i, names, f, sinks(0))
	defer sp.close()
	if err != nil {
		return err
	}
	for _, c := range sp.spool.order {
		if s := sinks(c.ctx); s != nil {
			if err := sp.walk(c, names, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// A split is a thread's stream read once (Trace.split): its own stack's
// calls walked as they were read, its contexts' records spooled, to be
// walked one context after another.
type split struct {
	t     *Trace
	f     *Filter
	spool *spool
	last  float64 // ns of the thread's last record: where the calls still open end
}

// split reads stream i of t once, walking the calls the thread made on
// its own stack to own (nil: none wanted) as it goes, and keeping those
// of its contexts aside, in the order it first ran them, for walk. The
// split must be closed, even when reading failed.
func (t *Trace) split(i int, names Namer, f *Filter, own Sink) (*split, error) {
	sp := &split{t: t, f: f, spool: newSpool()}
	sp.spool.read = &t.spooled
	w := NewWalker(&t.Meta, names, f, func(ctx uint64) Sink {
		if ctx == 0 {
			return own
		}
		return nil
	})
	var cur *chain // the context the thread runs in; nil: its own stack
	err := t.EachRecord(i, func(recs []Record) {
		from := 0 // where the own stack's records not walked yet begin
		for k := range recs {
			r := &recs[k]
			id, sw := r.Context()
			switch {
			case sw:
				if cur == nil {
					w.Records(recs[from:k])
				}
				cur = nil
				if id != 0 {
					cur = sp.spool.chain(id)
				}
				from = k + 1
			case cur != nil:
				sp.spool.add(cur, r)
			}
		}
		if cur == nil {
			w.Records(recs[from:])
		}
		sp.last = max(sp.last, t.Meta.lastNS(&recs[len(recs)-1]))
	})
	if err == nil {
		err = sp.spool.done()
	}
	if err != nil {
		return sp, err
	}
	w.last = sp.last
	w.End()
	return sp, nil
}

// walk walks the calls the thread ran in context c, through the split's
// filter, to s: what the thread's walk would have given c's sink. Several
// contexts may be walked at once.
func (sp *split) walk(c *chain, names Namer, s Sink) error {
	w := NewWalker(&sp.t.Meta, names, sp.f, func(uint64) Sink { return s })
	if err := sp.spool.each(c, w.Records); err != nil {
		return err
	}
	w.last = sp.last
	w.End()
	return nil
}

// close lets what the split kept aside go (nil: a stream not read).
func (sp *split) close() {
	if sp != nil {
		sp.spool.close()
	}
}

// OffKept says whether a time off the CPU from start to end (ns) is
// kept: it overlaps [TimeFrom, TimeTo]. Funcs and Hide are the walk's
// (the calls around it); Threshold the sink's (a report counts a short
// wait in the call it lengthened, replay leaves it out as a short call).
func (f *Filter) OffKept(start, end float64) bool {
	return !(f.Until && start > f.TimeTo || end < f.TimeFrom)
}

// CallKept says whether the function tracer's call of fn at ns is
// kept: Funcs and Hide match the function itself (the function tracer
// has no callees to follow), TimeFrom and TimeTo its time.
func (f *Filter) CallKept(fn string, ns float64) bool {
	switch {
	case f.Until && ns > f.TimeTo, ns < f.TimeFrom:
		return false
	case len(f.Funcs) > 0 && !match(f.Funcs, fn):
		return false
	}
	return len(f.Hide) == 0 || !match(f.Hide, fn)
}
