// Package model holds what a trace's calls add up to, built from the
// reader's walk (package trace) of the calls it names (package symbols):
// the call trees of each thread (Graph), the call graph summed per call
// path (CallGraph), the figures per function (Stats, ReportAll), the
// calls of a function trace in time order and counted (Events, Counts),
// and the change between two traces (Diff). It does no I/O of its own
// and prints nothing: the views write what it holds.
package model

import "ftpatch/trace"

// A Node is one graphed call: a function's entry, and its exit if it
// returned while traced.
type Node struct {
	Func     string
	Start    float64 // ns since tracing started
	End      float64 // ns; when Unwound, when the unwinding was seen; when Open, the thread's last event
	Unwound  bool    // left without returning (longjmp or an exception out of it)
	Open     bool    // still running when tracing ended (exit() called below it, or the program killed)
	Untimed  bool    // recorded without its return (trace.Untimed): End is Start
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
// commands walk a trace's calls without them (views.ReplayGraph,
// ReportGraph); Graph is for small traces and tests.
func Graph(t *trace.Trace, names trace.Naming) []Thread {
	var out []Thread
	nm := names.Namer()
	for i := range t.Streams {
		s := &t.Streams[i]
		var trees []*treeSink
		byCtx := map[uint64]*treeSink{}
		sinks := func(ctx uint64) trace.Sink {
			if b := byCtx[ctx]; b != nil {
				return b
			}
			b := &treeSink{th: Thread{Pid: s.Pid, Tid: s.Tid, Context: ctx}}
			byCtx[ctx] = b
			trees = append(trees, b)
			return b
		}
		w := trace.NewWalker(&t.Meta, nm, &trace.Filter{}, sinks)
		if err := t.Each(i, w.Records); err != nil {
			continue // a stream that cannot be read: Read reported it
		}
		w.End()
		for _, b := range trees {
			if b.th.Context == 0 || len(b.th.Roots) > 0 {
				out = append(out, b.th)
			}
		}
	}
	return out
}

// treeSink builds a context's calls as a tree.
type treeSink struct {
	th    Thread
	stack []*Node
}

// Enter adds a call to the tree, below the innermost open one.
func (b *treeSink) Enter(fn, src string, ns float64, depth int) {
	n := &Node{Func: fn, Start: ns, End: ns}
	if k := len(b.stack); k > 0 {
		b.stack[k-1].Children = append(b.stack[k-1].Children, n)
	} else {
		b.th.Roots = append(b.th.Roots, n)
	}
	b.stack = append(b.stack, n)
}

// Close ends the innermost open call.
func (b *treeSink) Close(how trace.EndKind, fn string, start, ns float64) {
	n := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	n.End, n.Unwound, n.Open, n.Untimed = ns, how == trace.LeftEarly, how == trace.Running, how == trace.Untimed
}

// WalkTrees drives a Walker with the calls of the trees, as their
// records would: the trees' calls through a Filter to a Sink (a
// printer's, to replay them).
func WalkTrees(roots []*Node, w *trace.Walker) {
	type item struct {
		n    *Node
		next int
	}
	var stack []item
	for _, root := range roots {
		stack = append(stack[:0], item{n: root})
		w.Push(root.Func, "", root.Start)
		for len(stack) > 0 {
			it := &stack[len(stack)-1]
			if it.next < len(it.n.Children) {
				c := it.n.Children[it.next]
				it.next++
				w.Push(c.Func, "", c.Start)
				stack = append(stack, item{n: c})
				continue
			}
			how := trace.Returned
			switch {
			case it.n.Open:
				how = trace.Running
			case it.n.Unwound:
				how = trace.LeftEarly
			case it.n.Untimed:
				how = trace.Untimed
			}
			w.Pop(how, it.n.End)
			stack = stack[:len(stack)-1]
		}
	}
}
