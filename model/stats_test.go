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
