package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"ftpatch/model"
	"ftpatch/symbols"
	"ftpatch/trace"
)

// countLine reads a line of progs/sigstress.c's stderr, "what name N name
// N ...", into a map.
func countLine(t *testing.T, stderr, what string) map[string]int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + what + `((?: \w+ \d+)+)$`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no %q line in the program's stderr:\n%s", what, stderr)
	}
	f := strings.Fields(m[1])
	counts := map[string]int{}
	for i := 0; i+1 < len(f); i += 2 {
		n, err := strconv.Atoi(f[i+1])
		if err != nil {
			t.Fatal(err)
		}
		counts[f[i]] = n
	}
	return counts
}

// a64Stress are the settings of progs/sigstress.c under qemu (see
// TestSignalStress).
const a64Stress = " -DFORK_EVERY=1000000 -DSTACK=4194304 -DALTSTACK=1048576 -DPERIOD_NS=100000"

// TestSignalStress: eight threads calling traced functions while a timer
// of their own sends each SIGPROF at 20 kHz, whose handler makes traced
// calls, nesting (SA_NODEFER) and, on half the threads, on an alternate
// stack above the thread's (progs/sigstress.c); threads are created and
// exit, and threads fork children that make traced calls. Twenty runs
// over every x86-64 site kind, both compilers, a pre-patched program and
// both tracers, and sixteen over arm64's (under qemu: settings below),
// and twelve with the runtime preloaded: each run's output and exit status are the untraced
// program's, every call of the loops is in the trace, the handlers' calls
// are there but for those the trace counts as dropped (a handler that
// interrupted the tracer), no call is taken for one a longjmp left (there
// is none), and every graphed call lies within its caller.
func TestSignalStress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tg     target
		flags  string
		pie    bool
		tracer string
		enable bool   // pre-patched by ftpatch enable, run with no FTRACE
		buffer string // FTRACE_BUFFER: writer (a thread of the runtime's writes), or ring:SIZE (the flight recorder); "": stream
		rt     runtimeMode
	}{
		{x86GCC, "-O2 -pg -mfentry", true, "function_graph", false, "", linkedMode},
		{x86GCC, "-O2 -pg", false, "function_graph", false, "", linkedMode},
		{x86Clang, "-O0 -fpatchable-function-entry=5", true, "function_graph", false, "", linkedMode},
		{x86GCC, "-O2 -pg -mfentry -fcf-protection", true, "function_graph", true, "", linkedMode},
		{x86Clang, "-O2 -pg -mfentry", false, "function", false, "", linkedMode},
		// The writer thread, and the flight recorder with a ring no
		// thread fills: every record kept, written at each thread's
		// exit (forked children's too) and at the end.
		{x86GCC, "-O2 -pg -mfentry", true, "function_graph", false, "writer", linkedMode},
		{x86GCC, "-O2 -pg -mfentry", true, "function", false, "ring:256m", linkedMode},
		// arm64, under qemu-user: 10,000 signals a second per thread,
		// no fork (qemu-user crashes now and then forking a
		// multi-threaded program that takes signals, untraced too), and
		// thread stacks of 4 MiB and alternate signal stacks of 1 MiB:
		// qemu's signal frames, with the SVE registers, are large, and
		// its handlers slow, so they nest deeper (at 64 KiB, nested
		// handlers on the alternate stack overran it into the thread's
		// TLS below it).
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8" + a64Stress, true, "function_graph", false, "", linkedMode},
		{a64Clang, "-O2 -pg -mbranch-protection=standard" + a64Stress, true, "function_graph", false, "", linkedMode},
		{a64GCC, "-O0 -fpatchable-function-entry=2 -mbranch-protection=standard" + a64Stress, false, "function", false, "", linkedMode},
		{a64GCC, "-O2 -pg" + a64Stress, true, "function_graph", true, "", linkedMode},
		// Preloaded: the program's sigaction interposed.
		{x86GCC, "-O2 -pg -mfentry", true, "function_graph", false, "", preloadedMode},
		{x86Clang, "-O2 -pg", false, "function", false, "", preloadedMode},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8" + a64Stress, true, "function_graph", false, "", preloadedMode},
	}
	const runs = 4 // each: twenty in all
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/%s/%s/%s", c.tg.arch, c.tg.name, slug(c.flags), picFlag(c.pie), c.tracer)
		if c.enable {
			name += "/enabled"
		}
		if c.buffer != "" {
			name += "/" + c.buffer
		}
		name += "/" + string(c.rt)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			plainDir, dir := t.TempDir(), t.TempDir()
			wantOut, wantCode := untraced(t, c.tg, plainDir, "sigstress.c", defines(c.flags)...)
			prog, runOn := tracedAs(t, c.tg, dir, c.flags, c.pie, c.rt, "sigstress.c")
			var env []string
			if c.enable {
				run(t, dir, tool("ftpatch"), "enable", "--tracer", c.tracer, prog, "*")
			} else {
				env = []string{"FTRACE=" + c.tracer}
			}
			if c.buffer != "" {
				env = append(env, "FTRACE_BUFFER="+c.buffer)
			}
			for i := range runs {
				out := filepath.Join(dir, fmt.Sprintf("run%d", i))
				got, stderr, code, err := runStatusEnv(dir, append(env, "FTRACE_OUT="+out), runOn.on(prog)...)
				if err != nil {
					t.Fatal(err)
				}
				if got != wantOut || code != wantCode {
					t.Fatalf("run %d: exit %d, output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", i, code, got, wantCode, wantOut, stderr)
				}
				checkStress(t, out, c.tracer, countLine(t, stderr, "made"), countLine(t, stderr, "handler"))
			}
		})
	}
}

// tracedCalls counts each function's calls in a trace made by tracer:
// function_graph's from the graph, whose nesting it checks, with each
// function's figures; function's as ftpatch report counts them (no
// figures), in bounded memory: the stress tests' traces hold millions of
// calls.
func tracedCalls(t *testing.T, tr *trace.Trace, syms *symbols.Table, tracer string) (map[string]int, []model.Stat) {
	t.Helper()
	if tracer != "function_graph" {
		counts, _, err := model.ReportCalls(tr, syms, &trace.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		calls := map[string]int{}
		for _, c := range counts {
			calls[c.Func] = c.Calls
		}
		return calls, nil
	}
	threads := model.Graph(tr, syms)
	checkNesting(t, threads)
	stats := model.Stats(threads)
	calls := map[string]int{}
	for _, s := range stats {
		calls[s.Func] = s.Calls
	}
	return calls, stats
}

// readWhole reads the trace in dir, recorded by tracer, and fails the
// test unless it ended and lost nothing: no call taken for one a
// longjmp left, none not graphed, no byte unwritten.
func readWhole(t *testing.T, dir, tracer string) (*trace.Trace, *symbols.Table) {
	t.Helper()
	tr, syms := readTrace(t, dir)
	if tr.Meta.Tracer != tracer || tr.Meta.Unended {
		t.Fatalf("%s: tracer %q, unended %v", dir, tr.Meta.Tracer, tr.Meta.Unended)
	}
	if tr.Meta.Unwound != 0 || tr.Meta.Overflow != 0 || tr.Meta.LostBytes != 0 {
		t.Errorf("%s: %d calls taken for left by a longjmp, %d not graphed, %d bytes lost; want none",
			dir, tr.Meta.Unwound, tr.Meta.Overflow, tr.Meta.LostBytes)
	}
	return tr, syms
}

// checkStress checks a trace of progs/sigstress.c against the calls the
// run says it made: the loops' exactly, the handlers' less the trace's
// dropped events.
func checkStress(t *testing.T, dir, tracer string, made, handler map[string]int) {
	t.Helper()
	tr, syms := readWhole(t, dir, tracer)
	got, stats := tracedCalls(t, tr, syms, tracer)
	for _, s := range stats {
		if s.Unwound != 0 {
			t.Errorf("%s: %d calls of %s unwound; nothing unwinds", dir, s.Unwound, s.Func)
		}
	}
	for f, n := range made {
		if got[f] != n {
			t.Errorf("%s: %s traced %d times, the program made %d calls", dir, f, got[f], n)
		}
	}
	missing := 0
	for f, n := range handler {
		if got[f] > n {
			t.Errorf("%s: %s traced %d times, more than the %d calls the handlers made", dir, f, got[f], n)
		}
		missing += n - got[f]
	}
	if uint64(missing) != tr.Meta.Dropped {
		t.Errorf("%s: the handlers' calls missing from the trace: %d; the trace says it dropped %d", dir, missing, tr.Meta.Dropped)
	}
	if handler["hwork"] < 100 {
		t.Errorf("%s: the handlers ran %d times: too few to test anything", dir, handler["hwork"])
	}
}

// TestSignalJumpOut: a signal handler that makes a traced call and then
// siglongjmps back to the loop, 20,000 times a second (progs/jumpout.c),
// the first signal at once (a program that armed its timer before setting
// its jump buffer would crash untraced every run, never now and then):
// many land inside the tracer, whose frames the jump then leaves. The
// program's output and exit status are the untraced one's under both
// tracers and every site kind (x86-64's, and arm64's under qemu), and
// with the runtime preloaded, and
// tracing goes on after each jump: the
// loop's calls are all in the trace (a jump may cut a call after its
// entry was traced, before its body counted it: at most one a jump), and
// each of the handler's calls is either traced or counted as dropped.
func TestSignalJumpOut(t *testing.T) {
	t.Parallel()
	var builds []ccBuild
	for _, flags := range x86Traced {
		builds = append(builds, ccBuild{x86GCC, "-O2 " + flags})
	}
	builds = append(builds, ccBuild{x86Clang, "-O2 -pg -mfentry"})
	// qemu-user runs the arm64 builds, and falls over at 20,000 jumps a
	// second, untraced too, and now and then at 5,000: a timer of 1 ms there.
	const slower = "-DPERIOD_NS=1000000 "
	for _, flags := range flagSets["arm64"] {
		builds = append(builds, ccBuild{a64GCC, slower + "-O2 " + flags})
	}
	builds = append(builds, ccBuild{a64Clang, slower + "-O2 -fpatchable-function-entry=2 -mbranch-protection=standard"})
	// Preloaded: a build each of x86-64 and arm64.
	preloaded := []ccBuild{{x86GCC, "-O2 -pg -mfentry"}, {a64GCC, slower + "-O2 -pg -mbranch-protection=standard"}}
	for rt, builds := range map[runtimeMode][]ccBuild{linkedMode: builds, preloadedMode: preloaded} {
		t.Run(string(rt), func(t *testing.T) {
			t.Parallel()
			forProgramAs(t, "jumpout.c", builds, rt, testSignalJumpOut)
		})
	}
}

// testSignalJumpOut is TestSignalJumpOut on one build of progs/jumpout.c,
// prog, run traced on runOn.
func testSignalJumpOut(t *testing.T, tg, runOn target, dir, prog, wantOut string, wantCode int) {
	for _, tracer := range []string{"function", "function_graph"} {
		stderr, out := runTracedOn(t, runOn, dir, prog, tracer, wantOut, wantCode)
		made := countLine(t, stderr, "made")
		// qemu-user now and then delivers a timer's signals late,
		// and a run ends with few jumps: that one is run again.
		for try := 0; tg.arch != "x86_64" && made["jumps"] < 50 && try < 3; try++ {
			stderr, out = runTracedArgv(t, dir, runOn.on(prog), tracer, fmt.Sprintf("%s-%d", tracer, try), nil, wantOut, wantCode)
			made = countLine(t, stderr, "made")
		}
		tr, syms := readTrace(t, out)
		traced, _ := tracedCalls(t, tr, syms, tracer)
		jumps := made["jumps"]
		if jumps < 50 {
			t.Errorf("%s: %d jumps: too few to test anything", tracer, jumps)
		}
		for _, f := range []string{"mid", "leaf"} {
			if traced[f] < made[f] || traced[f] > made[f]+jumps {
				t.Errorf("%s: %s traced %d times; the program began %d calls and jumped %d times", tracer, f, traced[f], made[f], jumps)
			}
		}
		// The handler's calls: on_alarm itself and hwork, one each a jump.
		if n := uint64(traced["on_alarm"] + traced["hwork"]); n+tr.Meta.Dropped != uint64(2*jumps) {
			t.Errorf("%s: the handlers' calls: %d traced and %d dropped; they made %d", tracer, n, tr.Meta.Dropped, 2*jumps)
		}
	}
}
