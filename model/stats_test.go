package model_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/tracetest"
	"ftpatch/model"
	"ftpatch/trace"
)

// TestReportAllOrder: report's figures for a trace of many threads are
// the same on every run, the threads' sums added in the streams' order
// whichever core finishes first. The clock runs 3 ticks a nanosecond, so
// each call's time is a fraction and the order of the additions shows in
// the sums' last bits.
func TestReportAllOrder(t *testing.T) {
	threads := map[int][]tracetest.Step{}
	for tid := 1; tid <= 16; tid++ {
		var steps []tracetest.Step
		ts := uint64(1)
		// Threads of different lengths, so they finish in no set order.
		for i := range 200 * (17 - tid) {
			steps = append(steps, tracetest.Step{K: trace.Entry, Fn: "f0", TS: ts})
			ts += uint64(1 + (i*7+tid)%11)
			steps = append(steps, tracetest.Step{K: trace.Exit, TS: ts})
			ts += 2
		}
		threads[tid] = steps
	}
	dir := tracetest.WriteDir(t, "function_graph", threads)
	meta := strings.Replace(tracetest.Meta("function_graph"), "tsc_end 1000000000", "tsc_end 3000000000", 1)
	if err := os.WriteFile(filepath.Join(dir, "meta"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := tracetest.Names(1)
	per, err := model.ReportThreads(tr, names, &trace.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// The streams' sums added in their order: what every run must give.
	var want, self float64
	for _, th := range per {
		want += th.Stats[0].Total
		self += th.Stats[0].Self
	}
	for run := range 50 {
		got, err := model.ReportAll(tr, names, &trace.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Total != want || got[0].Self != self {
			t.Fatalf("run %d: f0 total %v self %v, want %v and %v (the streams' sums in their order)", run, got[0].Total, got[0].Self, want, self)
		}
	}
}

// TestDiff: Diff pairs a base report's functions with a new one's by
// name, each change the new figure less the base's (negative where the
// new trace took less time or made fewer calls), total, self and calls
// alike; a function only one trace called has zero figures in the
// other; the biggest change in total time comes first, then in calls.
func TestDiff(t *testing.T) {
	base := []model.Stat{
		{Func: "faster", Calls: 2, Total: 100, Self: 80},
		{Func: "slower", Calls: 1, Total: 50, Self: 50},
		{Func: "gone", Calls: 1, Total: 5, Self: 5},
		{Func: "busier", Calls: 1, Total: 7, Self: 7},
	}
	new := []model.Stat{
		{Func: "faster", Calls: 2, Total: 40, Self: 30},
		{Func: "slower", Calls: 3, Total: 70, Self: 65},
		{Func: "added", Calls: 1, Total: 1, Self: 1},
		{Func: "busier", Calls: 4, Total: 7, Self: 7},
	}
	want := []model.Change{
		{Func: "faster", Base: base[0], New: new[0], TotalChange: -60, SelfChange: -50, CallsChange: 0},
		{Func: "slower", Base: base[1], New: new[1], TotalChange: +20, SelfChange: +15, CallsChange: +2},
		{Func: "gone", Base: base[2], TotalChange: -5, SelfChange: -5, CallsChange: -1},
		{Func: "added", New: new[2], TotalChange: +1, SelfChange: +1, CallsChange: +1},
		{Func: "busier", Base: base[3], New: new[3], CallsChange: +3},
	}
	got := model.Diff(base, new)
	if len(got) != len(want) {
		t.Fatalf("%d changes, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}
