package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadOptions: replay's and report's options on a real trace of
// progs/bigtrace.c (four threads; work calls fib, which calls itself
// and mid, which calls leaf), built with -g: --srcline names each
// function's opening line; -F keeps a function's subtree, with -D
// counted from it; -N hides one; --time-range before the first call
// keeps nothing; report --threads, --avg and --diff; and the record-time
// subtree filter gives the trace -F reads from a whole one.
func TestReadOptions(t *testing.T) {
	t.Parallel()
	need(t, "gcc")
	dir := t.TempDir()
	prog := traced(t, x86GCC, dir, "-O2 -g -fno-optimize-sibling-calls -pg -mfentry", true, "bigtrace.c")
	whole := filepath.Join(dir, "whole")
	run(t, dir, "env", "FTRACE=function_graph", "FTRACE_OUT="+whole, prog, "2")
	ftpatch := func(args ...string) string {
		out, _ := run(t, dir, append([]string{tool("ftpatch")}, args...)...)
		return out
	}
	calls := func(out string) map[string]int { // function -> lines opening a call of it
		n := map[string]int{}
		for _, m := range regexp.MustCompile(`\| +(?:\[depth \d+\] )?(\w+)\(\)(?: \{|;)`).FindAllStringSubmatch(out, -1) {
			n[m[1]]++
		}
		return n
	}

	src := progPath(t, "bigtrace.c")
	// The function's first row: its name's line, or its brace's below.
	fibLine := lineOf(t, src, "long fib(int n)")
	out := ftpatch("replay", "--srcline", whole)
	if !regexp.MustCompile(fmt.Sprintf(`fib\(\) \{ /\* \S*bigtrace\.c:(%d|%d) \*/`, fibLine, fibLine+1)).MatchString(out) {
		t.Errorf("replay --srcline: no fib() { /* bigtrace.c:%d */ line:\n%.3000s", fibLine, out)
	}

	all := calls(ftpatch("replay", whole))
	if all["fib"] == 0 || all["mid"] == 0 || all["leaf"] != 2*all["mid"] || all["work"] != 4 {
		t.Fatalf("replay: calls %v", all)
	}
	sub := calls(ftpatch("replay", "-F", "mid", whole))
	if len(sub) != 2 || sub["mid"] != all["mid"] || sub["leaf"] != all["leaf"] {
		t.Errorf("replay -F mid: calls %v, want mid's and leaf's only (%d, %d)", sub, all["mid"], all["leaf"])
	}
	if d := calls(ftpatch("replay", "-F", "mid", "-D", "1", whole)); len(d) != 1 || d["mid"] != all["mid"] {
		t.Errorf("replay -F mid -D 1: calls %v, want mid's only", d)
	}
	if h := calls(ftpatch("replay", "-N", "fib", whole)); len(h) != 3 || h["work"] != 4 || h["thread"] != 4 || h["main"] != 1 {
		t.Errorf("replay -N fib: calls %v, want main, thread and work only", h)
	}
	if r := calls(ftpatch("replay", "--time-range", "~0ns", whole)); len(r) != 0 {
		t.Errorf("replay --time-range ~0ns: calls %v, want none", r)
	}

	threads := ftpatch("report", "--threads", whole)
	if n := strings.Count(threads, "# thread "); n != 5 {
		t.Errorf("report --threads: %d threads, want 5 (main and four workers):\n%s", n, threads)
	}
	if avg := ftpatch("report", "--avg", whole); !regexp.MustCompile(`TOTAL +AVG +MIN +MAX +CALLS +FUNCTION`).MatchString(avg) {
		t.Errorf("report --avg: no AVG MIN MAX columns:\n%s", avg)
	}
	diff := ftpatch("report", "--diff", whole, whole)
	if !strings.Contains(diff, "fib") || regexp.MustCompile(`[+-][1-9]\d* +\w+\n`).MatchString(diff) {
		t.Errorf("report --diff of a trace with itself: calls changed:\n%s", diff)
	}

	// Recorded with the subtree filter: the calls -F reads from the
	// whole trace, and nothing else.
	chosen := filepath.Join(dir, "chosen")
	run(t, dir, "env", "FTRACE=function_graph", "FTRACE_GRAPH_FUNCS=mid", "FTRACE_OUT="+chosen, prog, "2")
	if rec := calls(ftpatch("replay", chosen)); len(rec) != 2 || rec["mid"] != all["mid"] || rec["leaf"] != all["leaf"] {
		t.Errorf("FTRACE_GRAPH_FUNCS=mid: calls %v, want mid's and leaf's only (%d, %d)", rec, all["mid"], all["leaf"])
	}
	info := ftpatch("info", chosen)
	if !strings.Contains(info, "FTRACE_GRAPH_FUNCS=mid") {
		t.Errorf("info does not say the trace was recorded with FTRACE_GRAPH_FUNCS=mid:\n%s", info)
	}
	if !regexp.MustCompile(`(?m)^command line: +` + regexp.QuoteMeta(prog) + ` 2$`).MatchString(info) {
		t.Errorf("info does not give the command line %s 2:\n%s", prog, info)
	}
}

// lineOf is the 1-based line of path holding text.
func lineOf(t *testing.T, path, text string) int {
	t.Helper()
	out, _ := run(t, filepath.Dir(path), "grep", "-n", "-F", text, path)
	var n int
	if _, err := fmt.Sscanf(out, "%d:", &n); err != nil {
		t.Fatalf("%s: no line with %q", path, text)
	}
	return n
}
