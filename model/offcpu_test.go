package model_test

import (
	"fmt"
	"slices"
	"testing"

	"ftpatch/model"
	"ftpatch/trace"
)

// offPaths lists a call graph's paths depth first, each as
// "a;b calls total self off offself".
func offPaths(n *model.Path, prefix string, out *[]string) {
	for _, c := range n.Children {
		p := prefix + c.Func
		*out = append(*out, fmt.Sprintf("%s %d %g %g %g %g", p, c.Calls, c.Total, c.Self, c.Off, c.OffSelf))
		offPaths(c, p+";", out)
	}
}

// TestCallGraphOffCPU: each time off the CPU counts in the Off of every
// call running then, and in the OffSelf of the innermost; threads'
// paths sum them. CallGraphOffCPU makes each a leaf below the innermost
// call ("[sleeping]", "[pre-empted]"), out of that call's self time, or
// below the root when no call ran; and a call still open when its time
// off the CPU ran to the end of the trace is closed at that end.
func TestCallGraphOffCPU(t *testing.T) {
	ev := func(k trace.CallKind, fn string, ns float64) trace.CallEvent {
		return trace.CallEvent{Kind: k, Func: fn, NS: ns}
	}
	off := func(why trace.OffReason, from, to float64) trace.CallEvent {
		return trace.CallEvent{Kind: trace.CallOff, NS: from, End: to, Why: why}
	}
	// main [0, 100]: off 10-20 sleeping; a [30, 70] with off 40-50
	// pre-empted and 55-60 sleeping; off 80-90 pre-empted.
	one := []trace.CallEvent{
		ev(trace.CallEnter, "main", 0), off(trace.Sleeping, 10, 20),
		ev(trace.CallEnter, "a", 30), off(trace.Preempted, 40, 50), off(trace.Sleeping, 55, 60), ev(trace.CallExit, "a", 70),
		off(trace.Preempted, 80, 90), ev(trace.CallExit, "main", 100),
	}
	// Off before any call; main's a asleep to the end (never closed).
	two := []trace.CallEvent{
		off(trace.Sleeping, 0, 5),
		ev(trace.CallEnter, "main", 10), ev(trace.CallEnter, "a", 20), off(trace.Sleeping, 30, 60),
	}
	for _, c := range []struct {
		name  string
		graph func(threads [][]trace.CallEvent) *model.Path
		want  []string
	}{
		{"graph", func(ths [][]trace.CallEvent) *model.Path { return model.CallGraph(threadsOf(ths...), false, nil) }, []string{
			"main 2 150 70 65 20",
			"main;a 2 80 80 45 45",
		}},
		{"leaves", func(ths [][]trace.CallEvent) *model.Path { return model.CallGraphOffCPU(threadsOf(ths...), true, nil) }, []string{
			"main 2 150 50 65 20",
			"main;[sleeping] 1 10 10 10 10",
			"main;a 2 80 35 45 45",
			"main;a;[pre-empted] 1 10 10 10 10",
			"main;a;[sleeping] 2 35 35 35 35",
			"main;[pre-empted] 1 10 10 10 10",
			"[sleeping] 1 5 5 5 5",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			offPaths(c.graph([][]trace.CallEvent{one, two}), "", &got)
			if !slices.Equal(got, c.want) {
				t.Errorf("paths\n%q\nwant\n%q", got, c.want)
			}
		})
	}

	// Weighed: on the CPU, the leaves weigh nothing and the calls their
	// self time; off it, the leaves alone; together, the calls' time.
	var all, on, off2 float64
	for _, m := range []struct {
		cpu model.CPUTime
		to  *float64
	}{{model.AllTime, &all}, {model.OnCPU, &on}, {model.OffCPU, &off2}} {
		graph := model.CallGraphOffCPU
		if m.cpu == model.AllTime {
			graph = model.CallGraph
		}
		*m.to = model.Weigh(graph(threadsOf(one, two), false, nil), model.Merging{CPU: m.cpu})
		if got := model.CallGraphMerged(threadsOf(one, two), false, nil, model.Merging{CPU: m.cpu}).Total; got != *m.to {
			t.Errorf("CPU %d: merged, the graph weighs %g; exact %g", m.cpu, got, *m.to)
		}
	}
	if all != 150 || on != 85 || off2 != 70 {
		t.Errorf("the graph weighs %g in all, %g on the CPU, %g off it; want 150, 85 and 70 (65 within calls)", all, on, off2)
	}
}
