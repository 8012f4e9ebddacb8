package model_test

import (
	"fmt"
	"iter"
	"slices"
	"testing"

	"ftpatch/model"
	"ftpatch/trace"
)

// threadsOf is the threads of a made-up trace: each a list of events.
func threadsOf(threads ...[]trace.CallEvent) iter.Seq[trace.ThreadCalls] {
	return func(yield func(trace.ThreadCalls) bool) {
		for i, evs := range threads {
			if !yield(trace.ThreadCalls{Pid: 1, Tid: i + 1, Events: slices.Values(evs)}) {
				return
			}
		}
	}
}

// paths lists a call graph's paths depth first, each as
// "a;b calls total self unwound open".
func paths(n *model.Path, prefix string, out *[]string) {
	for _, c := range n.Children {
		p := prefix + c.Func
		*out = append(*out, fmt.Sprintf("%s %d %g %g %d %d", p, c.Calls, c.Total, c.Self, c.Unwound, c.Open))
		paths(c, p+";", out)
	}
}

// TestCallGraph: the call graph sums each path's calls, total and self
// time over every thread, in the order paths were first called, the
// same whether built on every core or in order; a call left unclosed is
// closed (open) at the thread's last event; per thread, each thread's
// paths stand below a path named for it, with their total.
func TestCallGraph(t *testing.T) {
	ev := func(k trace.CallKind, fn string, ns float64) trace.CallEvent {
		return trace.CallEvent{Kind: k, Func: fn, NS: ns}
	}
	one := []trace.CallEvent{
		ev(trace.CallEnter, "main", 0),
		ev(trace.CallEnter, "a", 10), ev(trace.CallEnter, "a", 12), ev(trace.CallExit, "a", 14), ev(trace.CallExit, "a", 20),
		ev(trace.CallEnter, "b", 30), ev(trace.CallUnwound, "b", 35),
		ev(trace.CallExit, "main", 50),
	}
	two := []trace.CallEvent{
		ev(trace.CallEnter, "main", 0),
		ev(trace.CallEnter, "a", 5), ev(trace.CallExit, "a", 9),
		ev(trace.CallEnter, "c", 40), // still running at the end: closed at 40
	}
	want := []string{
		"main 2 90 71 0 1",
		"main;a 2 14 12 0 0",
		"main;a;a 1 2 2 0 0",
		"main;b 1 5 5 1 0",
		"main;c 1 0 0 0 1",
	}
	for _, inOrder := range []bool{false, true} {
		var got []string
		paths(model.CallGraph(threadsOf(one, two), inOrder, nil), "", &got)
		if !slices.Equal(got, want) {
			t.Errorf("inOrder %v: paths\n%q\nwant\n%q", inOrder, got, want)
		}
	}
	var got []string
	name := func(th trace.ThreadCalls) string { return fmt.Sprintf("thread %d", th.Tid) }
	paths(model.CallGraph(threadsOf(one, two), false, name), "", &got)
	if len(got) < 2 || got[0] != "thread 1 0 50 0 0 0" || !slices.Contains(got, "thread 2 0 40 0 0 0") || !slices.Contains(got, "thread 2;main;c 1 0 0 0 1") {
		t.Errorf("per thread: paths\n%q", got)
	}
}
