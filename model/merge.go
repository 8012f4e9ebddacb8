package model

import (
	"iter"

	"ftpatch/trace"
)

// A Merging bounds a call graph by what a drawing of it can show: a flame
// graph draws no frame narrower than a fraction of a pixel, so the paths
// that light need not be kept apart; each is merged into its caller,
// its weight counted in the caller's Merged.
type Merging struct {
	// Share is the weight, as a share of the whole graph's, below which
	// a path is merged into its caller.
	Share float64
	// Calls weighs a path by its calls, not by its own time (Self): with
	// its callees', its frame's width.
	Calls bool
	// CPU is the time weighed: all of it (AllTime), or with each time
	// off the CPU a leaf of the graph (CallGraphOffCPU), the time on the
	// CPU alone (OnCPU) or off it alone (OffCPU).
	CPU CPUTime
}

// A CPUTime says which of the calls' time a graph weighs.
type CPUTime uint8

// The times a graph weighs.
const (
	AllTime CPUTime = iota // the calls' time, on the CPU or off it: no leaves for the times off it
	OnCPU                  // their time on the CPU: each time off it a leaf (Path.Why) that weighs nothing
	OffCPU                 // their time off the CPU: each a leaf weighing it, the calls nothing of their own
)

// Weight is what n weighs by m's measure, its callees left out: its
// own time (or calls) and what was merged into it.
func (m Merging) Weight(n *Path) float64 { return m.own(n.Calls, n.Self, n.Why != 0) + n.Merged }

// own is the weight of calls calls that took self ns of their own;
// off: they are times off the CPU (a leaf), not calls.
func (m Merging) own(calls int, self float64, off bool) float64 {
	if m.CPU == OnCPU && off || m.CPU == OffCPU && !off {
		return 0
	}
	if m.Calls {
		return float64(calls)
	}
	return self
}

// Weigh sets the Total of every Path of the tree at n to its weight by
// m's measure with its callees' (a flame graph's frame is exactly as
// wide as what stands on it and its own part), and returns n's. It
// walks the tree with a stack of its own, not by recursion.
func Weigh(n *Path, m Merging) float64 {
	type item struct {
		n    *Path
		next int // children weighed
	}
	stack := []item{{n: n}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next == 0 {
			top.n.Total = m.Weight(top.n)
		}
		if top.next < len(top.n.Children) {
			c := top.n.Children[top.next]
			top.next++
			stack = append(stack, item{n: c})
			continue
		}
		stack = stack[:len(stack)-1]
		if len(stack) > 0 {
			stack[len(stack)-1].n.Total += top.n.Total
		}
	}
	return n.Total
}

// CallGraphMerged is CallGraph (CallGraphOffCPU, unless m.CPU is
// AllTime) with the paths lighter than m.Share of the whole merged into
// their callers, as the threads are read, and each Path's Total its
// weight by m's measure (Weigh): what it holds is
// bounded by what a drawing shows (about 1/m.Share paths a level, and
// the calls open at once), not by the distinct paths of the trace.
//
// A path is merged away as soon as it is light enough so far (lossy
// counting, Manku and Motwani, "Approximate frequency counts over data
// streams", 2002): made again later, it starts with what it weighed
// then counted as lost, and is merged again only while that and its
// weight since stay below the share of the weight read so far. So a
// path weighs at most m.Share of the whole less than its calls do, for
// a thread's tree and again for the threads' merged graph; one that
// weighs more than twice that is kept, the rest of its weight its
// caller's Merged.
func CallGraphMerged(threads iter.Seq[trace.ThreadCalls], inOrder bool, perThread func(trace.ThreadCalls) string, m Merging) *Path {
	root := &Path{}
	rm := newMerger(m)
	tree := func(th trace.ThreadCalls) *Path {
		t := &Path{}
		fold(t, th, newMerger(m), m.CPU != AllTime)
		return t
	}
	for th, t := range threadTrees(threads, inOrder, tree) {
		into := root
		if perThread != nil {
			into = rm.child(root, perThread(th))
		}
		w := Weigh(t, m)
		if len(into.Children) == 0 && into.Merged == 0 {
			// Nothing merged away below into yet: t's paths as they are.
			into.Children, into.index = t.Children, t.index
			rm.nodes += count(t)
		} else {
			into.merge(t, func(c *Path) {
				rm.nodes++
				c.lost = rm.limit() // what the graph may have merged away of it before
			})
		}
		into.Merged += t.Merged // the thread's outermost paths merged away
		rm.add(w)
		if rm.nodes > rm.budget {
			rm.merge(root)
		}
	}
	rm.merge(root)
	Weigh(root, m)
	return root
}

// mergeBudget is the least number of paths a tree holds before its
// light ones are merged.
const mergeBudget = 1 << 14

// A merger merges the light paths of a tree being built (CallGraphMerged).
type merger struct {
	Merging
	whole  float64 // the weight added to the tree so far
	nodes  int     // its paths
	budget int     // the paths past which the light ones are merged
}

func newMerger(m Merging) *merger { return &merger{Merging: m, budget: mergeBudget} }

// limit is the weight below which a path is light so far.
func (m *merger) limit() float64 { return m.Share * m.whole }

// add counts weight w added to the tree.
func (m *merger) add(w float64) { m.whole += w }

// child is n.Child, a path it makes counted, and given as lost the most
// the tree may have merged of it before.
func (m *merger) child(n *Path, fn string) *Path {
	k := len(n.Children)
	c := n.Child(fn)
	if len(n.Children) > k {
		m.nodes++
		c.lost = m.limit()
	}
	return c
}

// merge merges into its caller each path of the tree at root whose
// weight with its callees', and what it may have lost before, is below
// the limit, unless a call of it is open; then sets the budget to twice
// the paths left, so that merging costs a constant a path made. It walks
// the tree with a stack of its own.
func (m *merger) merge(root *Path) {
	limit := m.limit()
	if limit == 0 {
		// Nothing weighs less than nothing: a thread deep in calls that
		// have not ended yet.
		m.budget = max(mergeBudget, 2*m.nodes)
		return
	}
	type item struct {
		n      *Path
		weight float64 // its own, and its kept callees' with theirs
		next   int32   // children seen
		paths  int32   // it and its kept callees
	}
	stack := []item{{n: root, weight: m.Weight(root), paths: 1}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if int(top.next) < len(top.n.Children) {
			c := top.n.Children[top.next]
			top.next++
			stack = append(stack, item{n: c, weight: m.Weight(c), paths: 1})
			continue
		}
		top.n.dropGone()
		done := *top
		stack = stack[:len(stack)-1]
		if len(stack) == 0 {
			m.nodes = int(done.paths) - 1 // the root is no path
			break
		}
		parent := &stack[len(stack)-1]
		parent.weight += done.weight
		if done.n.open == 0 && done.weight+done.n.lost < limit {
			parent.n.Merged += done.weight
			done.n.gone = true
			continue
		}
		parent.paths += done.paths
	}
	m.budget = max(mergeBudget, 2*m.nodes)
}

// dropGone removes n's children merged into it, keeping the others'
// order; their index is made anew when it lost half (a map keeps the
// room of what it held).
func (n *Path) dropGone() {
	kept := n.Children[:0]
	for _, c := range n.Children {
		if !c.gone {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(n.Children) {
		return
	}
	dropped := len(n.Children) - len(kept)
	clear(n.Children[len(kept):])
	n.Children = kept
	if n.index == nil {
		return
	}
	if len(kept) <= indexAt || dropped > len(kept) {
		n.index = nil
		if len(kept) > indexAt {
			n.index = make(map[string]*Path, len(kept))
			for _, c := range kept {
				n.index[c.Func] = c
			}
		}
		return
	}
	for k, c := range n.index {
		if c.gone {
			delete(n.index, k)
		}
	}
}

// count is the number of paths below n.
func count(n *Path) int {
	paths := 0
	stack := []*Path{n}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		paths += len(p.Children)
		stack = append(stack, p.Children...)
	}
	return paths
}
