package tests

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSignalSemantics: a program's own handlers of the signals the
// flight recorder watches run as the kernel runs them (progs/sigsem.c,
// one scenario a run): with SA_NODEFER, left by longjmp, every fault
// recovers; without it the signal stays blocked and the next fault
// kills; SA_RESETHAND's handler sees the default action and the fault
// again kills; a handler without SA_ONSTACK runs on the thread's stack
// though there is an alternate one, one with it on the alternate stack;
// sa_mask and a sigprocmask in the handler; SA_SIGINFO's address; a read
// SIGBUS interrupts is restarted with SA_RESTART and fails with EINTR
// without; handlers set before the runtime starts (the program's own
// .preinit_array) and by a constructor; SIG_IGN ignores, SIG_DFL kills;
// a handler that puts back the action it found and raises; SIGABRT's
// handler returning from abort; SIGFPE and SIGILL. Under the flight
// recorder (FTRACE_BUFFER=ring:64k, both tracers), and with the runtime
// there but not tracing, linked or preloaded, each prints what the untraced program prints
// and ends as it does (exit status, signal, core dump). Where the signal
// kills through the default action the program set or was reset to, the
// rings are written first: the trace is ended, by that signal, with the
// calls before it.
func TestSignalSemantics(t *testing.T) {
	t.Parallel()
	builds := []ccBuild{
		{x86GCC, "-O2 -pg -mfentry"},
		{x86Clang, "-O2 -fpatchable-function-entry=5"},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"},
	}
	for _, rt := range runtimeModes {
		t.Run(string(rt), func(t *testing.T) {
			t.Parallel()
			forProgramAs(t, "sigsem.c", builds, rt, testSignalSemantics)
		})
	}
}

// sigsemModes are progs/sigsem.c's scenarios, each with the signal the
// trace says ended it, when the rings are written at the death.
var sigsemModes = []struct {
	name string
	sig  uint64
}{
	{"nodefer", 0}, {"defer", 0}, {"siglongjmp", 0}, {"resethand", 11}, {"altstack", 0}, {"mask", 0},
	{"siginfo", 0}, {"restart", 0}, {"early", 0}, {"later", 11}, {"chain", 11}, {"abort", 0}, {"fpe", 0},
}

// testSignalSemantics is TestSignalSemantics on one build of
// progs/sigsem.c, prog, run traced on runOn.
func testSignalSemantics(t *testing.T, tg, runOn target, dir, prog, _ string, _ int) {
	plain := filepath.Join(dir, "plain")
	for _, m := range sigsemModes {
		want := dies(t, tg, dir, nil, plain, m.name)
		if got := dies(t, runOn, dir, nil, prog, m.name); got != want {
			t.Errorf("%s, not tracing: %s; untraced: %s", m.name, got, want)
		}
		for _, tracer := range []string{"function_graph", "function"} {
			out := filepath.Join(dir, m.name+"-"+tracer)
			got := dies(t, runOn, dir, []string{"FTRACE=" + tracer, "FTRACE_BUFFER=ring:64k", "FTRACE_OUT=" + out}, prog, m.name)
			if got != want {
				t.Errorf("%s under %s: %s; untraced: %s", m.name, tracer, got, want)
				continue
			}
			if m.sig == 0 && !strings.HasSuffix(want, "exit 0") {
				continue // killed where no handler of the runtime's runs: no rings
			}
			tr, syms := readTrace(t, out)
			if tr.Meta.Unended || tr.Meta.Signal != m.sig {
				t.Errorf("%s under %s: unended %v, ended by signal %d; want an ended trace, by signal %d", m.name, tracer, tr.Meta.Unended, tr.Meta.Signal, m.sig)
			}
			if calls, _ := tracedCalls(t, tr, syms, tracer); calls["work"] == 0 {
				t.Errorf("%s under %s: no call of work in the trace", m.name, tracer)
			}
		}
	}
}
