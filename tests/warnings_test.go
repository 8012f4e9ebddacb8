package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// warningsBudget is what the runtime writes on a program's stderr at
// most over its life (say.h's SAY_BUDGET), before the one line that
// says the rest are suppressed.
const warningsBudget = 64 << 10

// TestRuntimeWarnings: the runtime's warnings on the program's stderr
// (progs/args.c, traced): one line per FTRACE_ARGS or FTRACE_RETVAL
// entry refused, naming that entry alone (its number and text, cut to a
// bounded length, control characters escaped) and why, a well-formed
// entry being refused saying so (past the stack arguments read, more
// items than a record holds) and 10,000 well-formed entries refused
// none; and every warning of the runtime's, from the environment's
// options to the arguments', within one budget for the process, then
// one line saying the rest are suppressed: 20,000 malformed entries
// write no more than that, where they wrote 1.7 MB. The program's output
// and exit status are the untraced ones throughout.
func TestRuntimeWarnings(t *testing.T) {
	t.Parallel()
	tg, dir := gccTest(t)
	wantOut, wantCode := untraced(t, tg, dir, "args.c")
	prog := traced(t, tg, dir, "-O2 -pg -mfentry", true, "args.c")
	run1 := func(name string, env ...string) string {
		t.Helper()
		stderr, _ := runTracedEnv(t, dir, prog, "function_graph", name, env, wantOut, wantCode)
		for i, l := range strings.SplitAfter(stderr, "\n") {
			if len(l) > 1024 {
				t.Errorf("%s: stderr's line %d has %d bytes", name, i+1, len(l))
			}
		}
		if strings.ContainsAny(stderr, "\x1b\x07\x00") {
			t.Errorf("%s: a control character on stderr: %q", name, stderr)
		}
		return stderr
	}

	long := strings.Repeat("g", 5000)
	stderr := run1("reasons", "FTRACE_ARGS=parse@arg1;parse\x1b[2J@arg1;parse@arg99;parse@"+strings.Repeat("arg1,", 15)+"arg1;"+long+"@bad;outer@arg1",
		"FTRACE_RETVAL=parse/zz;outer")
	for _, want := range []string{
		"ftrt: FTRACE_ARGS entry 2 skipped (the glob is empty, or holds a ',', '/', space or control character): parse\\x1b[2J@arg1\n",
		"ftrt: FTRACE_ARGS entry 3 skipped (argN: arg1-arg6 are registers, arg7-arg70 the stack's words after them, in its arguments' first 512 bytes): parse@arg99\n",
		"ftrt: FTRACE_ARGS entry 4 skipped (more than 15 items: a record holds at most 15): parse@arg1,",
		"ftrt: FTRACE_ARGS entry 5 skipped (an item is argN, fpargN, stack+OFF, *argN/{...}, *stack+OFF/{...}, argN+fpargM/{...} or ?): ggg",
		"ftrt: FTRACE_RETVAL entry 1 skipped (a format unknown, or not one of a return value): parse/zz\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("refused entries: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "\n"); n != 5 || strings.Contains(stderr, long[:300]) {
		t.Errorf("refused entries: %d lines, or the long entry whole; want 5, the long one cut:\n%s", n, stderr)
	}

	good := strings.TrimSuffix(strings.Repeat("parse@arg1;", 10000), ";")
	if stderr := run1("good", "FTRACE_ARGS="+good); stderr != "" {
		t.Errorf("10,000 well-formed entries: stderr %q", stderr)
	}

	flood := strings.TrimSuffix(strings.Repeat("x;", 20000), ";")
	stderr = run1("flood", "FTRACE_MODE=0777", "FTRACE_ARGS="+flood)
	const last = "ftrt: further warnings suppressed (the runtime's warnings are bounded, 64 KiB a process)\n"
	if len(stderr) > warningsBudget+len(last) || !strings.HasSuffix(stderr, last) || strings.Count(stderr, last) != 1 {
		t.Errorf("20,000 malformed entries: %d bytes on stderr, want at most %d and one line saying the rest are suppressed at the end; it ends\n%s",
			len(stderr), warningsBudget+len(last), stderr[max(0, len(stderr)-300):])
	}
	if !strings.HasPrefix(stderr, "ftrt: FTRACE_MODE: ") || !strings.Contains(stderr, fmt.Sprintf("ftrt: FTRACE_ARGS entry %d skipped (no '@' after the glob): x\n", 1000)) {
		t.Errorf("20,000 malformed entries: stderr does not begin with FTRACE_MODE's warning, then one line each entry:\n%s", stderr[:min(len(stderr), 600)])
	}
	if _, syms := readTrace(t, filepath.Join(dir, "flood")); syms == nil {
		t.Error("no trace")
	}
}
