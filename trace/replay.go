package trace

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"ftpatch/ordered"
)

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
}

type pframe struct {
	fn, src string
	start   float64
	depth   int
}

func newPrinter(w *bufio.Writer, tid int, f *Filter, unended bool) *printer {
	return &printer{w: w, tid: fmt.Appendf(nil, "[%6d]", tid), thresh: f.Threshold, unended: unended}
}

func (p *printer) enter(fn, src string, ns float64, depth int) {
	p.stack = append(p.stack, pframe{fn, src, ns, depth})
}

func (p *printer) close(how EndKind, fn string, start, ns float64) {
	k := len(p.stack) - 1
	fr := p.stack[k]
	p.stack = p.stack[:k]
	wasOpen := p.printed > k
	if p.thresh > 0 && how != Running && ns-start < p.thresh {
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
	case !wasOpen && how == Returned:
		p.lead(d, fr.depth)
		p.line = appendCall(p.line, fr.fn)
		p.line = append(p.line, ';')
		p.line = appendSource(p.line, fr.src)
		p.line = append(p.line, '\n')
		p.events++
		p.w.Write(p.line)
		return
	case !wasOpen && how == LeftEarly:
		p.lead(d, fr.depth)
		p.line = appendCall(p.line, fr.fn)
		p.line = append(p.line, "; /* unwound: longjmp or exception */"...)
		p.line = appendSource(p.line, fr.src)
		p.line = append(p.line, '\n')
		p.events++
		p.w.Write(p.line)
		return
	case !wasOpen:
		p.open(&fr)
	}
	if how == Running {
		d = -1
	}
	p.lead(d, fr.depth)
	p.line = append(p.line, "} /* "...)
	p.line = append(p.line, fr.fn...)
	switch {
	case how == LeftEarly:
		p.line = append(p.line, ": unwound: longjmp or exception"...)
	case how == Running && p.unended:
		p.line = append(p.line, ": did not return (still running at the trace's last event)"...)
	case how == Running:
		p.line = append(p.line, ": did not return (still running at exit)"...)
	}
	p.line = append(p.line, " */\n"...)
	p.w.Write(p.line)
}

// open writes a call's opening line.
func (p *printer) open(fr *pframe) {
	p.lead(-1, fr.depth)
	p.line = appendCall(p.line, fr.fn)
	p.line = append(p.line, " {"...)
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

// call is appendCall as a string.
func call(name string) string { return string(appendCall(nil, name)) }

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

// WriteGraph prints the call graph of every thread: a line per entry and
// exit, nested by depth (up to IndentLevels, the depth shown as a number
// beyond), with durations; a leaf takes one line (`f();`).
func WriteGraph(w io.Writer, t *Trace, threads []Thread) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(graphHead)
	events := 0
	for i := range threads {
		th := &threads[i]
		p := newPrinter(bw, th.Tid, &Filter{}, t.Meta.Unended)
		if th.Context != 0 {
			p.header = contextHeader(th.Context, th.Tid)
		}
		wk := newWalker(t, nil, &Filter{}, func(uint64) sink { return p })
		walkTree(th.Roots, wk)
		events += p.events
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return writeSummary(w, t, events)
}

const graphHead = "# DURATION     TID     FUNCTION\n"

// maxSpills bounds the contexts of a thread whose replay lines one pass
// over its stream keeps aside (in temporary files) for after the
// thread's own: a thread that ran more contexts is read again for the
// rest.
var maxSpills = 256

// WriteReplayGraph prints a function_graph trace's call graph as
// WriteGraph does, reading each stream as it goes: memory is bounded by
// the depth of the calls and the number of contexts, not by the trace's
// size. Each thread's calls on its own stack come first, then those of
// each context it ran (makecontext), in the order it first ran them.
// Threads are printed several at once (one per CPU), in order
// (ordered.Write).
func WriteReplayGraph(w io.Writer, t *Trace, names Naming, f *Filter) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString(graphHead)
	var mu sync.Mutex
	events := 0
	streams := func(yield func(int) bool) {
		for i := range t.Streams {
			if (f.Tid == 0 || t.Streams[i].Tid == f.Tid) && !yield(i) {
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
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return writeSummary(w, t, events)
}

// spill is a context's replay lines kept aside for after its thread's
// own: in a temporary file, deleted as it is made.
type spill struct {
	ctx  uint64
	f    *os.File
	bw   *bufio.Writer
	p    *printer
	done bool
}

// replayStream prints stream i's calls: its own stack's to bw, each
// context's to a spill appended after them, maxSpills contexts a pass.
func replayStream(bw *bufio.Writer, t *Trace, i int, names Namer, f *Filter) (int, error) {
	s := &t.Streams[i]
	own := newPrinter(bw, s.Tid, f, t.Meta.Unended)
	handled := map[uint64]bool{0: true}
	known := map[uint64]bool{0: true} // contexts seen
	events := 0
	for pass := 0; ; pass++ {
		var spills []*spill
		byCtx := map[uint64]*spill{}
		var failed error
		sinks := func(ctx uint64) sink {
			if ctx == 0 {
				if pass == 0 {
					return own
				}
				return nil
			}
			if sp := byCtx[ctx]; sp != nil {
				return sp.p
			}
			if handled[ctx] {
				return nil
			}
			known[ctx] = true
			if len(spills) >= maxSpills || failed != nil {
				return nil
			}
			tmp, err := os.CreateTemp("", "ftpatch-replay-*")
			if err != nil {
				failed = fmt.Errorf("a temporary file for a context's calls: %w", err)
				return nil
			}
			os.Remove(tmp.Name())
			sp := &spill{ctx: ctx, f: tmp, bw: bufio.NewWriterSize(tmp, 16<<10)}
			sp.p = newPrinter(sp.bw, s.Tid, f, t.Meta.Unended)
			sp.p.header = contextHeader(ctx, s.Tid)
			byCtx[ctx] = sp
			spills = append(spills, sp)
			return sp.p
		}
		err := t.walkStream(i, names, f, sinks)
		if pass == 0 {
			events += own.events
		}
		for _, sp := range spills {
			handled[sp.ctx] = true
			events += sp.p.events
			if err == nil {
				err = appendSpill(bw, sp)
			}
			sp.f.Close()
		}
		switch {
		case err != nil:
			return 0, err
		case failed != nil:
			return 0, failed
		case len(spills) == 0 || len(handled) == len(known):
			return events, nil
		}
	}
}

// appendSpill copies a context's kept lines after its thread's.
func appendSpill(bw *bufio.Writer, sp *spill) error {
	if err := sp.bw.Flush(); err != nil {
		return fmt.Errorf("a temporary file for a context's calls: %w", err)
	}
	if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(bw, sp.f)
	return err
}
