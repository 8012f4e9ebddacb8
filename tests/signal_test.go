package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

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

// TestSignalStress: eight threads calling traced functions while a timer
// of their own sends each SIGPROF at 20 kHz, whose handler makes traced
// calls, nesting (SA_NODEFER) and, on half the threads, on an alternate
// stack above the thread's (progs/sigstress.c); threads are created and
// exit, and threads fork children that make traced calls. Twenty runs
// over every x86-64 site kind, both compilers, a pre-patched program and
// both tracers: each run's output and exit status are the untraced
// program's, every call of the loops is in the trace, the handlers' calls
// are there but for those the trace counts as dropped (a handler that
// interrupted the tracer), no call is taken for one a longjmp left (there
// is none), and every graphed call lies within its caller.
func TestSignalStress(t *testing.T) {
	cases := []struct {
		tg     target
		flags  string
		pie    bool
		tracer string
		enable bool // pre-patched by ftpatch enable, run with no FTRACE
	}{
		{x86GCC, "-O2 -pg -mfentry", true, "function_graph", false},
		{x86GCC, "-O2 -pg", false, "function_graph", false},
		{x86Clang, "-O0 -fpatchable-function-entry=5", true, "function_graph", false},
		{x86GCC, "-O2 -pg -mfentry -fcf-protection", true, "function_graph", true},
		{x86Clang, "-O2 -pg -mfentry", false, "function", false},
	}
	const runs = 4 // each: twenty in all
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/%s/%s", c.tg.name, slug(c.flags), picFlag(c.pie), c.tracer)
		if c.enable {
			name += "/enabled"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			plainDir, dir := t.TempDir(), t.TempDir()
			plain := filepath.Join(plainDir, "plain")
			src, err := filepath.Abs(filepath.Join("progs", "sigstress.c"))
			if err != nil {
				t.Fatal(err)
			}
			run(t, plainDir, append(append([]string{}, c.tg.cc...), "-O2", "-pthread", src, "-o", plain)...)
			wantOut, _, wantCode, err := runStatus(plainDir, plain)
			if err != nil {
				t.Fatal(err)
			}
			prog := traced(t, c.tg, dir, c.flags, c.pie, "sigstress.c")
			var env []string
			if c.enable {
				run(t, dir, tool("ftpatch"), "enable", "--tracer", c.tracer, prog, "*")
			} else {
				env = []string{"FTRACE=" + c.tracer}
			}
			for i := range runs {
				out := filepath.Join(dir, fmt.Sprintf("run%d", i))
				got, stderr, code, err := runStatusEnv(dir, append(env, "FTRACE_OUT="+out), prog)
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

// checkStress checks a trace of progs/sigstress.c against the calls the
// run says it made: the loops' exactly, the handlers' less the trace's
// dropped events.
func checkStress(t *testing.T, dir, tracer string, made, handler map[string]int) {
	t.Helper()
	tr, syms := readTrace(t, dir)
	if tr.Meta.Tracer != tracer || tr.Meta.Unended {
		t.Fatalf("%s: tracer %q, unended %v", dir, tr.Meta.Tracer, tr.Meta.Unended)
	}
	if tr.Meta.Unwound != 0 || tr.Meta.Overflow != 0 || tr.Meta.LostBytes != 0 {
		t.Errorf("%s: %d calls taken for left by a longjmp, %d not graphed, %d bytes lost; want none",
			dir, tr.Meta.Unwound, tr.Meta.Overflow, tr.Meta.LostBytes)
	}
	got := map[string]int{}
	if tracer == "function_graph" {
		threads := trace.Graph(tr, syms)
		checkNesting(t, threads)
		for _, s := range trace.Stats(threads) {
			got[s.Func] = s.Calls
			if s.Unwound != 0 {
				t.Errorf("%s: %d calls of %s unwound; nothing unwinds", dir, s.Unwound, s.Func)
			}
		}
	} else {
		got = tally(trace.Events(tr, syms))
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
