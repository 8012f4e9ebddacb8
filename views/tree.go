package views

import (
	"cmp"
	"iter"
	"runtime"
	"slices"
	"sync"
)

// A node is one call path of a call tree: a function as called from its
// parent's path, with the calls made along that path summed. The tree
// has a node per distinct path, whatever the number of calls: the folded
// stacks, the flame graph and the call graph are drawn from it.
type node struct {
	fn       string
	calls    int
	total    float64 // ns in its calls, callees included
	self     float64 // ns in its calls, callees not included
	unwound  int     // calls left without returning
	open     int     // calls still running when the trace ended
	children []*node // in the order first called
	index    map[string]*node
}

// indexAt is the number of children past which child looks them up in a
// map rather than in order.
const indexAt = 8

// child returns n's child for fn, adding it when fn was not called from
// n's path before.
func (n *node) child(fn string) *node {
	if n.index != nil {
		if c := n.index[fn]; c != nil {
			return c
		}
	} else {
		for _, c := range n.children {
			if c.fn == fn {
				return c
			}
		}
	}
	c := &node{fn: fn}
	n.children = append(n.children, c)
	switch {
	case n.index != nil:
		n.index[fn] = c
	case len(n.children) > indexAt:
		n.index = make(map[string]*node, len(n.children))
		for _, c := range n.children {
			n.index[c.fn] = c
		}
	}
	return c
}

// add sums o's counts and times into n.
func (n *node) add(o *node) {
	n.calls += o.calls
	n.total += o.total
	n.self += o.self
	n.unwound += o.unwound
	n.open += o.open
}

// merge adds the paths below o (its children and theirs) to those below
// n: the same path in both is one node, its counts and times summed.
func (n *node) merge(o *node) {
	for _, oc := range o.children {
		c := n.child(oc.fn)
		c.add(oc)
		c.merge(oc)
	}
}

// byName returns n's children sorted by function name.
func (n *node) byName() []*node {
	s := slices.Clone(n.children)
	slices.SortFunc(s, func(a, b *node) int { return cmp.Compare(a.fn, b.fn) })
	return s
}

// fold adds a thread's calls to the tree below root: each call to the
// node of its path, its duration to the node's total, and to its self
// time what its callees did not take.
func fold(root *node, th Thread) {
	var st stack
	parent := func() *node {
		if len(st) == 0 {
			return root
		}
		return st[len(st)-1].node
	}
	for ev := range events(th, func() int { return len(st) }) {
		switch {
		case ev.Kind == Enter:
			st = append(st, frame{fn: ev.Func, start: ev.NS, node: parent().child(ev.Func)})
		case ev.Kind == Call:
			parent().child(ev.Func).calls++
		case closing(ev.Kind):
			f, dur, ok := st.pop(ev.NS)
			if !ok {
				continue // its entry was not in the trace
			}
			n := f.node
			n.calls++
			n.total += dur
			n.self += max(dur-f.inner, 0)
			switch ev.Kind {
			case Unwound:
				n.unwound++
			case Open:
				n.open++
			}
		}
	}
}

// threadTree is the call tree of one thread, from its events alone:
// threads' trees can be built in parallel, one per core, and merged.
func threadTree(th Thread) *node {
	t := &node{}
	fold(t, th)
	return t
}

// threadTrees yields each thread of in with its call tree, in order.
// Without contexts (whose threads are known only as the one before them
// is read) the trees are built on every core, a thread each.
func threadTrees(in Input) iter.Seq2[Thread, *node] {
	if in.Meta.Contexts > 0 || runtime.GOMAXPROCS(0) == 1 {
		return func(yield func(Thread, *node) bool) {
			for th := range in.Threads {
				if !yield(th, threadTree(th)) {
					return
				}
			}
		}
	}
	return func(yield func(Thread, *node) bool) {
		type job struct {
			th   Thread
			tree *node
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
		next, stop := iter.Pull(in.Threads)
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

// callTree is the call tree of every thread of in: each thread's tree
// (threadTree) merged into the whole. With perThread each thread's paths
// stay below a node named for the thread.
func callTree(in Input, perThread bool) *node {
	root := &node{}
	for th, t := range threadTrees(in) {
		into := root
		if perThread {
			into = root.child(threadName(th))
			for _, c := range t.children {
				into.total += c.total
			}
		}
		into.merge(t)
	}
	return root
}
