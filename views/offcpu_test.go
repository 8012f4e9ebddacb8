package views_test

import (
	"bytes"
	"errors"
	"testing"

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
	_ = errors.Is
}
