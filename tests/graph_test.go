package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ftpatch/internal/golden"
	"ftpatch/model"
	"ftpatch/trace"
	"ftpatch/views"
)

// traced builds srcs of progs/ with flags, records the sites, links the
// runtime, and returns the program.
func traced(t *testing.T, tg target, dir, flags string, pie bool, srcs ...string) string {
	t.Helper()
	objs := buildSrc(t, tg, dir, flags, pie, srcs...)
	return linkRecordedOn(t, tg, dir, objs, picLink(pie), "-pthread")
}

// graphOf reads a function_graph trace.
func graphOf(t *testing.T, dir string) (*trace.Trace, []model.Thread) {
	t.Helper()
	tr, syms := readTrace(t, dir)
	if tr.Meta.Tracer != "function_graph" {
		t.Fatalf("tracer %q", tr.Meta.Tracer)
	}
	return tr, model.Graph(tr, syms)
}

// checkNesting: every call lies within its caller's time.
func checkNesting(t *testing.T, threads []model.Thread) {
	t.Helper()
	var walk func(n *model.Node)
	walk = func(n *model.Node) {
		for _, c := range n.Children {
			if c.Start < n.Start || (!n.Open && c.End > n.End) {
				t.Errorf("%s [%.0f, %.0f] lies outside its caller %s [%.0f, %.0f]", c.Func, c.Start, c.End, n.Func, n.Start, n.End)
			}
			walk(c)
		}
	}
	for _, th := range threads {
		for _, n := range th.Roots {
			walk(n)
		}
	}
}

// masked replaces what changes from run to run in a replay (durations,
// thread ids) so the rest can be compared with a golden file.
func masked(b []byte) []byte {
	b = regexp.MustCompile(`(?m)^ *[0-9]+\.[0-9]{3} (us|ms|  s)`).ReplaceAll(b, []byte("  D.DDD us"))
	b = regexp.MustCompile(`on thread [0-9]+`).ReplaceAll(b, []byte("on thread TID"))
	return regexp.MustCompile(`\[ *[0-9]+\]`).ReplaceAll(b, []byte("[   TID]"))
}

// graphReplay is the replay of a function_graph trace (views.WriteTrees).
func graphReplay(t *testing.T, tr *trace.Trace, threads []model.Thread) []byte {
	t.Helper()
	var replay bytes.Buffer
	if err := views.WriteTrees(&replay, tr, threads); err != nil {
		t.Fatal(err)
	}
	return replay.Bytes()
}

// checkGraphGolden runs prog in dir under function_graph, fib left out
// (its thousands of calls are counted elsewhere) so the replay stays
// readable, and compares the masked replay with testdata/name.golden.
func checkGraphGolden(t *testing.T, tg target, dir, prog, name string) {
	t.Helper()
	out := filepath.Join(dir, "nofib")
	if _, _, _, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_FILTER=*,!fib", "FTRACE_OUT=" + out}, tg.on(prog)...); err != nil {
		t.Fatal(err)
	}
	tr, threads := graphOf(t, out)
	golden.Check(t, filepath.Join("testdata", name+".golden"), masked(graphReplay(t, tr, threads)))
}

// TestFunctionGraph: FTRACE=function_graph keeps the program's output and
// exit status, records every call (as many as the -finstrument-functions
// oracle counts) nested within its caller, and replays to the golden call
// graph (durations and thread ids masked).
func TestFunctionGraph(t *testing.T) {
	t.Parallel()
	forTracedArchBuilds(t, func(t *testing.T, tg target, flags string, pie bool) {
		want := oracleCounts(t, tg)
		dir := t.TempDir()
		_, wantOut, wantCode := plainRun(t, tg, pie, "bfd")
		prog := traced(t, tg, dir, "-O0 "+flags, pie, progSources...)
		out := filepath.Join(dir, "ftrace.data")
		got, _, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_OUT=" + out}, tg.on(prog)...)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, "traced", got, code, wantOut, wantCode)
		_, threads := graphOf(t, out)
		checkNesting(t, threads)
		calls := map[string]int{}
		for _, s := range model.Stats(threads) {
			calls[s.Func] = s.Calls
			if s.Self < 0 || s.Self > s.Total {
				t.Errorf("%s: self %.0f ns outside [0, total %.0f ns]", s.Func, s.Self, s.Total)
			}
		}
		for fn, n := range want {
			if calls[fn] != n {
				t.Errorf("%s: graphed %d calls, the oracle counted %d", fn, calls[fn], n)
			}
		}
		if len(calls) != len(want) {
			t.Errorf("graphed functions %v, the oracle's %v", calls, want)
		}
		// The golden replay leaves fib out (its 22,068 calls are
		// checked by count above) so it stays readable. One
		// golden per compiler: the builds make the same calls at
		// -O0, whatever the site flags.
		checkGraphGolden(t, tg, dir, prog, "graph-"+tg.name)
	})
}

// TestGraphEdges: the edge cases (longjmp out of graphed frames, a signal
// handler calling traced functions, threads, fork, recursion deeper than
// the shadow stack, float and struct returns, varargs, exit deep in the
// graph) behave identically untraced and under both tracers, and the
// graph says what happened.
func TestGraphEdges(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		sites := []string{"-pg -mfentry", "-pg"}
		if tg.arch == "arm64" {
			sites = []string{"-fpatchable-function-entry=4,2 -falign-functions=8 -mbranch-protection=standard", "-pg -mbranch-protection=standard"}
		}
		builds := []struct{ opt, flags string }{{"-O0", sites[0]}, {"-O2", sites[0]}, {"-O0", sites[1]}, {"-O2", sites[1]}}
		if tg.arch == "arm64" { // and the other key
			builds = append(builds, struct{ opt, flags string }{"-O2", "-pg -mbranch-protection=pac-ret+b-key"})
		}
		for _, v := range builds {
			opt := v.opt
			t.Run(tg.arch+"/"+tg.name+"/"+opt+"/"+slug(v.flags), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				prog := traced(t, tg, dir, opt+" "+v.flags, true, "edge.c")
				wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
				if err != nil {
					t.Fatal(err)
				}
				if wantCode != 3 || !strings.Contains(wantOut, "pthread_exit 99") {
					t.Fatalf("untraced run exited %d, want 3:\n%s", wantCode, wantOut)
				}
				for _, mode := range []string{"function", "function_graph"} {
					out := filepath.Join(dir, mode)
					got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}, tg.on(prog)...)
					if err != nil {
						t.Fatal(err)
					}
					if got != wantOut || code != wantCode {
						t.Errorf("%s: exit %d, output\n%s\nstderr\n%s\nwant exit %d, output\n%s", mode, code, got, errOut, wantCode, wantOut)
					}
				}
				tr, threads := graphOf(t, filepath.Join(dir, "function_graph"))
				checkNesting(t, threads)
				if tr.Meta.Unwound == 0 {
					t.Error("no graphed call recorded as left by longjmp")
				}
				if opt == "-O0" && (tr.Meta.Overflow == 0 || tr.Meta.Stopped != 1) {
					t.Errorf("recursion of 3000 calls: %d calls not graphed by %d threads; want the one thread to overflow the 1024-entry shadow stack and stop", tr.Meta.Overflow, tr.Meta.Stopped)
				}
				pids := map[int]bool{}
				for _, s := range tr.Streams {
					pids[s.Pid] = true
				}
				if len(tr.Streams) != 12 || len(pids) != 2 {
					t.Errorf("%d streams from %d processes; want the main thread, eight workers, the deep recursion's and the pthread_exit thread, and the forked child", len(tr.Streams), len(pids))
				}
				stats := map[string]model.Stat{}
				for _, s := range model.Stats(threads) {
					stats[s.Func] = s
				}
				if stats["on_signal"].Calls != 1 || stats["worker"].Calls != 8 || stats["finish"].Open == 0 || stats["jumper"].Unwound == 0 {
					t.Errorf("graph of the edge program: %+v", stats)
				}
				replay := graphReplay(t, tr, threads)
				for _, want := range []string{"/* unwound: longjmp or exception */", "did not return (still running at exit)"} {
					if !bytes.Contains(replay, []byte(want)) {
						t.Errorf("replay lacks %q", want)
					}
				}
				if t.Failed() {
					os.WriteFile(filepath.Join(t.TempDir(), "replay"), replay, 0o644)
				}
			})
		}
	}
}

// TestGraphLimits: FTRACE_DEPTH bounds the graph's depth, and
// FTRACE_THRESH drops calls shorter than the threshold that called
// nothing traced, without changing the program; on x86-64 and on arm64
// (under qemu).
func TestGraphLimits(t *testing.T) {
	t.Parallel()
	for _, b := range []ccBuild{{x86GCC, "-O0 -pg -mfentry"}, {a64GCC, "-O0 -fpatchable-function-entry=4,2 -falign-functions=8"}, {a64Clang, "-O0 -pg"}} {
		t.Run(b.tg.arch+"/"+b.tg.name+"/"+slug(b.flags), func(t *testing.T) {
			t.Parallel()
			need(t, b.tg.tools...)
			checkGraphLimits(t, b.tg, b.flags)
		})
	}
}

// checkGraphLimits is TestGraphLimits for one build.
func checkGraphLimits(t *testing.T, tg target, flags string) {
	dir := t.TempDir()
	prog := traced(t, tg, dir, flags, true, progSources...)
	wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
	if err != nil {
		t.Fatal(err)
	}
	depthOf := func(threads []model.Thread) int {
		max := 0
		var walk func(n *model.Node, d int)
		walk = func(n *model.Node, d int) {
			if d > max {
				max = d
			}
			for _, c := range n.Children {
				walk(c, d+1)
			}
		}
		for _, th := range threads {
			for _, n := range th.Roots {
				walk(n, 1)
			}
		}
		return max
	}
	for _, c := range []struct {
		env   string
		check func(t *testing.T, threads []model.Thread)
	}{
		{"FTRACE_DEPTH=3", func(t *testing.T, threads []model.Thread) {
			if d := depthOf(threads); d != 3 {
				t.Errorf("graph %d deep, want 3", d)
			}
		}},
		{"FTRACE_THRESH=10ms", func(t *testing.T, threads []model.Thread) {
			// Every call of this program is far shorter than 10 ms but
			// main and the fib calls that called others: only callers
			// remain, so no leaf may be left but ones that ran longer.
			var walk func(n *model.Node)
			walk = func(n *model.Node) {
				if len(n.Children) == 0 && !n.Open && n.Duration() < 5e6 {
					t.Errorf("leaf %s of %.0f ns kept under a 10 ms threshold", n.Func, n.Duration())
				}
				for _, c := range n.Children {
					walk(c)
				}
			}
			for _, th := range threads {
				for _, n := range th.Roots {
					walk(n)
				}
			}
		}},
	} {
		t.Run(c.env, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "t")
			got, _, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", c.env, "FTRACE_OUT=" + out}, tg.on(prog)...)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, "", got, code, wantOut, wantCode)
			_, threads := graphOf(t, out)
			checkNesting(t, threads)
			c.check(t, threads)
		})
	}
}

// TestClock: each record's time is a delta from the record before it,
// and the trace still places every call where it ran. progs/clock.c
// reads the TSC just before and after each of 2,000 calls of leaf, some
// after a gap too long for a short record: under either tracer each call
// lies between its pair (give or take 2 us, for a thread moved between
// CPUs; were a record's delta taken from a time other than the record
// before's, the error would build up call after call). Then outer spins
// 10 ms around ten calls of leaf a millisecond apart, which start so in
// the graph; under FTRACE_THRESH=100us every call of leaf is taken back
// (but one a preemption made longer), and the stream's clock with it, so
// outer still lasts its 10 ms (were
// the clock left at a removed entry's time, each record after it would
// read that entry's delta early). Every record lies within the run.
func TestClock(t *testing.T) {
	t.Parallel()
	tg := x86GCC
	need(t, tg.tools...)
	dir := t.TempDir()
	prog := traced(t, tg, dir, "-O2 -pg -mfentry", true, "clock.c")
	wantOut, _, wantCode, err := runStatus(dir, prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tracer, env string
		pairs       bool // the 2,000 calls of leaf are kept, to check against their pairs
	}{
		{"function", "FTRACE_THRESH=0", true},
		{"function_graph", "FTRACE_THRESH=0", true},
		{"function_graph", "FTRACE_THRESH=100us", false},
	} {
		t.Run(c.tracer+"/"+c.env, func(t *testing.T) {
			out := filepath.Join(dir, c.tracer+slug(c.env))
			got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + c.tracer, c.env, "FTRACE_OUT=" + out}, prog)
			if err != nil || got != wantOut || code != wantCode {
				t.Fatalf("exit %d, %v, output\n%s\nwant exit %d, output\n%s\n%s", code, err, got, wantCode, wantOut, errOut)
			}
			tr, syms := readTrace(t, out)
			checkClock(t, tr)
			var pairs [][2]float64 // the program's own readings around each call, in ns
			for _, line := range strings.Split(errOut, "\n") {
				var b, a uint64
				if _, err := fmt.Sscanf(line, "tsc %d %d", &b, &a); err == nil {
					pairs = append(pairs, [2]float64{tr.Meta.Nanos(b), tr.Meta.Nanos(a)})
				}
			}
			if len(pairs) != 2000 {
				t.Fatalf("%d pairs of readings on stderr, want 2000:\n%.500s", len(pairs), errOut)
			}
			// The calls of leaf, in order: start and end (a call's end is
			// its start under function).
			var calls [][2]float64
			var outer *model.Node
			if c.tracer == "function" {
				for _, e := range model.Events(tr, syms) {
					if e.Func == "leaf" {
						calls = append(calls, [2]float64{e.Nanos, e.Nanos})
					}
				}
			} else {
				threads := model.Graph(tr, syms)
				checkNesting(t, threads)
				if len(threads) != 1 || len(threads[0].Roots) != 1 {
					t.Fatalf("graph %+v, want main alone", threads)
				}
				for _, n := range threads[0].Roots[0].Children {
					switch n.Func {
					case "leaf":
						calls = append(calls, [2]float64{n.Start, n.End})
					case "outer":
						outer = n
					}
				}
				if outer == nil || c.pairs && len(outer.Children) != 10 || outer.Duration() < 5e6 {
					t.Fatalf("outer %+v; want it, 10 ms, with its 10 calls of leaf unless under a threshold", outer)
				}
				for i := 1; i < len(outer.Children); i++ {
					if d := outer.Children[i].Start - outer.Children[i-1].Start; d < 5e5 {
						t.Errorf("outer's leaf call %d %.0f ns after the one before; want a millisecond", i, d)
					}
				}
			}
			if !c.pairs {
				for _, call := range calls {
					if call[1]-call[0] < 5e4 { // a call kept must have lasted 100 us (preempted)
						t.Errorf("a call of leaf of %.0f ns kept under a threshold of 100 us", call[1]-call[0])
					}
				}
				return
			}
			if len(calls) < 2000 {
				t.Fatalf("%d calls of leaf traced, want 2000 and more", len(calls))
			}
			const slack = 2000 // ns
			for i, p := range pairs {
				if call := calls[i]; call[0] < p[0]-slack || call[1] > p[1]+slack || call[1] < call[0] {
					t.Fatalf("call %d of leaf traced at %.0f to %.0f ns; the program read the clock at %.0f before it, %.0f after", i, call[0], call[1], p[0], p[1])
				}
			}
		})
	}
}

// TestOptimized: the -O2 builds of the matrix, on both architectures. The oracle cannot count
// the same calls at -O2 (its instrumentation changes what the optimiser
// does), so here the two tracers check each other on one binary: the same
// output and exit status untraced, under function and under
// function_graph, and the same count of calls for every function.
func TestOptimized(t *testing.T) {
	t.Parallel()
	forTracedArchBuilds(t, func(t *testing.T, tg target, flags string, pie bool) {
		dir := t.TempDir()
		prog := traced(t, tg, dir, "-O2 "+flags, pie, progSources...)
		wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
		if err != nil {
			t.Fatal(err)
		}
		fn, graph := filepath.Join(dir, "fn"), filepath.Join(dir, "graph")
		for _, c := range []struct{ mode, out string }{{"function", fn}, {"function_graph", graph}} {
			got, _, code, err := runStatusEnv(dir, []string{"FTRACE=" + c.mode, "FTRACE_OUT=" + c.out}, tg.on(prog)...)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, c.mode, got, code, wantOut, wantCode)
		}
		counts := traceCounts(t, fn)
		_, threads := graphOf(t, graph)
		checkNesting(t, threads)
		calls := map[string]int{}
		for _, s := range model.Stats(threads) {
			calls[s.Func] = s.Calls
		}
		if len(counts) < 3 {
			t.Errorf("only %d functions traced: %v", len(counts), counts)
		}
		for f, n := range counts {
			if calls[f] != n {
				t.Errorf("%s: function tracer counted %d calls, graph %d", f, n, calls[f])
			}
		}
		if len(calls) != len(counts) {
			t.Errorf("function tracer saw %v, graph %v", counts, calls)
		}
		// The graph against a golden per compiler (the site flags
		// change nothing -O2 inlines; the compiler does, alike for
		// both architectures), fib left out as in TestFunctionGraph.
		checkGraphGolden(t, tg, dir, prog, "graph-O2-"+tg.name)
	})
}

// exceptionsProg builds progs/exceptions.cc with tg's compiler at opt
// with its architecture's preferred sites, records it and links it with
// the runtime by tg's driver (a C++ one: x86GXX, a64GXX, ...) as link
// says: -pie, or -static (objects not position-independent).
func exceptionsProg(t *testing.T, tg target, dir, opt, link string) string {
	t.Helper()
	prog, _ := exceptionsAs(t, tg, dir, opt, link, linkedMode)
	return prog
}

// exceptionsAs is exceptionsProg with the runtime as rt says; it returns
// the program and the target to run it on traced.
func exceptionsAs(t *testing.T, tg target, dir, opt, link string, rt runtimeMode) (string, target) {
	t.Helper()
	objs := buildSrc(t, tg, dir, opt+" "+preferred[tg.arch], link != "-static", "exceptions.cc")
	return linkAs(t, tg, dir, rt, objs, link)
}

// TestExceptions: C++ exceptions thrown through graphed frames (caught
// higher up, rethrown, with destructors running traced code while the
// stack unwinds) behave exactly as untraced under both tracers, the
// runtime linked and preloaded (the unwinder's entry points interposed); the graph
// records the unwound calls and keeps tracing the frames that survive.
func TestExceptions(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GXX, x86ClangXX, a64GXX, a64ClangXX} {
		prefix := ""
		if tg.arch != "x86_64" {
			prefix = tg.arch + "/"
		}
		for _, b := range []struct {
			opt string
			rt  runtimeMode
		}{{"-O0", linkedMode}, {"-O2", linkedMode}, {"-O2", preloadedMode}} {
			t.Run(prefix+tg.name+"/"+b.opt+"/"+string(b.rt), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				prog, runOn := exceptionsAs(t, tg, dir, b.opt, "-pie", b.rt)
				wantOut, wantErr, wantCode, err := runStatus(dir, tg.on(prog)...)
				if err != nil || wantCode != 0 || !strings.Contains(wantOut, "nested caught bottom") {
					t.Fatalf("untraced: exit %d, %v\n%s%s", wantCode, err, wantOut, wantErr)
				}
				graph := filepath.Join(dir, "graph")
				for _, c := range []struct{ mode, out string }{{"function", filepath.Join(dir, "fn")}, {"function_graph", graph}} {
					got, gotErr, code, err := runStatusEnv(dir, []string{"FTRACE=" + c.mode, "FTRACE_OUT=" + c.out}, runOn.on(prog)...)
					if err != nil || got != wantOut || code != wantCode {
						t.Errorf("%s: exit %d, %v, output\n%s\nstderr\n%s\nwant\n%s", c.mode, code, err, got, gotErr, wantOut)
					}
				}
				tr, threads := graphOf(t, graph)
				checkNesting(t, threads)
				if tr.Meta.Unwound == 0 {
					t.Error("no graphed call recorded as unwound by the exceptions")
				}
				stats := map[string]model.Stat{}
				for _, s := range model.Stats(threads) {
					stats[s.Func] = s
				}
				// main survives every throw: its exit must be traced.
				if m := stats["main"]; m.Calls != 1 || m.Open != 0 || m.Unwound != 0 {
					t.Errorf("main: %+v; want one call that returned", m)
				}
				if stats["after(int)"].Calls != 1 {
					t.Errorf("after(int), called once after the catches: %+v (names: %v)", stats["after(int)"], stats)
				}
			})
		}
	}
}

// TestClockFallback: where the TSC is not trusted (forced here with
// FTRACE_CLOCK=mono) the records carry CLOCK_MONOTONIC nanoseconds, the
// metadata says so, and the graph is the same as with the TSC: same
// calls, same nesting, durations that add up within the run's time. On
// x86-64 (the TSC) and on arm64 (the generic timer, cntvct_el0).
func TestClockFallback(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GCC, a64GCC}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		prog := traced(t, tg, dir, "-O0 "+preferred[tg.arch], true, progSources...)
		replays := map[string][]byte{}
		for _, clock := range []string{"tsc", "mono"} {
			out := filepath.Join(dir, clock)
			env := []string{"FTRACE=function_graph", "FTRACE_FILTER=*,!fib", "FTRACE_OUT=" + out}
			if clock == "mono" {
				env = append(env, "FTRACE_CLOCK=mono")
			}
			if _, _, _, err := runStatusEnv(dir, env, tg.on(prog)...); err != nil {
				t.Fatal(err)
			}
			tr, threads := graphOf(t, out)
			if tr.Meta.Clock != clock {
				t.Errorf("FTRACE_CLOCK=%s: the metadata says clock %q", clock, tr.Meta.Clock)
			}
			checkNesting(t, threads)
			run := float64(tr.Meta.MonoEnd - tr.Meta.MonoStart)
			for _, th := range threads {
				for _, n := range th.Roots {
					if n.Duration() < 0 || n.Duration() > run {
						t.Errorf("%s: %s lasted %.0f ns, outside the run's %.0f ns", clock, n.Func, n.Duration(), run)
					}
				}
			}
			replays[clock] = masked(graphReplay(t, tr, threads))
		}
		if !bytes.Equal(replays["tsc"], replays["mono"]) {
			t.Errorf("the graphs differ:\ntsc:\n%s\nmono:\n%s", replays["tsc"], replays["mono"])
		}
	})
}

// TestStaticExceptions: a statically linked C++ program whose exceptions
// pass through traced frames (progs/exceptions.cc). Its unwinder is
// libgcc_eh's, linked in whole, which the runtime cannot hook: under
// FTRACE=function_graph a throw would find a graph hook in a return slot
// and end the program. The runtime says so and traces it with function
// instead: same output and exit, every call recorded; and so when
// function_graph was baked in by ftpatch enable.
func TestStaticExceptions(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GXX, a64GXX}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		prog := exceptionsProg(t, tg, dir, "-O2", "-static")
		wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
		if err != nil || wantCode != 0 || !strings.Contains(wantOut, "caught") {
			t.Fatalf("untraced: exit %d, %v, output\n%s", wantCode, err, wantOut)
		}
		const told = "ftrt: function_graph: this statically linked program's C++ exceptions cannot be followed through graphed calls; tracing with function instead\n"
		// The same program with function_graph baked in by ftpatch enable,
		// run with nothing set, falls back alike.
		enabled := filepath.Join(dir, "enabled")
		run(t, dir, tool("ftpatch"), "enable", "--tracer", "function_graph", "-o", enabled, prog, "*")
		var counts [3]map[string]int
		for i, mode := range []string{"function", "function_graph", ""} {
			out := filepath.Join(dir, "t-"+mode)
			env, bin := []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}, prog
			if mode == "" {
				env, bin = env[1:], enabled
			}
			got, errOut, code, err := runStatusEnv(dir, env, tg.on(bin)...)
			if err != nil || code != wantCode || got != wantOut {
				t.Fatalf("FTRACE=%s: exit %d, %v, output\n%s\nstderr\n%s", mode, code, err, got, errOut)
			}
			if want := map[bool]string{true: "", false: told}[mode == "function"]; errOut != want {
				t.Errorf("FTRACE=%s: stderr %q, want %q", mode, errOut, want)
			}
			tr, err := trace.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Meta.Tracer != "function" {
				t.Errorf("FTRACE=%s: the trace says tracer %q, want function", mode, tr.Meta.Tracer)
			}
			counts[i] = traceCounts(t, out)
		}
		if fmt.Sprint(counts[0]) != fmt.Sprint(counts[1]) || fmt.Sprint(counts[0]) != fmt.Sprint(counts[2]) || counts[0]["thrower(int)"] == 0 {
			t.Errorf("calls traced: function %v, function_graph's fallback %v, enabled's %v; want the same, thrower's among them", counts[0], counts[1], counts[2])
		}
	})
}

// TestCxxNames: C++ functions are chosen by their demangled names, as
// ftpatch report prints them: FTRACE_FILTER='Guard::*' traces exactly the
// Guard calls a full trace counts, and ftpatch enable --funcs-from that
// filtered trace's report bakes in the same functions. On both
// architectures.
func TestCxxNames(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GXX, a64GXX}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		prog := exceptionsProg(t, tg, dir, "-O2", "-pie")
		wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
		if err != nil {
			t.Fatal(err)
		}
		record := func(name string, env ...string) map[string]int {
			out := filepath.Join(dir, "t-"+name) // not the enabled program's own name
			got, errOut, code, err := runStatusEnv(dir, append(env, "FTRACE_OUT="+out), tg.on(prog)...)
			if err != nil || got != wantOut || code != wantCode {
				t.Fatalf("%s: exit %d, %v, output\n%s\nstderr\n%s", name, code, err, got, errOut)
			}
			return traceCounts(t, out)
		}
		guards := map[string]int{}
		for f, n := range record("all", "FTRACE=function") {
			if strings.HasPrefix(f, "Guard::") {
				guards[f] = n
			}
		}
		if len(guards) != 2 {
			t.Fatalf("the full trace has Guard calls %v, want the constructor and the destructor", guards)
		}
		if got := record("filtered", "FTRACE=function", "FTRACE_FILTER=Guard::*"); fmt.Sprint(got) != fmt.Sprint(guards) {
			t.Errorf("FTRACE_FILTER=Guard::*: traced %v, want %v", got, guards)
		}
		if got := record("excluded", "FTRACE=function", "FTRACE_FILTER=*,!Guard::~*"); got["Guard::~Guard()"] != 0 || got["Guard::Guard(int)"] != guards["Guard::Guard(int)"] {
			t.Errorf("FTRACE_FILTER=*,!Guard::~*: traced %v", got)
		}
		report, _ := run(t, dir, tool("ftpatch"), "report", filepath.Join(dir, "t-filtered"))
		if err := os.WriteFile(filepath.Join(dir, "report.txt"), []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
		enabled := filepath.Join(dir, "enabled")
		run(t, dir, tool("ftpatch"), "enable", "--tracer", "function", "--funcs-from", "report.txt", "-o", enabled, prog)
		prog = enabled
		if got := record("enabled"); fmt.Sprint(got) != fmt.Sprint(guards) {
			t.Errorf("enabled from the report:\n%s\ntraced %v, want %v", report, got, guards)
		}
	})
}
