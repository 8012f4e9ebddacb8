package main

import (
	"ftpatch/symbols"
	"ftpatch/trace"
	"ftpatch/views"
)

// input is the views' Input of a trace: each thread's calls the filter
// keeps, read from its stream as the view goes (trace.Threads), each
// thread's calls counted (trace.Counts: all of them), and the
// trace, its names and the filter for the views that read its streams
// their own way (replay, report); a stream that cannot be read ends the
// input, its error in *err.
func input(t *trace.Trace, syms *symbols.Table, f *trace.Filter, err *error) views.Input {
	return views.Input{Meta: &t.Meta, Threads: t.Threads(syms, f, err), Counts: t.Counts(err), Trace: t, Names: syms, Filter: f}
}

// inputs are the views' Inputs of every process image l loaded, in the
// order they started (views.WriteSession reads them).
func (l *loaded) inputs(f *trace.Filter, err *error) []views.Input {
	out := make([]views.Input, len(l.procs))
	for i, p := range l.procs {
		out[i] = input(p.t, p.syms, f, err)
	}
	return out
}
