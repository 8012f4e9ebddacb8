package trace

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A Node is one graphed call: a function's entry, and its exit if it
// returned while traced.
type Node struct {
	Func     string
	Start    float64 // ns since tracing started
	End      float64 // ns; when Unwound, when the unwinding was seen; when Open, the thread's last event
	Unwound  bool    // left without returning (longjmp or an exception out of it)
	Open     bool    // still running when tracing ended (exit() called below it, or the program killed)
	Children []*Node
}

// Duration is the time from entry to exit, in ns.
func (n *Node) Duration() float64 { return n.End - n.Start }

// A Thread is one thread's calls as a forest of graphed calls: those on
// its own stack, or, when Context is not 0, those it ran in that context
// (a coroutine made by makecontext, which has a stack of its own).
type Thread struct {
	Pid, Tid int
	Context  uint64
	Roots    []*Node
}

// Graph turns a function_graph trace into per-thread call trees, named
// by syms (the process's, from LoadProcess: each call from the modules
// mapped when it was recorded). An exit closes the innermost open call of
// the context the thread runs in; unwound records close the calls a
// longjmp left. A thread's calls in each context it ran form a Thread of
// their own, after its own stack's.
func Graph(t *Trace, syms *Symbols) []Thread {
	var out []Thread
	for _, s := range t.Streams {
		threads := []*Thread{{Pid: s.Pid, Tid: s.Tid}}
		byCtx := map[uint64]*Thread{0: threads[0]}
		stacks := map[uint64][]*Node{}
		var ctx uint64
		th := threads[0]
		last := 0.0
		for _, r := range s.Records {
			ns := t.Meta.Nanos(r.TS)
			last = ns
			if id, ok := r.Context(); ok {
				ctx = id
				if th = byCtx[id]; th == nil {
					th = &Thread{Pid: s.Pid, Tid: s.Tid, Context: id}
					byCtx[id] = th
					threads = append(threads, th)
				}
				continue
			}
			stack := stacks[ctx]
			switch r.Kind() {
			case Entry, Call:
				n := &Node{Func: syms.FuncAt(r.IP, r.TS), Start: ns, End: ns}
				if len(stack) > 0 {
					top := stack[len(stack)-1]
					top.Children = append(top.Children, n)
				} else {
					th.Roots = append(th.Roots, n)
				}
				if r.Kind() == Entry {
					stacks[ctx] = append(stack, n)
				}
			case Exit, Unwound:
				if len(stack) == 0 {
					continue // its entry was before tracing began
				}
				n := stack[len(stack)-1]
				stacks[ctx] = stack[:len(stack)-1]
				n.End, n.Unwound = ns, r.Kind() == Unwound
			}
		}
		for _, stack := range stacks {
			for _, n := range stack {
				n.Open, n.End = true, last
			}
		}
		for _, th := range threads {
			if th.Context == 0 || len(th.Roots) > 0 {
				out = append(out, *th)
			}
		}
	}
	return out
}

// IndentLevels caps the indentation of WriteGraph's lines: a call
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

// WriteGraph prints the call graph of every thread: a line per entry and
// exit, nested by depth (up to IndentLevels, the depth shown as a number
// beyond), with durations; a leaf takes one line (`f();`).
func WriteGraph(w io.Writer, t *Trace, threads []Thread) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# DURATION     TID     FUNCTION")
	events := 0
	// The walk keeps its own stack: a trace's calls may nest deeper than
	// a recursive walk should go.
	type frame struct {
		n      *Node
		depth  int
		opened bool // its opening line is written
		next   int  // its next child to walk
	}
	var stack []frame
	for i := range threads {
		if c := threads[i].Context; c != 0 {
			fmt.Fprintf(bw, "#                       context %d (makecontext), on thread %d:\n", c, threads[i].Tid)
		}
		tid := threads[i].Tid
		for _, root := range threads[i].Roots {
			stack = append(stack[:0], frame{n: root})
			for len(stack) > 0 {
				f := &stack[len(stack)-1]
				n, in := f.n, indent(f.depth)
				if !f.opened {
					f.opened = true
					events++
					switch {
					case len(n.Children) == 0 && !n.Open && !n.Unwound:
						fmt.Fprintf(bw, "%s [%6d] | %s%s;\n", FormatDuration(n.Duration()), tid, in, call(n.Func))
						stack = stack[:len(stack)-1]
						continue
					case len(n.Children) == 0 && n.Unwound:
						fmt.Fprintf(bw, "%s [%6d] | %s%s; /* unwound: longjmp or exception */\n", FormatDuration(n.Duration()), tid, in, call(n.Func))
						stack = stack[:len(stack)-1]
						continue
					}
					fmt.Fprintf(bw, "%s [%6d] | %s%s {\n", FormatDuration(-1), tid, in, call(n.Func))
				}
				if f.next < len(n.Children) {
					f.next++
					stack = append(stack, frame{n: n.Children[f.next-1], depth: f.depth + 1})
					continue
				}
				note := ""
				switch {
				case n.Unwound:
					note = ": unwound: longjmp or exception"
				case n.Open && t.Meta.Unended:
					note = ": did not return (still running at the trace's last event)"
				case n.Open:
					note = ": did not return (still running at exit)"
				}
				d := FormatDuration(n.Duration())
				if n.Open {
					d = FormatDuration(-1)
				}
				fmt.Fprintf(bw, "%s [%6d] | %s} /* %s%s */\n", d, tid, in, n.Func, note)
				stack = stack[:len(stack)-1]
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return writeSummary(w, t, events)
}

// call writes a function as called: C names get "()", demangled C++
// names have their parameter list already.
func call(name string) string {
	if strings.HasSuffix(name, ")") {
		return name
	}
	return name + "()"
}

// FormatDuration formats a duration of ns nanoseconds in ten columns,
// as replay's DURATION column and uftrace show it ("  0.451 us",
// " 12.357 ms"); negative is blank.
func FormatDuration(ns float64) string {
	switch {
	case ns < 0:
		return fmt.Sprintf("%10s", "")
	case ns < 1e6:
		return fmt.Sprintf("%7.3f us", ns/1000)
	case ns < 1e9:
		return fmt.Sprintf("%7.3f ms", ns/1e6)
	}
	return fmt.Sprintf("%7.3f  s", ns/1e9)
}

// A Stat is one function's line in the graph report.
type Stat struct {
	Func          string
	Calls         int
	Total, Self   float64 // ns
	Unwound, Open int
}

// Stats sums calls, total and self time per function over the trees,
// most total time first.
func Stats(threads []Thread) []Stat {
	m := map[string]*Stat{}
	var todo []*Node // the walk's own stack: calls may nest deep
	for _, th := range threads {
		todo = append(todo, th.Roots...)
		for len(todo) > 0 {
			n := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			s := m[n.Func]
			if s == nil {
				s = &Stat{Func: n.Func}
				m[n.Func] = s
			}
			s.Calls++
			self := n.Duration()
			for _, c := range n.Children {
				self -= c.Duration()
			}
			todo = append(todo, n.Children...)
			s.Total += n.Duration()
			s.Self += self
			if n.Unwound {
				s.Unwound++
			}
			if n.Open {
				s.Open++
			}
		}
	}
	out := make([]Stat, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Stat) int { return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Func, b.Func)) })
	return out
}

// WriteStats prints the graph report: calls, total and self time.
func WriteStats(w io.Writer, t *Trace, stats []Stat) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%10s  %10s  %8s  %s\n", "TOTAL", "SELF", "CALLS", "FUNCTION")
	events := 0
	for _, s := range stats {
		events += s.Calls
		fmt.Fprintf(bw, "%s  %s  %8d  %s\n", FormatDuration(s.Total), FormatDuration(s.Self), s.Calls, s.Func)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return writeSummary(w, t, events)
}

// A Filter selects part of a graph for replay and report.
type Filter struct {
	Tid       int     // only this thread (0: all)
	Depth     int     // only calls at most this deep (0: any)
	Threshold float64 // ns: only calls that took at least this long (0: all)
}

// Apply returns the threads and calls the filter keeps. A call that is
// dropped takes its callees with it.
func (f Filter) Apply(threads []Thread) []Thread {
	kept := func(n *Node, depth int) bool {
		return !(f.Depth > 0 && depth > f.Depth) && !(f.Threshold > 0 && !n.Open && n.Duration() < f.Threshold)
	}
	// Copies of the calls kept, whose children are still to be copied:
	// the walk's own stack, as calls may nest deep.
	type item struct {
		from, to *Node
		depth    int
	}
	var todo []item
	copyOf := func(n *Node, depth int) *Node {
		c := *n
		c.Children = nil
		todo = append(todo, item{n, &c, depth})
		return &c
	}
	var out []Thread
	for _, th := range threads {
		if f.Tid != 0 && th.Tid != f.Tid {
			continue
		}
		t := Thread{Pid: th.Pid, Tid: th.Tid, Context: th.Context}
		for _, n := range th.Roots {
			if kept(n, 1) {
				t.Roots = append(t.Roots, copyOf(n, 1))
			}
		}
		for len(todo) > 0 {
			it := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for _, c := range it.from.Children {
				if kept(c, it.depth+1) {
					it.to.Children = append(it.to.Children, copyOf(c, it.depth+1))
				}
			}
		}
		out = append(out, t)
	}
	return out
}

// SortStats orders a report by "total" (the default), "self", "calls"
// or "name".
func SortStats(stats []Stat, by string) error {
	var f func(a, b Stat) int
	switch by {
	case "", "total":
		f = func(a, b Stat) int { return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Func, b.Func)) }
	case "self":
		f = func(a, b Stat) int { return cmp.Or(cmp.Compare(b.Self, a.Self), cmp.Compare(a.Func, b.Func)) }
	case "calls":
		f = func(a, b Stat) int { return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Func, b.Func)) }
	case "name":
		f = func(a, b Stat) int { return cmp.Compare(a.Func, b.Func) }
	default:
		return fmt.Errorf("unknown sort key %q (want total, self, calls or name)", by)
	}
	slices.SortFunc(stats, f)
	return nil
}
