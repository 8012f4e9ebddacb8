package views_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"ftpatch/internal/viewcheck"
	"ftpatch/trace"
	"ftpatch/views"
)

// offThread is a made-up thread whose events may hold times off the
// CPU.
type offThread struct {
	pid, tid int
	ctx      uint64
	events   []views.Event
}

// madeOff is an Input of made-up threads as made's, its metadata saying
// it recorded scheduler events (sched on).
func madeOff(threads ...offThread) views.Input {
	var ths []thread
	for _, th := range threads {
		ths = append(ths, thread{pid: th.pid, tid: th.tid, ctx: th.ctx})
	}
	in := made("function_graph", ths...)
	in.Meta.Sched = "on"
	inner := in.Threads
	in.Threads = func(yield func(views.Thread) bool) {
		i := 0
		for th := range inner {
			evs := threads[i].events
			i++
			read := false
			th.Events = func(y func(views.Event) bool) {
				if read {
					panic("a thread's events read twice")
				}
				read = true
				for _, ev := range evs {
					if !y(ev) {
						return
					}
				}
			}
			if !yield(th) {
				return
			}
		}
	}
	return in
}

func ev(k views.Kind, fn string, ns float64) views.Event {
	return views.Event{Kind: k, Func: fn, NS: ns}
}

// offEv is a time off the CPU from ns to end.
func offEv(why trace.OffReason, ns, end float64) views.Event {
	return views.Event{Kind: views.Off, NS: ns, End: end, Why: why}
}

// sleepy is a function_graph trace with times off the CPU:
//
//	thread 1:  main [0, 1000]: a [100, 400] asleep [200, 300] in it;
//	           pre-empted [500, 600] in main; b [700, 900]: leaf
//	           [750, 800], then asleep [800, 850] in b
//	thread 2:  worker [50, 300] pre-empted [100, 250] in it; asleep
//	           [400, 450] in no call
func sleepy() views.Input {
	return madeOff(
		offThread{1, 1, 0, []views.Event{
			ev(enter, "main", 0), ev(enter, "a", 100), offEv(trace.Sleeping, 200, 300), ev(exit, "a", 400),
			offEv(trace.Preempted, 500, 600),
			ev(enter, "b", 700), ev(enter, "leaf", 750), ev(exit, "leaf", 800), offEv(trace.Sleeping, 800, 850), ev(exit, "b", 900),
			ev(exit, "main", 1000),
		}},
		offThread{1, 2, 0, []views.Event{
			ev(enter, "worker", 50), offEv(trace.Preempted, 100, 250), ev(exit, "worker", 300),
			offEv(trace.Sleeping, 400, 450),
		}},
	)
}

// TestGraphOffCPU: a trace with scheduler events has its paths' time
// off the CPU beside their total, callees' included, the backtraces
// too; one whose metadata says it recorded them shows the column even
// where no thread left the CPU.
func TestGraphOffCPU(t *testing.T) {
	still := func() views.Input {
		in := known()
		in.Meta.Sched = "on"
		return in
	}
	for _, c := range []struct {
		name string
		in   func() views.Input
		fn   string
		want string
	}{
		{name: "whole", in: sleepy, want: `# Function Call Graph for 'prog' (pid 1)
========== FUNCTION CALL GRAPH ==========
# TOTAL TIME     OFF-CPU   FUNCTION
    1.250 us    0.400 us : (1) prog
    1.000 us    0.250 us :  +-(1) main
    0.300 us    0.100 us :  |  +-(1) a
                         :  |  | 
    0.200 us    0.050 us :  |  +-(1) b
    0.050 us    0.000 us :  |    (1) leaf
                         :  | 
    0.250 us    0.150 us :  +-(1) worker

`},
		{name: "func", in: sleepy, fn: "b", want: `# Function Call Graph for 'b' (pid 1)
=============== BACKTRACE ===============
 backtrace #0: hit 1, time   0.200 us, off-cpu   0.050 us
   [0] main
   [1] b

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME     OFF-CPU   FUNCTION
    0.200 us    0.050 us : (1) b
    0.050 us    0.000 us : (1) leaf

`},
		{name: "never off", in: still, fn: "a", want: `# Function Call Graph for 'a' (pid 1)
=============== BACKTRACE ===============
 backtrace #0: hit 1, time   0.300 us, off-cpu   0.000 us
   [0] main
   [1] a

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME     OFF-CPU   FUNCTION
    0.300 us    0.000 us : (1) a
    0.100 us    0.000 us : (1) leaf

`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := views.Graph(&out, c.in(), views.Options{Func: c.fn}); err != nil {
				t.Fatal(err)
			}
			if out.String() != c.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), c.want)
			}
		})
	}
}

// withoutOff is in without its times off the CPU nor its metadata's
// word of them: the trace as recorded without scheduler events.
func withoutOff(in views.Input) views.Input {
	in.Meta.Sched = ""
	threads := in.Threads
	in.Threads = func(yield func(views.Thread) bool) {
		for th := range threads {
			events := th.Events
			th.Events = func(y func(views.Event) bool) {
				for ev := range events {
					if ev.Kind != views.Off && !y(ev) {
						return
					}
				}
			}
			if !yield(th) {
				return
			}
		}
	}
	return in
}

// TestFoldedOffCPU: a trace with scheduler events weighs its folded
// stacks by the time on the CPU, or with OffCPU by the time off it, a
// last frame for why; on and off (within calls) add up to the weights
// of the same trace without them. The off-CPU graph needs them, and a
// function_graph trace.
func TestFoldedOffCPU(t *testing.T) {
	refused := func() views.Input {
		in := known()
		in.Meta.Sched, in.Meta.SchedWhy = "refused", "perf_event_open: Permission denied (perf_event_paranoid 3)"
		return in
	}
	for _, c := range []struct {
		name string
		in   func() views.Input
		opt  views.Options
		want string
		err  error
		msg  string
	}{
		{name: "on", in: sleepy, want: "main 400\nmain;a 200\nmain;b 100\nmain;b;leaf 50\nworker 100\n"},
		{name: "off", in: sleepy, opt: views.Options{OffCPU: true}, want: `[sleeping] 50
main;[pre-empted] 100
main;a;[sleeping] 100
main;b;[sleeping] 50
worker;[pre-empted] 150
`},
		{name: "off/count", in: sleepy, opt: views.Options{OffCPU: true, SampleCount: true}, want: `[sleeping] 1
main;[pre-empted] 1
main;a;[sleeping] 1
main;b;[sleeping] 1
worker;[pre-empted] 1
`},
		{name: "off/per thread", in: sleepy, opt: views.Options{OffCPU: true, PerThread: true}, want: `thread 1;main;[pre-empted] 100
thread 1;main;a;[sleeping] 100
thread 1;main;b;[sleeping] 50
thread 2;[sleeping] 50
thread 2;worker;[pre-empted] 150
`},
		{name: "on/count", in: sleepy, opt: views.Options{SampleCount: true}, want: "main 1\nmain;a 1\nmain;b 1\nmain;b;leaf 1\nworker 1\n"},
		{name: "all", in: func() views.Input { return withoutOff(sleepy()) }, want: "main 500\nmain;a 300\nmain;b 150\nmain;b;leaf 50\nworker 250\n"},
		{name: "no sched", in: known, opt: views.Options{OffCPU: true}, err: views.ErrNoSched, msg: "--no-sched"},
		{name: "refused", in: refused, opt: views.Options{OffCPU: true}, err: views.ErrNoSched, msg: "the kernel refused them: perf_event_open: Permission denied"},
		{name: "function trace", in: functions, opt: views.Options{OffCPU: true, SampleCount: true}, err: views.ErrNoGraph},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := views.Folded(&out, c.in(), c.opt)
			if !errors.Is(err, c.err) || err != nil && !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %v saying %q", err, c.err, c.msg)
			}
			if out.String() != c.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), c.want)
			}
		})
	}
}

// TestSVGOffCPU: the off-CPU flame graph's frames are as wide as the
// time off the CPU under them, each topped by a frame for why in its
// blue; the on-CPU one has no such frame, and is as wide as the time on
// the CPU; each says which it is.
func TestSVGOffCPU(t *testing.T) {
	for _, c := range []struct {
		name    string
		opt     views.Options
		heading string
		whole   float64
		frames  map[string][2]float64 // title's name: x and width in ns
	}{
		{"off", views.Options{OffCPU: true}, "Off-CPU flame graph of prog", 450, map[string][2]float64{
			"all": {0, 450}, "[sleeping]": {0, 50}, "main": {50, 250}, "[pre-empted]": {50, 100}, "a": {150, 100}, "b": {250, 50}, "worker": {300, 150},
		}},
		{"on", views.Options{}, "On-CPU flame graph of prog", 850, map[string][2]float64{
			"all": {0, 850}, "main": {0, 750}, "a": {0, 200}, "b": {200, 150}, "leaf": {200, 50}, "worker": {750, 100},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := views.SVG(&out, sleepy(), c.opt); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out.Bytes(), []byte(c.heading)) {
				t.Errorf("no heading %q in\n%s", c.heading, out.Bytes())
			}
			svg, err := viewcheck.ParseSVG(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			px := func(ns float64) float64 { return ns * 1180 / c.whole }
			seen := map[string]bool{}
			for _, f := range svg.Frames {
				name, _, _ := strings.Cut(f.Title, ":")
				want, ok := c.frames[name]
				reason := strings.HasPrefix(name, "[")
				blue := f.Fill.B > f.Fill.R
				if reason != blue {
					t.Errorf("%s: colour %v", f.Title, f.Fill)
				}
				if !ok {
					if !reason {
						t.Errorf("frame %q, not one of %v", f.Title, c.frames)
					}
					continue
				}
				if !seen[name] && (math.Abs(f.X-10-px(want[0])) > 0.01 || math.Abs(f.W-px(want[1])) > 0.01) {
					t.Errorf("%s: x %.2f width %.2f, want %.2f and %.2f", f.Title, f.X-10, f.W, px(want[0]), px(want[1]))
				}
				seen[name] = true
			}
			for name := range c.frames {
				if !seen[name] {
					t.Errorf("no frame %q", name)
				}
			}
			if c.opt.OffCPU && !slices.ContainsFunc(svg.Frames, func(f viewcheck.Frame) bool {
				return f.Title == "[pre-empted]: 0.150 us (33.33%) off the CPU, 1 time"
			}) {
				t.Errorf("no frame of worker's time pre-empted: %+v", svg.Frames)
			}
		})
	}
}

// TestTimelineStates: read back, the Chrome JSON holds each time off
// the CPU as a "sched" event nested among the calls on its thread, and
// the Perfetto protobuf a state track below each thread's whose slices
// say when it ran, slept or was pre-empted; a time off the CPU ends no
// later than the thread's next event, and the calls are those of the
// trace.
func TestTimelineStates(t *testing.T) {
	// sleepy's threads, and a context asleep in its call, a thread
	// asleep until the end with its calls open, and one whose time off
	// the CPU ends (by its clock) after its next event.
	more := func() views.Input {
		in := sleepy()
		threads := in.Threads
		extra := madeOff(
			offThread{1, 1, 3, []views.Event{ev(enter, "coro", 300), offEv(trace.Preempted, 310, 320), ev(exit, "coro", 350)}},
			offThread{1, 3, 0, []views.Event{offEv(trace.Sleeping, 5, 20), ev(enter, "main", 30), ev(enter, "wait", 40), offEv(trace.Sleeping, 50, 1500)}},
			offThread{1, 4, 0, []views.Event{ev(enter, "main", 0), offEv(trace.Preempted, 10, 130), ev(enter, "f", 120), ev(exit, "f", 140), ev(exit, "main", 150)}},
		)
		in.Threads = func(yield func(views.Thread) bool) {
			for th := range threads {
				if !yield(th) {
					return
				}
			}
			for th := range extra.Threads {
				if !yield(th) {
					return
				}
			}
		}
		return in
	}
	for _, view := range []struct {
		name   string
		write  func(io.Writer, views.Input) error
		calls  func([]byte) ([]viewcheck.Call, error)
		states func([]byte) ([]viewcheck.State, error)
	}{
		{"chrome", views.Chrome, viewcheck.Chrome, viewcheck.ChromeStates},
		{"perfetto", views.Perfetto, viewcheck.Perfetto, viewcheck.PerfettoStates},
	} {
		// A function trace's calls come without times off the CPU: no
		// states, whatever its metadata says.
		fn := functions()
		fn.Meta.Sched = "on"
		var out bytes.Buffer
		if err := view.write(&out, fn); err != nil {
			t.Fatal(err)
		}
		if states, err := view.states(out.Bytes()); err != nil || len(states) > 0 {
			t.Errorf("%s: a function trace's states %v (%v), want none", view.name, states, err)
		}
		t.Run(view.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := view.write(&out, more()); err != nil {
				t.Fatal(err)
			}
			calls, err := view.calls(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if d := viewcheck.Diff(viewcheck.Expected(more()), calls); d != "" {
				t.Errorf("the calls read back differ from the trace's: %s", d)
			}
			states, err := view.states(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			want := viewcheck.ExpectedStates(more(), view.name)
			if d := viewcheck.DiffStates(want, states); d != "" {
				t.Errorf("the states read back differ from the trace's: %s", d)
			}
			// A few of them, by hand: what ExpectedStates says.
			pre := "pre-empted"
			if view.name == "perfetto" {
				pre = "runnable (pre-empted)"
			}
			for _, s := range []viewcheck.State{
				{Pid: 1, Tid: 1, State: "sleeping", Start: 200, End: 300},
				{Pid: 1, Tid: 1, Context: 3, State: pre, Start: 310, End: 320},
				{Pid: 1, Tid: 3, State: "sleeping", Start: 50, End: 1500},
				{Pid: 1, Tid: 4, State: pre, Start: 10, End: 120},
			} {
				if !slices.Contains(states, s) {
					t.Errorf("no state %v in %v", s, states)
				}
			}
			if view.name == "perfetto" {
				for _, s := range []viewcheck.State{
					{Pid: 1, Tid: 1, State: "running", Start: 0, End: 200},
					{Pid: 1, Tid: 1, State: "running", Start: 300, End: 500},
					{Pid: 1, Tid: 2, State: "running", Start: 250, End: 400},
					{Pid: 1, Tid: 3, State: "running", Start: 20, End: 50},
					{Pid: 1, Tid: 4, State: "running", Start: 120, End: 150},
				} {
					if !slices.Contains(states, s) {
						t.Errorf("no state %v in %v", s, states)
					}
				}
				if slices.ContainsFunc(states, func(s viewcheck.State) bool { return s.Context != 0 && s.State == "running" }) {
					t.Errorf("a context's track says it was running: %v", states)
				}
			}
		})
	}
}

// TestSessionOffCPU: a session's processes on one timeline, each moved
// by its start, have their times off the CPU moved whole, end too.
func TestSessionOffCPU(t *testing.T) {
	first := sleepy()
	second := madeOff(offThread{2, 2, 0, []views.Event{ev(enter, "main", 0), offEv(trace.Sleeping, 10, 40), ev(exit, "main", 50)}})
	second.Meta.Pid, second.Meta.MonoStart = 2, first.Meta.MonoStart+1000
	var out bytes.Buffer
	if err := views.WriteSession(&out, "chrome", []views.Input{first, second}, views.Options{}); err != nil {
		t.Fatal(err)
	}
	states, err := viewcheck.ChromeStates(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := (viewcheck.State{Pid: 2, Tid: 2, State: "sleeping", Start: 1010, End: 1040}); !slices.Contains(states, want) {
		t.Errorf("no state %v in %v", want, states)
	}
}
