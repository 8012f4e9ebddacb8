package views

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"ftpatch/model"
	"ftpatch/ordered"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// Replay writes replay's text of the trace in.Trace, named by in.Names,
// the calls in.Filter keeps: a function_graph trace's call graph, thread
// by thread (ReplayGraph), or a function trace's calls in time order
// (ReplayCalls).
func Replay(w io.Writer, in Input, _ Options) error {
	if in.Trace.Meta.Tracer == abi.TracerGraphName {
		return ReplayGraph(w, in.Trace, in.Names, in.Filter)
	}
	return ReplayCalls(w, in.Trace, in.Names, in.Filter)
}

// printer writes one context's kept calls as replay lines: an inner call
// as "f() {" ... "} /* f */", a leaf as "f();". A call's opening line
// waits until the call is known to be shown and not a leaf: when its
// first shown callee ends, or it ends itself. So a threshold, which
// decides a call only at its end, shows each call a callee of it
// showed, and the lines come out in the order of the calls.
type printer struct {
	w       *bufio.Writer
	tid     []byte // "[   123]"
	thresh  float64
	unended bool
	stack   []pframe
	printed int // stack[:printed] have their opening line written
	events  int // calls shown
	header  []byte
	line    []byte
	ret     string // the return value of the call Close closes next, or ""
}

type pframe struct {
	fn, src string
	start   float64
	depth   int
	args    string // FTRACE_ARGS's, or ""
}

func newPrinter(w *bufio.Writer, tid int, f *trace.Filter, unended bool) *printer {
	return &printer{w: w, tid: fmt.Appendf(nil, "[%6d]", tid), thresh: f.Threshold, unended: unended}
}

// Enter holds a call until it is known to be shown.
func (p *printer) Enter(fn, src string, ns float64, depth int) {
	p.stack = append(p.stack, pframe{fn: fn, src: src, start: ns, depth: depth})
}

// Args gives the call just entered its arguments.
func (p *printer) Args(args string) {
	if len(p.stack) > 0 {
		p.stack[len(p.stack)-1].args = args
	}
}

// Ret gives the call about to close its return value.
func (p *printer) Ret(ret string) { p.ret = ret }

// Close prints a call that ended, with what it holds open above it.
func (p *printer) Close(how trace.EndKind, fn string, start, ns float64) {
	k := len(p.stack) - 1
	fr := p.stack[k]
	p.stack = p.stack[:k]
	wasOpen := p.printed > k
	ret := p.ret
	p.ret = ""
	if p.thresh > 0 && how != trace.Running && ns-start < p.thresh {
		return // left out, and its callees (shorter still, none shown) with it
	}
	if len(p.header) > 0 {
		p.w.Write(p.header)
		p.header = nil
	}
	for i := p.printed; i < k; i++ {
		p.open(&p.stack[i])
	}
	p.printed = k
	d := ns - start
	switch {
	case !wasOpen && how == trace.Returned && ret != "":
		p.call(d, &fr, " = "+ret+";")
		return
	case !wasOpen && how == trace.Returned:
		p.call(d, &fr, ";")
		return
	case !wasOpen && how == trace.LeftEarly:
		p.call(d, &fr, "; /* unwound: longjmp or exception */")
		return
	case how == trace.Untimed: // never open: it has no callees
		p.call(-1, &fr, "; /* not timed: its return was not traced */")
		return
	case !wasOpen:
		p.open(&fr)
	}
	if how == trace.Running {
		d = -1
	}
	p.lead(d, fr.depth)
	if ret != "" {
		p.line = append(p.line, "} = "...)
		p.line = append(p.line, ret...)
		p.line = append(p.line, "; /* "...)
	} else {
		p.line = append(p.line, "} /* "...)
	}
	p.line = append(p.line, fr.fn...)
	switch {
	case how == trace.LeftEarly:
		p.line = append(p.line, ": unwound: longjmp or exception"...)
	case how == trace.Running && p.unended:
		p.line = append(p.line, ": did not return (still running at the trace's last event)"...)
	case how == trace.Running:
		p.line = append(p.line, ": did not return (still running at exit)"...)
	}
	p.line = append(p.line, " */\n"...)
	p.w.Write(p.line)
}

// OffCPU prints a time the thread spent off the CPU, nested in the calls
// running then, its duration in the DURATION column and in words: "/*
// off-CPU 12.300 ms: sleeping */", "/* pre-empted 1.100 ms */". The calls
// around it are opened first (a leaf that waited shows as "f() {", the
// line, "}"); under a threshold, one shorter than it is left out, as a
// call would be.
func (p *printer) OffCPU(why trace.OffReason, start, end float64, depth int) {
	d := end - start
	if p.thresh > 0 && d < p.thresh {
		return
	}
	if len(p.header) > 0 {
		p.w.Write(p.header)
		p.header = nil
	}
	for i := p.printed; i < len(p.stack); i++ {
		p.open(&p.stack[i])
	}
	p.printed = len(p.stack)
	p.lead(d, depth+1)
	p.line = appendOffCPU(p.line, why, d)
	p.line = append(p.line, '\n')
	p.w.Write(p.line)
}

// appendOffCPU appends a time off the CPU as replay shows it, a comment:
// "/* off-CPU 12.300 ms: sleeping */", "/* pre-empted 1.100 ms */".
func appendOffCPU(b []byte, why trace.OffReason, d float64) []byte {
	if why == trace.Preempted {
		b = append(b, "/* pre-empted "...)
		b = append(b, strings.TrimSpace(dur(d))...)
		return append(b, " */"...)
	}
	b = append(b, "/* off-CPU "...)
	b = append(b, strings.TrimSpace(dur(d))...)
	b = append(b, ": "...)
	b = append(b, why.String()...)
	return append(b, " */"...)
}

// open writes a call's opening line.
func (p *printer) open(fr *pframe) { p.call(-1, fr, " {") }

// call writes a line that shows a call: the duration column (d, blank
// for d < 0), the call, mark after it (";" for a leaf, " {" for a call
// opened), its source position; and counts it shown.
func (p *printer) call(d float64, fr *pframe, mark string) {
	p.lead(d, fr.depth)
	p.line = appendCallArgs(p.line, fr.fn, fr.args)
	p.line = append(p.line, mark...)
	p.line = appendSource(p.line, fr.src)
	p.line = append(p.line, '\n')
	p.events++
	p.w.Write(p.line)
}

// lead starts a line: the duration column (blank for d < 0), the
// thread, the indentation of depth (1: a root).
func (p *printer) lead(d float64, depth int) {
	p.line = appendDur(p.line[:0], d)
	p.line = append(p.line, ' ')
	p.line = append(p.line, p.tid...)
	p.line = append(p.line, " | "...)
	p.line = append(p.line, indent(depth-1)...)
}

// appendSource appends a call's source position as a comment, when it
// has one.
func appendSource(b []byte, src string) []byte {
	if src == "" {
		return b
	}
	b = append(b, " /* "...)
	b = append(b, src...)
	return append(b, " */"...)
}

// appendCall appends a function as called: C names get "()", demangled
// C++ names have their parameter list already.
func appendCall(b []byte, name string) []byte {
	b = append(b, name...)
	if len(name) > 0 && name[len(name)-1] == ')' {
		return b
	}
	return append(b, "()"...)
}

// appendCallArgs appends a function as called with the arguments the
// trace recorded: name(args), a demangled C++ name's parameter list
// giving way to them; without any, as appendCall.
func appendCallArgs(b []byte, name, args string) []byte {
	if args == "" {
		return appendCall(b, name)
	}
	if strings.HasSuffix(name, ")") {
		depth := 0
		for i := len(name) - 1; i >= 0; i-- {
			switch name[i] {
			case ')':
				depth++
			case '(':
				depth--
			}
			if depth == 0 {
				name = name[:i]
				break
			}
		}
	}
	b = append(b, name...)
	b = append(b, '(')
	b = append(b, args...)
	return append(b, ')')
}

// appendDur appends a duration for the DURATION column (10 columns:
// "%7.3f us", ms or " s"); negative is blank.
func appendDur(b []byte, ns float64) []byte {
	var v float64
	var unit string
	switch {
	case ns < 0:
		return append(b, "          "...)
	case ns < 1e6:
		v, unit = ns/1000, " us"
	case ns < 1e9:
		v, unit = ns/1e6, " ms"
	default:
		v, unit = ns/1e9, "  s"
	}
	var num [32]byte
	f := strconv.AppendFloat(num[:0], v, 'f', 3, 64)
	for i := len(f); i < 7; i++ {
		b = append(b, ' ')
	}
	b = append(b, f...)
	return append(b, unit...)
}

// dur is appendDur as a string.
func dur(ns float64) string { return FormatDuration(ns) }

// FormatDuration formats a duration as replay's DURATION column does:
// ten columns, "%7.3f us", ms or " s"; negative is blank.
func FormatDuration(ns float64) string { return string(appendDur(nil, ns)) }

// contextHeader is the line that says where a context's calls begin.
func contextHeader(ctx uint64, tid int) []byte {
	return fmt.Appendf(nil, "#                       context %d (makecontext), on thread %d:\n", ctx, tid)
}

// WriteTrees prints the call graph of every thread: a line per entry and
// exit, nested by depth (up to IndentLevels, the depth shown as a number
// beyond), with durations; a leaf takes one line (`f();`).
func WriteTrees(w io.Writer, t *trace.Trace, threads []model.Thread) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(graphHead)
	events := 0
	for i := range threads {
		th := &threads[i]
		p := newPrinter(bw, th.Tid, &trace.Filter{}, t.Meta.Unended)
		if th.Context != 0 {
			p.header = contextHeader(th.Context, th.Tid)
		}
		wk := trace.NewWalker(&t.Meta, nil, &trace.Filter{}, func(uint64) trace.Sink { return p })
		model.WalkTrees(th.Roots, wk)
		events += p.events
	}
	return flushSummary(bw, w, t, events, nil)
}

const graphHead = "# DURATION     TID     FUNCTION\n"

// ReplayGraph prints a function_graph trace's call graph as
// WriteTrees does, reading each stream once, as it goes: memory is
// bounded by the depth of the calls and the number of contexts, not by
// the trace's size. Each thread's calls on its own stack come first, then those of
// each context it ran (makecontext), in the order it first ran them.
// Threads are printed several at once (one per CPU), in order
// (ordered.Write).
func ReplayGraph(w io.Writer, t *trace.Trace, names trace.Naming, f *trace.Filter) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString(graphHead)
	var mu sync.Mutex
	events := 0
	streams := func(yield func(int) bool) {
		for i := range t.Streams {
			if f.ThreadKept(t.Streams[i].Tid) && !yield(i) {
				return
			}
		}
	}
	err := ordered.Write(bw, streams, 0, func(i int, out *bufio.Writer) error {
		n, err := replayStream(out, t, i, names.Namer(), f)
		mu.Lock()
		events += n
		mu.Unlock()
		return err
	})
	return flushSummary(bw, w, t, events, err)
}

// replayStream prints stream i's calls: its own stack's, then each
// context's after them, read once (trace.Trace.WalkContexts).
func replayStream(bw *bufio.Writer, t *trace.Trace, i int, names trace.Namer, f *trace.Filter) (int, error) {
	s := &t.Streams[i]
	events := 0
	var p *printer // the context's being printed
	err := t.WalkContexts(i, names, f, func(ctx uint64) trace.Sink {
		if p != nil {
			events += p.events
		}
		p = newPrinter(bw, s.Tid, f, t.Meta.Unended)
		if ctx != 0 {
			p.header = contextHeader(ctx, s.Tid)
		}
		return p
	})
	if p != nil {
		events += p.events
	}
	if err != nil {
		return 0, err
	}
	return events, nil
}

// IndentLevels caps the indentation of WriteTrees's lines: a call
// nested deeper is indented as deep as this and prefixed with its depth
// ("[depth 65] f() {"), so the output stays linear in the trace however
// deep its calls nest (each level would otherwise add two spaces to
// every line below it).
const IndentLevels = 64

// indentation is the spaces of the deepest indentation.
var indentation = strings.Repeat("  ", IndentLevels)

// indent is the indentation of a call depth levels below a thread's
// roots (0 for a root): two spaces a level, capped at IndentLevels with
// the depth (counted from 1, as Filter counts it) shown beyond.
func indent(depth int) string {
	if depth < IndentLevels {
		return indentation[:2*depth]
	}
	return fmt.Sprintf("%s[depth %d] ", indentation, depth+1)
}

// WriteEvents prints the function trace: one line per call, in time
// order, with the thread and the caller.
func WriteEvents(w io.Writer, t *trace.Trace, events []model.Event) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %10s  %7s  %s\n", "TIME(us)", "TID", "FUNCTION <- CALLER")
	for _, e := range events {
		fmt.Fprintf(bw, "%12.3f  %7d  %s <- %s\n", e.Nanos/1000, e.Tid, e.Func, e.Caller)
	}
	return flushSummary(bw, w, t, len(events), nil)
}

// ReplayCalls prints a function trace as WriteEvents does, merging
// the streams by time as it reads them.
func ReplayCalls(w io.Writer, t *trace.Trace, names trace.Naming, f *trace.Filter) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	fmt.Fprintf(bw, "# %10s  %7s  %s\n", "TIME(us)", "TID", "FUNCTION <- CALLER")
	nm := names.Namer()
	events := 0
	var line []byte
	err := t.MergeCalls(f, func(s *trace.Stream, r *trace.Record) error {
		ns := t.Meta.Nanos(r.TS)
		if o, ok := r.OffCPU(); ok {
			// The thread left the CPU: a line of its own, how long.
			end := t.Meta.OffEnd(o)
			if len(f.Funcs) > 0 || !f.OffKept(ns, end) || f.Threshold > 0 && end-ns < f.Threshold { // no call around it to be one of Funcs'
				return nil
			}
			line = appendPadded(line[:0], strconv.AppendFloat(nil, ns/1000, 'f', 3, 64), 12)
			line = append(line, "  "...)
			line = appendPadded(line, strconv.AppendInt(nil, int64(s.Tid), 10), 7)
			line = append(line, "  "...)
			line = appendOffCPU(line, o.Why, end-ns)
			line = append(line, '\n')
			_, err := bw.Write(line)
			return err
		}
		fn := nm.FuncAt(r.IP, r.TS)
		if !f.CallKept(fn, ns) {
			return nil
		}
		events++
		line = appendPadded(line[:0], strconv.AppendFloat(nil, ns/1000, 'f', 3, 64), 12)
		line = append(line, "  "...)
		line = appendPadded(line, strconv.AppendInt(nil, int64(s.Tid), 10), 7)
		line = append(line, "  "...)
		if r.Data != "" {
			line = appendCallArgs(line, fn, r.Data) // FTRACE_ARGS's
		} else {
			line = append(line, fn...)
		}
		line = append(line, " <- "...)
		line = append(line, nm.NameAt(r.Parent(), r.TS)...)
		if f.Source {
			line = appendSource(line, nm.SourceAt(r.IP, r.TS))
		}
		line = append(line, '\n')
		_, err := bw.Write(line)
		return err
	})
	return flushSummary(bw, w, t, events, err)
}

// appendPadded appends v right-aligned in width columns.
func appendPadded(b, v []byte, width int) []byte {
	for i := len(v); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, v...)
}
