package model_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"ftpatch/model"
	"ftpatch/trace"
)

// randomCalls is a thread of n calls made by a program that spends most
// of its time in a few paths, and runs through many more, each briefly:
// nested up to 6 deep, of 40 functions, some unwound, some still running
// at the end.
func randomCalls(r *rand.Rand, n int) []trace.CallEvent {
	var evs []trace.CallEvent
	ns, depth := 0.0, 0
	for range n {
		switch x := r.IntN(100); {
		case depth < 6 && (x < 50 || depth == 0):
			fn := fmt.Sprintf("f%d", r.IntN(40))
			if r.IntN(4) == 0 {
				fn = fmt.Sprintf("hot%d", r.IntN(3))
			}
			evs = append(evs, trace.CallEvent{Kind: trace.CallEnter, Func: fn, NS: ns})
			depth++
		case x < 97:
			evs = append(evs, trace.CallEvent{Kind: trace.CallExit, NS: ns})
			depth--
		default:
			evs = append(evs, trace.CallEvent{Kind: trace.CallUnwound, NS: ns})
			depth--
		}
		ns += float64(1 + r.IntN(10))
		if r.IntN(500) == 0 {
			ns += 1e5 // a long call, now and then
		}
	}
	return evs
}

// withOffCPU is evs with a time off the CPU, of either reason, after
// one event in eight: 1 to 50 ns, now and then 1e5.
func withOffCPU(r *rand.Rand, evs []trace.CallEvent) []trace.CallEvent {
	var out []trace.CallEvent
	shift := 0.0
	for _, ev := range evs {
		ev.NS += shift
		out = append(out, ev)
		if r.IntN(8) == 0 {
			d := float64(1 + r.IntN(50))
			if r.IntN(300) == 0 {
				d = 1e5
			}
			why := trace.Sleeping
			if r.IntN(3) == 0 {
				why = trace.Preempted
			}
			out = append(out, trace.CallEvent{Kind: trace.CallOff, NS: ev.NS, End: ev.NS + d, Why: why})
			shift += d
		}
	}
	return out
}

// TestCallGraphMerged: the merged call graph weighs the whole trace as
// the exact one does; a path it keeps is one of the exact graph's, and
// weighs no more, and at most twice Share of the whole less, than its
// calls did (what it lost is its caller's Merged); every path weighing
// more than that is kept; each path's Total is its weight and its
// callees'. Without a share it is the exact graph. Per thread, threads
// built on every core or in order alike; and weighing the time on the
// CPU or off it alone, the times off it leaves of the graph.
func TestCallGraphMerged(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var threads, offThreads [][]trace.CallEvent
	for range 5 {
		threads = append(threads, randomCalls(r, 60000))
		offThreads = append(offThreads, withOffCPU(r, threads[len(threads)-1]))
	}
	for _, c := range []struct {
		name      string
		share     float64
		calls     bool
		inOrder   bool
		perThread bool
		cpu       model.CPUTime
	}{
		{"exact", 0, false, false, false, model.AllTime},
		{"exact/calls", 0, true, true, false, model.AllTime},
		{"time", 1e-4, false, false, false, model.AllTime},
		{"time/inorder", 1e-3, false, true, false, model.AllTime},
		{"calls", 1e-3, true, false, false, model.AllTime},
		{"time/perthread", 1e-3, false, false, true, model.AllTime},
		{"coarse", 0.05, false, false, false, model.AllTime},
		{"exact/oncpu", 0, false, false, false, model.OnCPU},
		{"exact/offcpu", 0, false, true, false, model.OffCPU},
		{"oncpu", 1e-3, false, false, false, model.OnCPU},
		{"offcpu", 1e-3, false, false, true, model.OffCPU},
		{"offcpu/calls", 1e-3, true, false, false, model.OffCPU},
	} {
		t.Run(c.name, func(t *testing.T) {
			var name func(trace.ThreadCalls) string
			if c.perThread {
				name = func(th trace.ThreadCalls) string { return fmt.Sprintf("thread %d", th.Tid) }
			}
			m := model.Merging{Share: c.share, Calls: c.calls, CPU: c.cpu}
			graph, threads := model.CallGraph, threads
			if c.cpu != model.AllTime {
				graph, threads = model.CallGraphOffCPU, offThreads
			}
			exact := graph(threadsOf(threads...), c.inOrder, name)
			whole := model.Weigh(exact, m)
			got := model.CallGraphMerged(threadsOf(threads...), c.inOrder, name, m)
			if math.Abs(got.Total-whole) > 1e-9*whole {
				t.Fatalf("the whole weighs %g, want %g", got.Total, whole)
			}
			slack := 2*c.share*whole + 1e-9*whole
			kept, all := 0, 0
			var walk func(g, e *model.Path, path string)
			walk = func(g, e *model.Path, path string) {
				sum := m.Weight(g)
				for _, gc := range g.Children {
					kept++
					sum += gc.Total
					var ec *model.Path
					for _, x := range e.Children {
						if x.Func == gc.Func {
							ec = x
						}
					}
					p := path + ";" + gc.Func
					if ec == nil {
						t.Fatalf("%s: not a path of the trace", p)
					}
					if gc.Total > ec.Total+1e-9*whole || ec.Total-gc.Total > slack {
						t.Errorf("%s weighs %g, the trace's calls %g: want at most %g less", p, gc.Total, ec.Total, slack)
					}
					if c.share == 0 && (gc.Calls != ec.Calls || gc.Self != ec.Self || gc.Merged != 0) {
						t.Errorf("%s: %d calls, %g ns of its own, %g merged; want the exact graph's %d, %g", p, gc.Calls, gc.Self, gc.Merged, ec.Calls, ec.Self)
					}
					walk(gc, ec, p)
				}
				if math.Abs(sum-g.Total) > 1e-9*whole {
					t.Errorf("%s: total %g, its weight and its callees' %g", path, g.Total, sum)
				}
				for _, ec := range e.Children {
					all++
					found := false
					for _, gc := range g.Children {
						found = found || gc.Func == ec.Func
					}
					if !found && ec.Total > slack {
						t.Errorf("%s;%s weighs %g, more than %g, and was merged", path, ec.Func, ec.Total, slack)
					}
				}
			}
			walk(got, exact, "")
			t.Logf("%d paths kept of %d", kept, all)
			if c.share == 0 && kept != all {
				t.Errorf("%d paths kept of %d without a share", kept, all)
			}
			if c.share >= 1e-3 && kept > all/2 {
				t.Errorf("%d paths kept of %d: few merged", kept, all)
			}
		})
	}
}
