package trace

import (
	"fmt"
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
// by names (the process's, symbols.LoadProcess: each call from the
// modules mapped when it was recorded). An exit closes the innermost open call of
// the context the thread runs in; unwound records close the calls a
// longjmp left. A thread's calls in each context it ran form a Thread of
// their own, after its own stack's. The trees are held in memory: the
// commands walk a trace's calls without them (WriteReplayGraph,
// ReportGraph); Graph is for small traces and tests.
func Graph(t *Trace, names Naming) []Thread {
	var out []Thread
	nm := names.Namer()
	for i := range t.Streams {
		s := &t.Streams[i]
		var trees []*treeSink
		byCtx := map[uint64]*treeSink{}
		sinks := func(ctx uint64) sink {
			if b := byCtx[ctx]; b != nil {
				return b
			}
			b := &treeSink{th: Thread{Pid: s.Pid, Tid: s.Tid, Context: ctx}}
			byCtx[ctx] = b
			trees = append(trees, b)
			return b
		}
		w := newWalker(t, nm, &Filter{}, sinks)
		if err := t.eachRecord(i, w.records); err != nil {
			continue // a stream that cannot be read: Read reported it
		}
		w.end()
		for _, b := range trees {
			if b.th.Context == 0 || len(b.th.Roots) > 0 {
				out = append(out, b.th)
			}
		}
	}
	return out
}

// eachRecord is EachRecord, or the records Read read.
func (t *Trace) eachRecord(i int, fn func([]Record)) error {
	if recs := t.Streams[i].Records; recs != nil || t.Dir == "" {
		fn(recs)
		return nil
	}
	return t.EachRecord(i, fn)
}

// treeSink builds a context's calls as a tree.
type treeSink struct {
	th    Thread
	stack []*Node
}

func (b *treeSink) enter(fn, src string, ns float64, depth int) {
	n := &Node{Func: fn, Start: ns, End: ns}
	if k := len(b.stack); k > 0 {
		b.stack[k-1].Children = append(b.stack[k-1].Children, n)
	} else {
		b.th.Roots = append(b.th.Roots, n)
	}
	b.stack = append(b.stack, n)
}

func (b *treeSink) close(how EndKind, fn string, start, ns float64) {
	n := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	n.End, n.Unwound, n.Open = ns, how == LeftEarly, how == Running
}

// walkTree drives a sink with the calls of the trees, as a walker would
// with their records.
func walkTree(roots []*Node, w *walker) {
	type item struct {
		n    *Node
		next int
	}
	var stack []item
	for _, root := range roots {
		stack = append(stack[:0], item{n: root})
		w.push(root.Func, "", root.Start)
		for len(stack) > 0 {
			it := &stack[len(stack)-1]
			if it.next < len(it.n.Children) {
				c := it.n.Children[it.next]
				it.next++
				w.push(c.Func, "", c.Start)
				stack = append(stack, item{n: c})
				continue
			}
			how := Returned
			switch {
			case it.n.Open:
				how = Running
			case it.n.Unwound:
				how = LeftEarly
			}
			w.pop(how, it.n.End)
			stack = stack[:len(stack)-1]
		}
	}
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
