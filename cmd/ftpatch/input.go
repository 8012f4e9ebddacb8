package main

import (
	"cmp"
	"iter"
	"slices"

	"ftpatch/trace"
	"ftpatch/views"
)

// input makes the views' Input of a trace read whole into memory: each
// thread's call trees (trace.Graph) walked into events, or a function
// trace's calls (trace.Events) by thread. It stands where a streaming
// reader will, which yields the same Input.
func input(t *trace.Trace, syms *trace.Symbols) views.Input {
	in := views.Input{Meta: &t.Meta}
	if t.Meta.Tracer == "function" {
		calls := map[[2]int][]views.Event{}
		for _, e := range trace.Events(t, syms) {
			k := [2]int{e.Pid, e.Tid}
			calls[k] = append(calls[k], views.Event{Kind: views.Call, Func: e.Func, NS: e.Nanos})
		}
		in.Threads = func(yield func(views.Thread) bool) {
			for _, s := range t.Streams {
				if !yield(views.Thread{Pid: s.Pid, Tid: s.Tid, Events: slices.Values(calls[[2]int{s.Pid, s.Tid}])}) {
					return
				}
			}
		}
		return in
	}
	threads := trace.Graph(t, syms)
	slices.SortStableFunc(threads, func(a, b trace.Thread) int {
		return cmp.Or(cmp.Compare(a.Pid, b.Pid), cmp.Compare(a.Tid, b.Tid), cmp.Compare(a.Context, b.Context))
	})
	in.Threads = func(yield func(views.Thread) bool) {
		for _, th := range threads {
			if !yield(views.Thread{Pid: th.Pid, Tid: th.Tid, Context: th.Context, Events: walk(th.Roots)}) {
				return
			}
		}
	}
	return in
}

// walk yields the events of call trees: each call's Enter, its callees',
// then its Exit, Unwound or Open.
func walk(roots []*trace.Node) iter.Seq[views.Event] {
	return func(yield func(views.Event) bool) {
		type open struct {
			n    *trace.Node
			next int // its next callee
		}
		var st []open
		for _, r := range roots {
			if !yield(views.Event{Kind: views.Enter, Func: r.Func, NS: r.Start}) {
				return
			}
			st = append(st[:0], open{n: r})
			for len(st) > 0 {
				top := &st[len(st)-1]
				if top.next < len(top.n.Children) {
					c := top.n.Children[top.next]
					top.next++
					if !yield(views.Event{Kind: views.Enter, Func: c.Func, NS: c.Start}) {
						return
					}
					st = append(st, open{n: c})
					continue
				}
				n := top.n
				st = st[:len(st)-1]
				k := views.Exit
				switch {
				case n.Unwound:
					k = views.Unwound
				case n.Open:
					k = views.Open
				}
				if !yield(views.Event{Kind: k, Func: n.Func, NS: n.End}) {
					return
				}
			}
		}
	}
}
