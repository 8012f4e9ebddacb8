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

// A Thread is one thread's calls as a forest of graphed calls.
type Thread struct {
	Pid, Tid int
	Roots    []*Node
}

// Graph turns a function_graph trace into per-thread call trees, named
// by syms (the process's, from LoadProcess: each call from the modules
// mapped when it was recorded). An exit closes the innermost open call;
// unwound records close the calls a longjmp left.
func Graph(t *Trace, syms *Symbols) []Thread {
	var out []Thread
	for _, s := range t.Streams {
		th := Thread{Pid: s.Pid, Tid: s.Tid}
		var stack []*Node
		last := 0.0
		for _, r := range s.Records {
			ns := t.Meta.Nanos(r.TS)
			last = ns
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
					stack = append(stack, n)
				}
			case Exit, Unwound:
				if len(stack) == 0 {
					continue // its entry was before tracing began
				}
				n := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				n.End, n.Unwound = ns, r.Kind() == Unwound
			}
		}
		for _, n := range stack {
			n.Open, n.End = true, last
		}
		out = append(out, th)
	}
	return out
}

// WriteGraph prints the call graph of every thread: a line per entry and
// exit, nested by depth, with durations; a leaf takes one line (`f();`).
func WriteGraph(w io.Writer, t *Trace, threads []Thread) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# DURATION     TID     FUNCTION")
	events := 0
	var walk func(th *Thread, n *Node, depth int)
	walk = func(th *Thread, n *Node, depth int) {
		events++
		indent := fmt.Sprintf("%*s", 2*depth, "")
		switch {
		case len(n.Children) == 0 && !n.Open && !n.Unwound:
			fmt.Fprintf(bw, "%s [%6d] | %s%s;\n", dur(n.Duration()), th.Tid, indent, call(n.Func))
			return
		case len(n.Children) == 0 && n.Unwound:
			fmt.Fprintf(bw, "%s [%6d] | %s%s; /* unwound: longjmp or exception */\n", dur(n.Duration()), th.Tid, indent, call(n.Func))
			return
		}
		fmt.Fprintf(bw, "%s [%6d] | %s%s {\n", dur(-1), th.Tid, indent, call(n.Func))
		for _, c := range n.Children {
			walk(th, c, depth+1)
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
		d := dur(n.Duration())
		if n.Open {
			d = dur(-1)
		}
		fmt.Fprintf(bw, "%s [%6d] | %s} /* %s%s */\n", d, th.Tid, indent, n.Func, note)
	}
	for i := range threads {
		for _, n := range threads[i].Roots {
			walk(&threads[i], n, 0)
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

// dur formats a duration for the DURATION column; negative is blank.
func dur(ns float64) string {
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
	var walk func(n *Node)
	walk = func(n *Node) {
		s := m[n.Func]
		if s == nil {
			s = &Stat{Func: n.Func}
			m[n.Func] = s
		}
		s.Calls++
		self := n.Duration()
		for _, c := range n.Children {
			self -= c.Duration()
			walk(c)
		}
		s.Total += n.Duration()
		s.Self += self
		if n.Unwound {
			s.Unwound++
		}
		if n.Open {
			s.Open++
		}
	}
	for _, th := range threads {
		for _, n := range th.Roots {
			walk(n)
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
		fmt.Fprintf(bw, "%s  %s  %8d  %s\n", dur(s.Total), dur(s.Self), s.Calls, s.Func)
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
	var keep func(ns []*Node, depth int) []*Node
	keep = func(ns []*Node, depth int) []*Node {
		var out []*Node
		for _, n := range ns {
			if (f.Depth > 0 && depth > f.Depth) || (f.Threshold > 0 && !n.Open && n.Duration() < f.Threshold) {
				continue
			}
			c := *n
			c.Children = keep(n.Children, depth+1)
			out = append(out, &c)
		}
		return out
	}
	var out []Thread
	for _, th := range threads {
		if f.Tid != 0 && th.Tid != f.Tid {
			continue
		}
		out = append(out, Thread{Pid: th.Pid, Tid: th.Tid, Roots: keep(th.Roots, 1)})
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
