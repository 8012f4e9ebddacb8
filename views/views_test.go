package views_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"ftpatch/internal/viewcheck"
	"ftpatch/model"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
	"ftpatch/views"
)

// A step is one event of a made-up thread.
type step struct {
	k  views.Kind
	fn string
	ns float64
}

// A thread is a made-up thread's events.
type thread struct {
	pid, tid int
	ctx      uint64
	steps    []step
}

// made is an Input of made-up threads; each Thread's events may be read
// once, as a reader's.
func made(tracer string, threads ...thread) views.Input {
	m := &trace.Meta{Tracer: tracer, Exe: "/usr/bin/prog", BuildID: "abcd", Pid: 1, Clock: "tsc",
		TSCStart: 0, TSCEnd: 2000, MonoStart: 5000000, MonoEnd: 5002000}
	return views.Input{Meta: m, Threads: func(yield func(views.Thread) bool) {
		for _, th := range threads {
			read := false
			events := func(y func(views.Event) bool) {
				if read {
					panic("a thread's events read twice")
				}
				read = true
				for _, s := range th.steps {
					if !y(views.Event{Kind: s.k, Func: s.fn, NS: s.ns}) {
						return
					}
				}
			}
			if !yield(views.Thread{Pid: th.pid, Tid: th.tid, Context: th.ctx, Events: events}) {
				return
			}
		}
	}}
}

const (
	enter   = views.Enter
	exit    = views.Exit
	unwound = views.Unwound
	open    = views.Open
	call    = views.Call
)

// known is a function_graph trace of two threads and a context, with a
// call left by longjmp and calls still open at the end:
//
//	thread 1:  main [0, 1000]: a [100, 400] (leaf [150, 250]),
//	           b [500, 900] (leaf [600, 700.4]), jumper [920, 950] unwound
//	context 1 of thread 1: coro [300, 350]
//	thread 2:  worker [50, 300] (leaf [100, 200]), spin [400, 800] open
func known() views.Input {
	return made("function_graph",
		thread{1, 1, 0, []step{
			{enter, "main", 0}, {enter, "a", 100}, {enter, "leaf", 150}, {exit, "leaf", 250}, {exit, "a", 400},
			{enter, "b", 500}, {enter, "leaf", 600}, {exit, "leaf", 700.4}, {exit, "b", 900},
			{enter, "jumper", 920}, {unwound, "jumper", 950}, {exit, "main", 1000},
		}},
		thread{1, 1, 1, []step{{enter, "coro", 300}, {exit, "coro", 350}}},
		thread{1, 2, 0, []step{
			{enter, "worker", 50}, {enter, "leaf", 100}, {exit, "leaf", 200}, {exit, "worker", 300},
			{enter, "spin", 400}, {open, "spin", 800},
		}},
	)
}

// functions is a function trace of two threads.
func functions() views.Input {
	return made("function",
		thread{1, 1, 0, []step{{call, "main", 10}, {call, "parse", 20}, {call, "parse", 30}}},
		thread{1, 2, 0, []step{{call, "worker", 15}}},
	)
}

// TestTimelines: read back, the Chrome JSON and the Perfetto protobuf
// hold every call of the trace, on its thread, with its times, nesting
// and how it ended; and its thread states (times off the CPU), none in a
// trace without scheduler events.
func TestTimelines(t *testing.T) {
	for _, view := range []struct {
		name   string
		write  func(io.Writer, views.Input) error
		read   func([]byte) ([]viewcheck.Call, error)
		states func([]byte) ([]viewcheck.State, error)
	}{{"chrome", views.Chrome, viewcheck.Chrome, viewcheck.ChromeStates}, {"perfetto", views.Perfetto, viewcheck.Perfetto, viewcheck.PerfettoStates}} {
		for _, c := range []struct {
			name string
			in   func() views.Input
		}{{"graph", known}, {"function", functions}, {"big", func() views.Input { return generated(3, 2000) }}, {"sched", sleepy}} {
			t.Run(view.name+"/"+c.name, func(t *testing.T) {
				var out bytes.Buffer
				if err := view.write(&out, c.in()); err != nil {
					t.Fatal(err)
				}
				got, err := view.read(out.Bytes())
				if err != nil {
					t.Fatalf("%v\n%s", err, out.Bytes()[:min(out.Len(), 4000)])
				}
				if d := viewcheck.Diff(viewcheck.Expected(c.in()), got); d != "" {
					t.Errorf("the calls read back differ from the trace's: %s", d)
				}
				states, err := view.states(out.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				if d := viewcheck.DiffStates(viewcheck.ExpectedStates(c.in(), view.name), states); d != "" {
					t.Errorf("the states read back differ from the trace's: %s", d)
				}
			})
		}
	}
}

// TestPerfettoSmaller: on a trace of many calls, the protobuf is several
// times smaller than the JSON.
func TestPerfettoSmaller(t *testing.T) {
	var js, pb bytes.Buffer
	if err := views.Chrome(&js, generated(4, 20000)); err != nil {
		t.Fatal(err)
	}
	if err := views.Perfetto(&pb, generated(4, 20000)); err != nil {
		t.Fatal(err)
	}
	calls := 4 * 20000
	t.Logf("JSON %d bytes (%.1f a call), protobuf %d (%.1f a call): %.2fx smaller",
		js.Len(), float64(js.Len())/float64(calls), pb.Len(), float64(pb.Len())/float64(calls), float64(js.Len())/float64(pb.Len()))
	if pb.Len()*3 > js.Len() {
		t.Errorf("protobuf %d bytes, JSON %d: want it at least 3 times smaller", pb.Len(), js.Len())
	}
}

// generated is a function_graph trace of threads threads making calls
// calls each, nested up to 6 deep in a pattern that repeats, read as it
// is made: no call is stored.
func generated(threads, calls int) views.Input {
	var ths []views.Thread
	for i := range threads {
		ths = append(ths, views.Thread{Pid: 100, Tid: 100 + i, Events: generate(calls, i)})
	}
	m := &trace.Meta{Tracer: "function_graph", Exe: "/bin/gen", Pid: 100, MonoStart: 1e9}
	return views.Input{Meta: m, Threads: func(yield func(views.Thread) bool) {
		for _, th := range ths {
			if !yield(th) {
				return
			}
		}
	}}
}

var genNames = []string{"main", "parse_expression", "lex", "std::vector<int>::push_back(int&&)", "emit", "hash", "alloc"}

// generate yields a thread's calls: call i goes 1 + i%6 deep below the
// thread's root, each 3 ns after the previous event (plus the seed).
func generate(calls, seed int) iter.Seq[views.Event] {
	return func(yield func(views.Event) bool) {
		ns := float64(seed)
		depth := 0
		next := func() float64 { ns += 3 + float64((depth*7+seed)%5); return ns }
		if !yield(views.Event{Kind: views.Enter, Func: genNames[0], NS: next()}) {
			return
		}
		depth = 1
		for i := 1; i < calls; i++ {
			want := 1 + i%6
			for depth > want {
				depth--
				if !yield(views.Event{Kind: views.Exit, NS: next()}) {
					return
				}
			}
			if depth == want {
				depth--
				if !yield(views.Event{Kind: views.Exit, NS: next()}) {
					return
				}
			}
			for depth < want {
				if !yield(views.Event{Kind: views.Enter, Func: genNames[1+(i+depth)%(len(genNames)-1)], NS: next()}) {
					return
				}
				depth++
			}
		}
		for depth > 0 {
			depth--
			if !yield(views.Event{Kind: views.Exit, NS: next()}) {
				return
			}
		}
	}
}

// TestBounded: what a view allocates does not grow with the number of
// calls (for the same call paths): ten times the calls, no more
// allocations than a constant more.
func TestBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		view func(in views.Input) error
	}{
		{"chrome", func(in views.Input) error { return views.Chrome(discard{}, in) }},
		{"perfetto", func(in views.Input) error { return views.Perfetto(discard{}, in) }},
		{"flame-graph", func(in views.Input) error { return views.Folded(discard{}, in, views.Options{}) }},
		{"svg", func(in views.Input) error { return views.SVG(discard{}, in, views.Options{}) }},
		{"graph", func(in views.Input) error { return views.Graph(discard{}, in, views.Options{}) }},
		{"info", func(in views.Input) error { return views.Info(discard{}, in, views.Options{}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			allocs := func(calls int) uint64 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				if err := c.view(generated(2, calls)); err != nil {
					t.Fatal(err)
				}
				runtime.ReadMemStats(&after)
				return after.Mallocs - before.Mallocs
			}
			small, big := allocs(10000), allocs(100000)
			if big > small+200 {
				t.Errorf("%d allocations for 10,000 calls a thread, %d for 100,000: they grow with the calls", small, big)
			}
		})
	}
}

// discard is io.Discard without its ReadFrom.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestFolded(t *testing.T) {
	cases := []struct {
		name string
		in   func() views.Input
		opt  views.Options
		want string
		err  error
	}{
		{name: "self time", in: known, want: `coro 50
main 270
main;a 200
main;a;leaf 100
main;b 300
main;b;leaf 100
main;jumper 30
spin 400
worker 150
worker;leaf 100
`},
		{name: "calls", in: known, opt: views.Options{SampleCount: true}, want: `coro 1
main 1
main;a 1
main;a;leaf 1
main;b 1
main;b;leaf 1
main;jumper 1
spin 1
worker 1
worker;leaf 1
`},
		{name: "per thread", in: known, opt: views.Options{PerThread: true}, want: `thread 1;main 270
thread 1;main;a 200
thread 1;main;a;leaf 100
thread 1;main;b 300
thread 1;main;b;leaf 100
thread 1;main;jumper 30
thread 1 context 1;coro 50
thread 2;spin 400
thread 2;worker 150
thread 2;worker;leaf 100
`},
		{name: "function calls", in: functions, opt: views.Options{SampleCount: true}, want: "main 1\nparse 2\nworker 1\n"},
		{name: "function time", in: functions, err: views.ErrNoDurations},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := views.Folded(&out, c.in(), c.opt)
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if out.String() != c.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), c.want)
			}
		})
	}
}

func TestGraph(t *testing.T) {
	recursive := func() views.Input {
		return made("function_graph", thread{1, 1, 0, []step{
			{enter, "f", 0}, {enter, "g", 10}, {enter, "f", 20}, {enter, "h", 30}, {exit, "h", 40},
			{exit, "f", 80}, {exit, "g", 90}, {exit, "f", 100},
		}})
	}
	// leaf by three paths, first seen by y (3 calls, 150 ns), then x
	// (1 call, 500 ns), then z (2 calls, 200 ns): each order differs.
	paths := func() views.Input {
		return made("function_graph", thread{1, 1, 0, []step{
			{enter, "main", 0},
			{enter, "y", 10}, {enter, "leaf", 20}, {exit, "leaf", 70}, {enter, "leaf", 100}, {exit, "leaf", 150},
			{enter, "leaf", 200}, {exit, "leaf", 250}, {exit, "y", 400},
			{enter, "x", 500}, {enter, "leaf", 550}, {exit, "leaf", 1050}, {exit, "x", 1100},
			{enter, "z", 1200}, {enter, "leaf", 1250}, {exit, "leaf", 1350}, {enter, "leaf", 1380}, {exit, "leaf", 1480}, {exit, "z", 1500},
			{exit, "main", 2000},
		}})
	}
	// main calls q once (490 ns), then p three times (10 ns each).
	callees := func() views.Input {
		return made("function_graph", thread{1, 1, 0, []step{
			{enter, "main", 0}, {enter, "q", 10}, {exit, "q", 500},
			{enter, "p", 600}, {exit, "p", 610}, {enter, "p", 620}, {exit, "p", 630}, {enter, "p", 640}, {exit, "p", 650},
			{exit, "main", 1000},
		}})
	}
	for _, c := range []struct {
		name string
		in   func() views.Input
		fn   string
		sort string
		want string
		err  error
	}{
		{name: "whole", in: known, want: `# Function Call Graph for 'prog' (pid 1)
========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    1.700 us : (1) prog
    1.000 us :  +-(1) main
    0.400 us :  |  +-(1) b
    0.100 us :  |  | (1) leaf
             :  |  | 
    0.300 us :  |  +-(1) a
    0.100 us :  |  | (1) leaf
             :  |  | 
    0.030 us :  |  +-(1) jumper [1 unwound]
             :  | 
    0.400 us :  +-(1) spin [1 open]
             :  | 
    0.250 us :  +-(1) worker
    0.100 us :  | (1) leaf
             :  | 
    0.050 us :  +-(1) coro

`},
		{name: "func", in: known, fn: "leaf", want: `# Function Call Graph for 'leaf' (pid 1)
=============== BACKTRACE ===============
 backtrace #0: hit 1, time   0.100 us
   [0] main
   [1] b
   [2] leaf

 backtrace #1: hit 1, time   0.100 us
   [0] main
   [1] a
   [2] leaf

 backtrace #2: hit 1, time   0.100 us
   [0] worker
   [1] leaf

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    0.300 us : (3) leaf

`},
		// A call of f within another is part of the outer one's graph.
		{name: "recursion", in: recursive, fn: "f", want: `# Function Call Graph for 'f' (pid 1)
=============== BACKTRACE ===============
 backtrace #0: hit 1, time   0.100 us
   [0] f

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    0.100 us : (1) f
    0.080 us : (1) g
    0.060 us : (1) f
    0.010 us : (1) h

`},
		// Backtraces in the order of their total time, or their calls.
		{name: "backtraces by total", in: paths, fn: "leaf", want: `# Function Call Graph for 'leaf' (pid 1)
=============== BACKTRACE ===============
 backtrace #0: hit 1, time   0.500 us
   [0] main
   [1] x
   [2] leaf

 backtrace #1: hit 2, time   0.200 us
   [0] main
   [1] z
   [2] leaf

 backtrace #2: hit 3, time   0.150 us
   [0] main
   [1] y
   [2] leaf

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    0.850 us : (6) leaf

`},
		{name: "backtraces by calls", in: paths, fn: "leaf", sort: "calls", want: `# Function Call Graph for 'leaf' (pid 1)
=============== BACKTRACE ===============
 backtrace #0: hit 3, time   0.150 us
   [0] main
   [1] y
   [2] leaf

 backtrace #1: hit 2, time   0.200 us
   [0] main
   [1] z
   [2] leaf

 backtrace #2: hit 1, time   0.500 us
   [0] main
   [1] x
   [2] leaf

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    0.850 us : (6) leaf

`},
		// Callees by the same rule.
		{name: "callees by total", in: callees, sort: "total", want: `# Function Call Graph for 'prog' (pid 1)
========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    1.000 us : (1) prog
    1.000 us : (1) main
    0.490 us :  +-(1) q
             :  | 
    0.030 us :  +-(3) p

`},
		{name: "callees by calls", in: callees, sort: "calls", want: `# Function Call Graph for 'prog' (pid 1)
========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    1.000 us : (1) prog
    1.000 us : (1) main
    0.030 us :  +-(3) p
             :  | 
    0.490 us :  +-(1) q

`},
		{name: "callees first called", in: callees, sort: "first", want: `# Function Call Graph for 'prog' (pid 1)
========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    1.000 us : (1) prog
    1.000 us : (1) main
    0.490 us :  +-(1) q
             :  | 
    0.030 us :  +-(3) p

`},
		{name: "backtraces first seen", in: paths, fn: "leaf", sort: "first", want: `# Function Call Graph for 'leaf' (pid 1)
=============== BACKTRACE ===============
 backtrace #0: hit 3, time   0.150 us
   [0] main
   [1] y
   [2] leaf

 backtrace #1: hit 1, time   0.500 us
   [0] main
   [1] x
   [2] leaf

 backtrace #2: hit 2, time   0.200 us
   [0] main
   [1] z
   [2] leaf

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   FUNCTION
    0.850 us : (6) leaf

`},
		{name: "unknown order", in: callees, sort: "self", err: model.ErrSortKey, want: ""},
		{name: "no such function", in: known, fn: "lef", err: views.ErrNoFunc, want: ""},
		{name: "function trace", in: functions, err: views.ErrNoGraph, want: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := views.Graph(&out, c.in(), views.Options{Func: c.fn, Sort: c.sort})
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if c.fn == "lef" && !strings.Contains(err.Error(), "did you mean leaf?") {
				t.Errorf("error %q suggests nothing", err)
			}
			if out.String() != c.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), c.want)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	var out bytes.Buffer
	warn := fmt.Errorf("dir: %w: 3 calls dropped", trace.ErrLost)
	if err := views.Info(&out, known(), views.Options{Warnings: func() []error { return []error{warn} }, Beside: []string{"dir.77"}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	for _, want := range []string{
		"program:            /usr/bin/prog",
		"build-id:           abcd",
		"pid:                1",
		"tracer:             function_graph",
		"duration:           2.000 us",
		"thread:             pid 1 tid 1: 6 calls, from 0.000 us to 1.000 us, 1 unwound",
		"thread:             pid 1 tid 1 context 1: 1 call, from 0.300 us to 0.350 us",
		"thread:             pid 1 tid 2: 3 calls, from 0.050 us to 0.800 us, 1 still running at the end",
		"threads:            3, 10 calls in all (a makecontext context's calls count as a thread of their own)",
		"task list:          1 2",
		"warning: dir: events lost: 3 calls dropped",
		"beside:             dir.77: the trace of a process that started while this one ran (one it exec'd?)",
	} {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("no line %q in\n%s", want, out.String())
		}
	}
	for _, l := range lines[:len(lines)-1] {
		if k, _, ok := strings.Cut(l, ": "); !ok || strings.Contains(k, "  ") {
			t.Errorf("line %q is not key: value", l)
		}
	}
}

// TestInfoEnd: info says how the program ended and what it used as
// ftpatch record saw it, where it ran the program, else as the runtime
// did (but the largest resident set the runtime's where it has it: the
// program image's own), else why neither is known; and names the
// threads, its first as the process where its stream does not.
func TestInfoEnd(t *testing.T) {
	runtimeUsage := &trace.Usage{UserUs: 2_500_000, SysUs: 1_000, MaxRSSKB: 3428, MinorFaults: 169, Voluntary: 1, Involuntary: 2, OutBlocks: 8}
	recorded := &trace.ExitStatus{Signal: 9, Usage: trace.Usage{UserUs: 12_000, SysUs: 3_000, MaxRSSKB: 8000, MinorFaults: 300, MajorFaults: 2, InBlocks: 1}}
	for _, c := range []struct {
		name string
		meta func(m *trace.Meta)
		exit *trace.ExitStatus
		want []string
	}{
		{"exited", func(m *trace.Meta) { m.Exited, m.ExitCode, m.Usage, m.Format = true, 3, runtimeUsage, abi.MetaFormat }, nil, []string{
			"exit status:        exited with code 3",
			"usage:              as the runtime saw it when tracing ended (getrusage: the process alone, not its children; max rss: the program image's peak)",
			"cpu time:           0.001 / 2.500 sec (sys / user)",
			"max rss:            3428 KB",
			"page faults:        0 / 169 (major / minor)",
			"context switches:   1 / 2 (voluntary / involuntary)",
			"disk iops:          0 / 8 (read / write)",
		}},
		{"killed, recorded", func(m *trace.Meta) { m.Unended = true }, recorded, []string{
			"exit status:        killed by signal 9 (SIGKILL)",
			"usage:              as ftpatch record saw it (wait4: the program, and the children it waited for; its max rss counts ftpatch's own memory too, which the process had before its exec)",
			"cpu time:           0.003 / 0.012 sec (sys / user)",
			"max rss:            8000 KB",
			"page faults:        2 / 300 (major / minor)",
			"disk iops:          1 / 0 (read / write)",
		}},
		{"recorded and ended", func(m *trace.Meta) { m.Exited, m.Usage = true, runtimeUsage }, &trace.ExitStatus{Signal: 11, Core: true, Usage: recorded.Usage}, []string{
			"exit status:        killed by signal 11 (SIGSEGV), core dumped",
			"usage:              as ftpatch record saw it (wait4: the program, and the children it waited for); max rss the runtime's (the program image's peak)",
			"cpu time:           0.003 / 0.012 sec (sys / user)",
			"max rss:            3428 KB",
		}},
		{"flight recorder", func(m *trace.Meta) { m.Signal, m.Usage = 6, runtimeUsage }, nil, []string{
			"exit status:        killed by signal 6 (SIGABRT)",
		}},
		{"killed", func(m *trace.Meta) { m.Unended, m.Format = true, abi.MetaFormat }, nil, []string{
			"exit status:        not recorded: the program was killed, and not run by ftpatch record",
			"usage:              not recorded: the program was killed, and not run by ftpatch record",
		}},
		{"older runtime", func(m *trace.Meta) { m.Format = "ftrt-trace 3" }, nil, []string{
			"exit status:        not recorded: a runtime before trace format 4 (this is ftrt-trace 3), and not run by ftpatch record",
		}},
		{"quick_exit", func(m *trace.Meta) { m.Format, m.Usage = abi.MetaFormat, runtimeUsage }, nil, []string{
			"exit status:        not recorded: tracing ended without the program's end (it exec'd another, or ended through quick_exit; or this is a snapshot)",
			"max rss:            3428 KB",
		}},
		{"names", func(m *trace.Meta) { m.Comm = "prog" }, nil, []string{
			"pid:                1 (prog)",
			"thread:             pid 1 tid 1 (prog): 6 calls, from 0.000 us to 1.000 us, 1 unwound",
			"thread:             pid 1 tid 1 (prog) context 1: 1 call, from 0.300 us to 0.350 us",
			"thread:             pid 1 tid 2: 3 calls, from 0.050 us to 0.800 us, 1 still running at the end",
			"task list:          1(prog) 2",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := known()
			c.meta(in.Meta)
			var out bytes.Buffer
			if err := views.Info(&out, in, views.Options{Exit: c.exit}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(out.String(), "\n")
			for _, want := range c.want {
				if !slices.Contains(lines, want) {
					t.Errorf("no line %q in\n%s", want, out.String())
				}
			}
		})
	}
}

// TestSVG: the flame graph of the known trace is well-formed XML, and
// drawn by a real renderer each frame is where it belongs: a frame's
// centre has its function's colour, where a frame has no callee the
// picture above it is background, and so is the band above the top
// frame.
func TestSVG(t *testing.T) {
	var out bytes.Buffer
	if err := views.SVG(&out, known(), views.Options{}); err != nil {
		t.Fatal(err)
	}
	svg, err := viewcheck.ParseSVG(out.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.Bytes())
	}
	img, err := viewcheck.Render(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != svg.Width || b.Dy() != svg.Height {
		t.Fatalf("rendered %v, the SVG says %dx%d", b, svg.Width, svg.Height)
	}
	// 1700 ns over 1180 px from x = 10: main [50, 1050] ns, a [100,
	// 400] within it; a level is 16 px, the bottom one (all) ends 24 px
	// above the image's bottom.
	px := func(ns float64) float64 { return 10 + ns*1180/1700 }
	frames := map[string][]viewcheck.Frame{}
	for _, f := range svg.Frames {
		name, _, _ := strings.Cut(f.Title, ":")
		frames[name] = append(frames[name], f)
	}
	level := func(d int) float64 { return float64(svg.Height-24-16*(d+1)) + 7.5 } // a level's middle row
	for _, c := range []struct {
		fn       string
		from, to float64 // ns
		depth    int
		title    string
		label    string
	}{
		{"all", 0, 1700, 0, "all: 1.700 us", "all"},
		{"coro", 0, 50, 1, "coro: 0.050 us (2.94%), 1 call", "c.."},
		{"main", 50, 1050, 1, "main: 1.000 us (58.82%), 1 call", "main"},
		{"a", 50, 350, 2, "a: 0.300 us (17.65%), 1 call", "a"},
		{"leaf", 50, 150, 3, "leaf: 0.100 us (5.88%), 1 call", "leaf"},
		{"spin", 1050, 1450, 1, "spin: 0.400 us (23.53%), 1 call", "spin"},
	} {
		var f *viewcheck.Frame
		for i, g := range frames[c.fn] {
			if math.Abs(g.X-px(c.from)) < 0.01 {
				f = &frames[c.fn][i]
			}
		}
		if f == nil {
			t.Errorf("%s: no frame at x %.2f: %+v", c.fn, px(c.from), frames[c.fn])
			continue
		}
		if math.Abs(f.W-(px(c.to)-px(c.from))) > 0.01 || f.Y+7.5 != level(c.depth) || f.Title != c.title || f.Label != c.label {
			t.Errorf("%s: %+v, want x %.2f to %.2f, level %d, title %q, label %q", c.fn, *f, px(c.from), px(c.to), c.depth, c.title, c.label)
		}
		if got := viewcheck.At(img, int((px(c.from)+px(c.to))/2), int(level(c.depth))); got != f.Fill {
			t.Errorf("%s: the centre of its frame is %v, want its colour %v", c.fn, got, f.Fill)
		}
	}
	// The same function has the same colour wherever it is.
	for fn, fs := range frames {
		for _, f := range fs[1:] {
			if f.Fill != fs[0].Fill {
				t.Errorf("%s: frames of colours %v and %v", fn, fs[0].Fill, f.Fill)
			}
		}
	}
	for _, c := range []struct {
		what string
		ns   float64
		y    float64
	}{
		{"above main's own time (after its callees)", 900, level(2)},
		{"above the leaf under a", 100, level(4)},
		{"above spin", 1200, level(2)},
		{"below the bottom frame", 800, float64(svg.Height - 20)},
	} {
		if got := viewcheck.At(img, int(px(c.ns)), int(c.y)); got != svg.Background {
			t.Errorf("%s: %v, want the background %v", c.what, got, svg.Background)
		}
	}
}

// TestSVGBounded: frames narrower than a tenth of a pixel are left out,
// with what stands on them.
func TestSVGBounded(t *testing.T) {
	in := made("function_graph", thread{1, 1, 0, []step{
		{enter, "main", 0}, {enter, "tiny", 10}, {enter, "tinier", 10.01}, {exit, "tinier", 10.02}, {exit, "tiny", 10.05},
		{enter, "big", 100}, {exit, "big", 900000}, {exit, "main", 1000000},
	}})
	var out bytes.Buffer
	if err := views.SVG(&out, in, views.Options{}); err != nil {
		t.Fatal(err)
	}
	svg, err := viewcheck.ParseSVG(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range svg.Frames {
		name, _, _ := strings.Cut(f.Title, ":")
		names = append(names, name)
	}
	if strings.Join(names, " ") != "all main big" {
		t.Errorf("frames %v, want all, main and big", names)
	}
}

// BenchmarkViews measures each view alone on a generated trace, its
// reading left out: ns and bytes of output a call.
func BenchmarkViews(b *testing.B) {
	const calls = 200000
	for _, c := range []struct {
		name string
		view func(w io.Writer, in views.Input) error
	}{
		{"chrome", views.Chrome},
		{"perfetto", views.Perfetto},
		{"flame-graph", func(w io.Writer, in views.Input) error { return views.Folded(w, in, views.Options{}) }},
		{"svg", func(w io.Writer, in views.Input) error { return views.SVG(w, in, views.Options{}) }},
		{"graph", func(w io.Writer, in views.Input) error { return views.Graph(w, in, views.Options{}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n countWriter
			for b.Loop() {
				if err := c.view(&n, generated(2, calls)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*calls), "ns/call")
			b.ReportMetric(float64(n)/float64(b.N*2*calls), "B/call")
		})
	}
}

// countWriter counts what is written to it.
type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// TestWrite: Write chooses each view by its name, the one the function
// of that name writes, and refuses a name no view has.
func TestWrite(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(io.Writer, views.Input, views.Options) error
	}{
		{"chrome", func(w io.Writer, in views.Input, _ views.Options) error { return views.Chrome(w, in) }},
		{"perfetto", func(w io.Writer, in views.Input, _ views.Options) error { return views.Perfetto(w, in) }},
		{"flame-graph", views.Folded},
		{"svg", views.SVG},
		{"graph", views.Graph},
		{"info", views.Info},
	} {
		var got, want bytes.Buffer
		if err := views.Write(&got, c.name, known(), views.Options{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := c.write(&want, known(), views.Options{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("Write(%q) wrote %d bytes, differing from the view's %d", c.name, got.Len(), want.Len())
		}
	}
	if err := views.Write(io.Discard, "bogus", known(), views.Options{}); !errors.Is(err, views.ErrUnknownView) || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("Write of an unknown view: %v, want ErrUnknownView naming it", err)
	}
}
