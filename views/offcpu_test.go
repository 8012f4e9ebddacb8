package views

import (
	"bytes"
	"strings"
	"testing"

	"ftpatch/internal/tracetest"
	"ftpatch/model"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// offCPUTrace is a thread whose f0 calls f1 (which sleeps 30 ms, in
// three 10 ms naps, 34 ms in all), then f2 (a leaf pre-empted for 2 ms), and which
// sleeps 5 ms in f0 itself; every time in ns.
func offCPUTrace(t *testing.T) string {
	t.Helper()
	ms := uint64(1e6)
	dir := tracetest.WriteDir(t, "function_graph", map[int][]step{1: {
		{K: trace.Entry, Fn: "f0", TS: 1 * ms},
		{K: trace.Entry, Fn: "f1", TS: 2 * ms},
		{K: trace.Exit, TS: 36 * ms},
		{K: trace.Entry, Fn: "f2", TS: 41 * ms},
		{K: trace.Exit, TS: 50 * ms},
		{K: trace.Exit, TS: 60 * ms},
	}})
	var evs []tracetest.SchedEvent
	for i := range uint64(3) {
		evs = append(evs, tracetest.SchedEvent{TS: (3 + 11*i) * ms, Kind: abi.SchedSleep}, tracetest.SchedEvent{TS: (13 + 11*i) * ms, Kind: abi.SchedIn})
	}
	evs = append(evs, tracetest.SchedEvent{TS: 45 * ms, Kind: abi.SchedPreempt}, tracetest.SchedEvent{TS: 47 * ms, Kind: abi.SchedIn},
		tracetest.SchedEvent{TS: 52 * ms, Kind: abi.SchedSleep}, tracetest.SchedEvent{TS: 57 * ms, Kind: abi.SchedIn})
	tracetest.WriteSched(t, dir, 3, map[int][]tracetest.SchedEvent{1: evs})
	return dir
}

// TestReplayOffCPU: replay shows each time off the CPU nested in the
// call that waited, in words and in the DURATION column; a threshold
// leaves out the shorter ones, as it would calls.
func TestReplayOffCPU(t *testing.T) {
	dir := offCPUTrace(t)
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ReplayGraph(&out, tr, tracetest.Names(3), &trace.Filter{}); err != nil {
		t.Fatal(err)
	}
	want := `# DURATION     TID     FUNCTION
           [     1] | f0() {
           [     1] |   f1() {
 10.000 ms [     1] |     /* off-CPU 10.000 ms: sleeping */
 10.000 ms [     1] |     /* off-CPU 10.000 ms: sleeping */
 10.000 ms [     1] |     /* off-CPU 10.000 ms: sleeping */
 34.000 ms [     1] |   } /* f1 */
           [     1] |   f2() {
  2.000 ms [     1] |     /* pre-empted 2.000 ms */
  9.000 ms [     1] |   } /* f2 */
  5.000 ms [     1] |   /* off-CPU 5.000 ms: sleeping */
 59.000 ms [     1] | } /* f0 */
`
	if got := out.String(); !strings.HasPrefix(got, want) {
		t.Errorf("replay:\n%s\nwant:\n%s", got, want)
	}
	out.Reset()
	if err := ReplayGraph(&out, tr, tracetest.Names(3), &trace.Filter{Threshold: 3e6}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, "pre-empted") || strings.Count(got, "off-CPU") != 4 {
		t.Errorf("replay -t 3ms shows the 2 ms pre-emption, or not the four longer naps:\n%s", got)
	}
}

// TestReportOffCPU: report splits each function's total into the time
// on the CPU and off it, which sum to the total, and sorts by either.
func TestReportOffCPU(t *testing.T) {
	tr, err := trace.Open(offCPUTrace(t))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := model.ReportGraph(tr, tracetest.Names(3), &trace.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{"f0": {59e6, 37e6}, "f1": {34e6, 30e6}, "f2": {9e6, 2e6}}
	wantSelfOff := map[string]float64{"f0": 5e6, "f1": 30e6, "f2": 2e6}
	for _, s := range stats {
		w := want[s.Func]
		if !near(s.Total, w[0]) || !near(s.Off, w[1]) || !near(s.SelfOff, wantSelfOff[s.Func]) || s.Off > s.Total || s.SelfOff > s.Self {
			t.Errorf("%s: total %.0f off %.0f self off %.0f (self %.0f), want %.0f, %.0f, %.0f", s.Func, s.Total, s.Off, s.SelfOff, s.Self, w[0], w[1], wantSelfOff[s.Func])
		}
	}
	if err := model.SortStats(stats, "offcpu"); err != nil || stats[0].Func != "f0" || stats[1].Func != "f1" {
		t.Errorf("--sort offcpu: %v, %+v", err, stats)
	}
	if err := model.SortStats(stats, "oncpu"); err != nil || stats[0].Func != "f0" || stats[1].Func != "f2" || stats[2].Func != "f1" {
		t.Errorf("--sort oncpu: %v, %+v", err, stats)
	}
	var out bytes.Buffer
	if err := Report(&out, Input{Trace: tr, Names: tracetest.Names(3), Filter: &trace.Filter{}}, Options{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "     TOTAL      ON-CPU     OFF-CPU        SELF     CALLS  FUNCTION" || lines[1] != " 59.000 ms   22.000 ms   37.000 ms   16.000 ms         1  f0" {
		t.Errorf("report:\n%s", out.String())
	}
}

// TestInfoOffCPU: info says whether scheduler events were recorded,
// how many, what was lost, and why the kernel refused them.
func TestInfoOffCPU(t *testing.T) {
	for _, c := range []struct {
		meta trace.Meta
		want string
	}{
		{trace.Meta{Sched: abi.SchedOn, SchedSwitches: 12, SchedLost: 1}, "scheduler events:   on: 12 times a thread left the CPU, recorded; 1 event lost\n"},
		{trace.Meta{Sched: abi.SchedRefused, SchedWhy: "perf_event_open: EACCES"}, "scheduler events:   refused by the kernel (perf_event_open: EACCES): the calls are all there, but not when their threads were off the CPU\n"},
		{trace.Meta{}, "scheduler events:   not recorded"},
	} {
		var out bytes.Buffer
		m := c.meta
		m.Tracer = "function_graph"
		if err := Info(&out, Input{Meta: &m, Threads: func(func(Thread) bool) {}}, Options{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("info of %+v:\n%s\nwant a line %q", c.meta, out.String(), c.want)
		}
	}
}

// TestReplayCallsOffCPU: a function trace's replay shows each time off
// the CPU as a line of its own, in time order among the calls.
func TestReplayCallsOffCPU(t *testing.T) {
	ms := uint64(1e6)
	dir := tracetest.WriteDir(t, "function", map[int][]step{1: {
		{K: trace.Call, Fn: "f0", TS: 1 * ms},
		{K: trace.Call, Fn: "f1", TS: 20 * ms},
	}})
	tracetest.WriteSched(t, dir, 0, map[int][]tracetest.SchedEvent{1: {{TS: 2 * ms, Kind: abi.SchedSleep}, {TS: 12 * ms, Kind: abi.SchedIn}, {TS: 21 * ms, Kind: abi.SchedPreempt}}})
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ReplayCalls(&out, tr, tracetest.Names(2), &trace.Filter{}); err != nil {
		t.Fatal(err)
	}
	want := `#   TIME(us)      TID  FUNCTION <- CALLER
    1000.000        1  f0 <- 0x99
    2000.000        1  /* off-CPU 10.000 ms: sleeping */
   20000.000        1  f1 <- 0x99
   21000.000        1  /* pre-empted 979.000 ms */
`
	if got := out.String(); !strings.HasPrefix(got, want) {
		t.Errorf("replay:\n%s\nwant:\n%s", got, want)
	}
}
