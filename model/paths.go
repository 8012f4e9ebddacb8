package model

import (
	"cmp"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"

	"ftpatch/trace"
)

// A Path is one call path of a call graph: a function as called from
// its parent's path, with the calls made along that path summed. The
// graph has a Path per distinct path, whatever the number of calls: the
// folded stacks, the flame graph and the aggregated call graph are drawn
// from it. Its root stands for no call (Func "", no figures): its
// Children are the threads' outermost calls. A view may set the root's
// figures, or rewrite Total as the weight it draws by.
type Path struct {
	Func    string
	Calls   int
	Total   float64 // ns in its calls, callees included
	Self    float64 // ns in its calls, callees not included
	Unwound int     // calls left without returning
	Open    int     // calls still running when the trace ended
	// Off is the ns its calls spent off the CPU (the trace's scheduler
	// events: asleep, or pre-empted), callees included; OffSelf the part
	// of it not in callees. Both are within Total and Self.
	Off, OffSelf float64
	// Why is not 0 for a Path that is no call but the times the thread
	// was off the CPU for that reason with its parent's path running
	// (CallGraphOffCPU): a leaf named "[sleeping]" or "[pre-empted]",
	// its Calls the times, its Total and Self their ns.
	Why trace.OffReason
	// Merged is the weight of callee paths merged into this one, too
	// light to draw (CallGraphMerged): ns, or calls.
	Merged   float64
	Children []*Path // in the order first called
	index    map[string]*Path
	lost     float64 // the most weight of the path merged into its caller before this Path was made (CallGraphMerged)
	open     int32   // its calls not ended yet in the thread being folded: it is not merged
	gone     bool    // merged into its caller, to be dropped from its Children
}

// indexAt is the number of children past which child looks them up in a
// map rather than in order.
const indexAt = 8

// Child returns n's child for fn, adding it when fn was not called from
// n's path before.
func (n *Path) Child(fn string) *Path {
	if n.index != nil {
		if c := n.index[fn]; c != nil {
			return c
		}
	} else {
		for _, c := range n.Children {
			if c.Func == fn {
				return c
			}
		}
	}
	c := &Path{Func: fn}
	n.Children = append(n.Children, c)
	switch {
	case n.index != nil:
		n.index[fn] = c
	case len(n.Children) > indexAt:
		n.index = make(map[string]*Path, len(n.Children))
		for _, c := range n.Children {
			n.index[c.Func] = c
		}
	}
	return c
}

// Add sums o's counts and times into n.
func (n *Path) Add(o *Path) {
	n.Calls += o.Calls
	n.Total += o.Total
	n.Self += o.Self
	n.Unwound += o.Unwound
	n.Open += o.Open
	n.Off += o.Off
	n.OffSelf += o.OffSelf
	n.Merged += o.Merged
	n.lost += o.lost
}

// Merge adds the paths below o (its children and theirs) to those below
// n: the same path in both is one Path, its counts and times summed.
// It walks the paths with a stack of its own, not by recursion: a path
// may be hundreds of thousands of calls deep.
func (n *Path) Merge(o *Path) { n.merge(o, nil) }

// merge is Merge, each Path it makes given to made.
func (n *Path) merge(o *Path, made func(*Path)) {
	type pair struct{ into, from *Path }
	stack := []pair{{n, o}}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, oc := range p.from.Children {
			k := len(p.into.Children)
			c := p.into.Child(oc.Func)
			if len(p.into.Children) > k {
				c.Why = oc.Why
				if made != nil {
					made(c)
				}
			}
			c.Add(oc)
			stack = append(stack, pair{c, oc})
		}
	}
}

// adopt merges t, a tree no one else holds, into n: by taking its
// paths as they are when n has none, without a copy.
func (n *Path) adopt(t *Path) {
	if len(n.Children) == 0 {
		n.Children, n.index = t.Children, t.index
		return
	}
	n.Merge(t)
}

// PathOrder is the order the aggregated call graph gives the paths it
// lists (graph's --sort): by "total" time (the default, also "") or by
// "calls", the most first, ties in the order first called; or "first",
// the order first called alone (the program's order, as uftrace's graph
// prints it). One rule for a path's callees and for a function's
// backtraces alike.
func PathOrder(by string) (func(a, b *Path) int, error) {
	switch by {
	case "", "total":
		return func(a, b *Path) int { return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(b.Calls, a.Calls)) }, nil
	case "calls":
		return func(a, b *Path) int { return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(b.Total, a.Total)) }, nil
	case "first":
		return func(a, b *Path) int { return 0 }, nil // Sorted's stable sort keeps the order first called
	}
	return nil, fmt.Errorf("%w %q (want total, calls or first)", ErrSortKey, by)
}

// Sorted returns n's children in the order order gives (PathOrder's), ties
// in the order first called.
func (n *Path) Sorted(order func(a, b *Path) int) []*Path {
	s := slices.Clone(n.Children)
	slices.SortStableFunc(s, order)
	return s
}

// ByName returns n's children sorted by function name.
func (n *Path) ByName() []*Path {
	s := slices.Clone(n.Children)
	slices.SortFunc(s, func(a, b *Path) int { return cmp.Compare(a.Func, b.Func) })
	return s
}

// fold adds a thread's calls to the tree below root: each call to the
// Path of its path, its duration to the Path's total, and to its self
// time what its callees did not take; each time off the CPU to the Off
// of the calls then running, and with leaves (CallGraphOffCPU) to a leaf
// of its own below the innermost of them, out of that one's self time.
// With m (not nil) the paths too light to draw are merged into their
// callers as it goes.
func fold(root *Path, th trace.ThreadCalls, m *merger, leaves bool) {
	child := func(n *Path, fn string) *Path {
		if m == nil {
			return n.Child(fn)
		}
		return m.child(n, fn)
	}
	var st Stack
	parent := func() *Path {
		if len(st) == 0 {
			return root
		}
		return st[len(st)-1].Path
	}
	weigh := func(calls int, self float64, off bool) {
		if m != nil {
			m.add(m.own(calls, self, off))
			if m.nodes > m.budget {
				m.merge(root)
			}
		}
	}
	for ev := range Closed(th, func() int { return len(st) }) {
		switch {
		case ev.Kind == trace.CallEnter:
			c := child(parent(), ev.Func)
			c.open++
			st = append(st, Frame{Func: ev.Func, Start: ev.NS, Path: c})
		case ev.Kind == trace.CallOnly:
			child(parent(), ev.Func).Calls++
			weigh(1, 0, false)
		case ev.Kind == trace.CallOff:
			d := max(ev.End-ev.NS, 0)
			if n := len(st); n > 0 {
				st[n-1].Off += d
				st[n-1].OffSelf += d
				if leaves {
					st[n-1].Inner += d
				}
			}
			if leaves {
				c := child(parent(), offLeaf(ev.Why))
				c.Why = ev.Why
				c.Calls++
				c.Total += d
				c.Self += d
				c.Off += d
				c.OffSelf += d
				weigh(1, d, true)
			}
		case ev.Kind.Ends():
			f, dur, ok := st.Pop(ev.NS)
			if !ok {
				continue // its entry was not in the trace
			}
			n := f.Path
			n.open--
			n.Calls++
			n.Total += dur
			self := max(dur-f.Inner, 0)
			n.Self += self
			// Within the call, whatever the clocks said.
			off := min(f.Off, dur)
			n.Off += off
			n.OffSelf += min(f.OffSelf, off)
			if k := len(st); k > 0 {
				st[k-1].Off += off
			}
			weigh(1, self, false)
			switch ev.Kind {
			case trace.CallUnwound:
				n.Unwound++
			case trace.CallOpen:
				n.Open++
			}
		}
	}
}

// offLeaf is the name of the leaf of times off the CPU for why:
// "[sleeping]", "[pre-empted]", as off-CPU flame graphs name them.
func offLeaf(why trace.OffReason) string { return "[" + why.String() + "]" }

// threadTree is the call tree of one thread, from its events alone:
// threads' trees can be built in parallel, one per core, and merged.
func threadTree(th trace.ThreadCalls) *Path {
	t := &Path{}
	fold(t, th, nil, false)
	return t
}

// threadTreeOffCPU is threadTree with the times off the CPU as leaves.
func threadTreeOffCPU(th trace.ThreadCalls) *Path {
	t := &Path{}
	fold(t, th, nil, true)
	return t
}

// threadTrees yields each thread with its call tree, in order. Unless
// inOrder (a trace with contexts, whose threads are known only as the
// one before them is read: trace.Trace.Threads) the trees are built on
// every core, a thread each.
func threadTrees(threads iter.Seq[trace.ThreadCalls], inOrder bool, threadTree func(trace.ThreadCalls) *Path) iter.Seq2[trace.ThreadCalls, *Path] {
	if inOrder || runtime.GOMAXPROCS(0) == 1 {
		return func(yield func(trace.ThreadCalls, *Path) bool) {
			for th := range threads {
				if !yield(th, threadTree(th)) {
					return
				}
			}
		}
	}
	return func(yield func(trace.ThreadCalls, *Path) bool) {
		type job struct {
			th   trace.ThreadCalls
			tree *Path
			done chan struct{}
		}
		jobs := make(chan *job, runtime.GOMAXPROCS(0))
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range jobs {
					j.tree = threadTree(j.th)
					close(j.done)
				}
			}()
		}
		// The threads in order, each handed to a worker; a window of
		// them ahead of the one yielded, so the trees held wait no more
		// than a few threads.
		var window []*job
		next, stop := iter.Pull(threads)
		defer func() {
			stop()
			close(jobs)
			wg.Wait()
		}()
		for {
			for len(window) < 2*runtime.GOMAXPROCS(0) {
				th, ok := next()
				if !ok {
					break
				}
				j := &job{th: th, done: make(chan struct{})}
				jobs <- j
				window = append(window, j)
			}
			if len(window) == 0 {
				return
			}
			j := window[0]
			window = window[1:]
			<-j.done
			if !yield(j.th, j.tree) {
				for _, j := range window {
					<-j.done
				}
				return
			}
		}
	}
}

// CallGraph is the call graph of the threads (trace.Trace.Threads): each
// thread's calls summed per call path, the threads' paths merged. With
// perThread (not nil) each thread's paths stay below a Path named
// perThread(thread), whose Total is theirs. Unless inOrder (a trace with
// contexts: trace.Trace.Threads) the threads are read on every core, a
// thread each, and merged in their order. Its size is bounded by the
// number of distinct paths, not of calls.
func CallGraph(threads iter.Seq[trace.ThreadCalls], inOrder bool, perThread func(trace.ThreadCalls) string) *Path {
	return callGraph(threads, inOrder, perThread, threadTree)
}

// CallGraphOffCPU is CallGraph with each time off the CPU (the trace's
// scheduler events) a leaf Path (Why) below the path that was running,
// one per reason, as off-CPU flame graphs draw them: a path's Self is
// then its time on the CPU alone, and its leaves' its time off it. A
// trace without scheduler events has no leaves: its CallGraph.
func CallGraphOffCPU(threads iter.Seq[trace.ThreadCalls], inOrder bool, perThread func(trace.ThreadCalls) string) *Path {
	return callGraph(threads, inOrder, perThread, threadTreeOffCPU)
}

func callGraph(threads iter.Seq[trace.ThreadCalls], inOrder bool, perThread func(trace.ThreadCalls) string, tree func(trace.ThreadCalls) *Path) *Path {
	root := &Path{}
	for th, t := range threadTrees(threads, inOrder, tree) {
		into := root
		if perThread != nil {
			into = root.Child(perThread(th))
			for _, c := range t.Children {
				into.Total += c.Total
			}
		}
		into.adopt(t)
	}
	return root
}

// A Frame is an open call of a thread being read.
type Frame struct {
	Func  string
	Start float64 // ns
	Inner float64 // ns spent in its callees that returned (or were left)
	Path  *Path   // its place in a call graph, for those who build one
	// Off is the ns it spent off the CPU so far, callees' included;
	// OffSelf those not in callees.
	Off, OffSelf float64
}

// A Stack is a thread's open calls, innermost last: what every reader of
// a thread's calls keeps, bounded by the depth of nesting.
type Stack []Frame

// Pop closes the innermost call at ns and returns it with its duration;
// the caller's time in callees grows by it. ok is false when no call is
// open: an exit whose entry was not in the trace.
func (s *Stack) Pop(ns float64) (f Frame, dur float64, ok bool) {
	n := len(*s)
	if n == 0 {
		return Frame{}, 0, false
	}
	f = (*s)[n-1]
	*s = (*s)[:n-1]
	dur = max(ns-f.Start, 0)
	if n > 1 {
		(*s)[n-2].Inner += dur
	}
	return f, dur, true
}

// Closed yields a thread's events, and after them an Open for every call
// still open (open says how many are: one the reader did not close), at
// the thread's last event (a time off the CPU's end, when it was last):
// who reads them can then count on each Enter being closed.
func Closed(th trace.ThreadCalls, open func() int) iter.Seq[trace.CallEvent] {
	return func(yield func(trace.CallEvent) bool) {
		var last float64
		for ev := range th.Events {
			last = ev.NS
			if ev.Kind == trace.CallOff {
				last = max(last, ev.End) // a time off the CPU ends at End
			}
			if !yield(ev) {
				return
			}
		}
		for open() > 0 {
			if !yield(trace.CallEvent{Kind: trace.CallOpen, NS: last}) {
				return
			}
		}
	}
}
