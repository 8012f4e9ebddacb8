package tests

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"ftpatch/symbols"
	"ftpatch/trace"
)

// infoWay is one run of progs/info.c and what ftpatch info must say of
// it.
type infoWay struct {
	name   string
	args   []string // info.c's: how it ends, then open, fork
	env    []string // besides FTRACE=function_graph and FTRACE_OUT
	record bool     // run by ftpatch record (else directly)
	code   int      // its exit status (-1: a signal killed it)
	want   []string // info's lines, as regular expressions: each must match a line whole
	// read: the threads whose calls info counts by reading their
	// records, their streams having no summary (the program was killed
	// while they ran) or one that does not count them (the flight
	// recorder's); the others' come from their summaries.
	read int
}

// The lines of a run whose two workers ended: their names, calls (1
// worker + 3,000 of work and leaf + jumper, deep + work and two leaf
// after the longjmp) and the two left by the longjmp.
var workersLines = []string{
	`thread: +pid \d+ tid \d+ \(worker-1\): 3006 calls, from \S+ [mu]?s to \S+ [mu]?s, 2 unwound`,
	`thread: +pid \d+ tid \d+ \(worker-2\): 3006 calls, from \S+ [mu]?s to \S+ [mu]?s, 2 unwound`,
}

// usageLines are the usage lines' shapes, whoever saw them.
var usageLines = []string{
	`cpu time: +\d+\.\d{3} / \d+\.\d{3} sec \(sys / user\)`,
	`max rss: +[1-9]\d* KB`,
	`page faults: +\d+ / [1-9]\d* \(major / minor\)`,
	`context switches: +\d+ / \d+ \(voluntary / involuntary\)`,
	`disk iops: +\d+ / \d+ \(read / write\)`,
}

// TestInfo: ftpatch info of progs/info.c, a traced program that names
// its threads and ends in each way there is, says how it ended and what
// it used, as the runtime saw it (exit(3), main's return, _exit(6), a
// SIGSEGV under the flight recorder), or ftpatch record (SIGKILL,
// SIGSEGV, and exit(3) too), or that neither could (a SIGSEGV, run
// directly); names each thread as it named itself (pthread_setname_np,
// prctl), in its line and in the task list; counts each thread's calls,
// those left by a longjmp, and those still running at the end. Where
// the program ended, every stream holds its summary, and the counts info
// takes from the summaries are those reading the records gives, each
// thread's calls, unwound and open ones, first and last time alike;
// where it was killed, the threads still running then are counted from
// their records. A forked child's stream, whose first call returns into
// its parent's, is counted from its summary too.
func TestInfo(t *testing.T) {
	t.Parallel()
	tg, dir := gccTest(t)
	prog := traced(t, tg, dir, "-O2 -pg -mfentry", true, "info.c")
	runtimeUsage := append([]string{`usage: +as the runtime saw it when tracing ended \(getrusage: the process alone, not its children; max rss: the program image's peak\)`}, usageLines...)
	recordUsage := append([]string{`usage: +as ftpatch record saw it \(wait4: the program, and the children it waited for\); max rss the runtime's \(the program image's peak\)`}, usageLines...)
	killedUsage := append([]string{`usage: +as ftpatch record saw it \(wait4: the program, and the children it waited for; its max rss counts ftpatch's own memory too, which the process had before its exec\)`}, usageLines...)
	ended := func(lines ...[]string) []string {
		var all []string
		for _, l := range lines {
			all = append(all, l...)
		}
		return append(all, workersLines...)
	}
	for _, c := range []infoWay{
		{name: "exit", args: []string{"exit", "open"}, code: 3, want: ended([]string{
			`pid: +\d+ \(infomain\)`,
			`exit status: +exited with code 3`,
			`thread: +pid \d+ tid \d+ \(infomain\): 4 calls, from \S+ [mu]?s to \S+ [mu]?s, 1 still running at the end`,
			`thread: +pid \d+ tid \d+ \(sleeper\): 5 calls, from \S+ [mu]?s to \S+ [mu]?s, 2 still running at the end`,
			`threads: +4, 6021 calls in all .*`,
			`task list: +\d+\(infomain\) \d+\(worker-[12]\) \d+\(worker-[12]\) \d+\(sleeper\)`,
		}, runtimeUsage)},
		{name: "return", args: []string{"return", "fork"}, code: 0, want: ended([]string{
			`exit status: +exited with code 0`,
			`thread: +pid \d+ tid \d+ \(infomain\): 5 calls, from \S+ [mu]?s to \S+ [mu]?s`,
			// The forked child, a process of its own: work(2) and its
			// two leaf; forked()'s return is its parent's call's.
			`thread: +pid \d+ tid \d+ \(infomain\): 3 calls, from \S+ [mu]?s to \S+ [mu]?s`,
			`session: +2 processes \(1 forked without an exec\), 2 process images \(0 after an exec\)`,
			`threads: +4, 6020 calls in all`,
			`threads: +3, 6017 calls in all .*`,
			`process: +\d+ \(infomain\) image 1, parent \d+: exited with code 0`,
			`process: +\d+ \(infomain\) forked, image 1, parent \d+: exited with code 0`,
		}, runtimeUsage)},
		// The function tracer: calls, none graphed (so none left by the
		// longjmp, nor still running); counted by its fast path.
		{name: "exit under the function tracer", args: []string{"exit", "open"}, env: []string{"FTRACE=function"}, code: 3, want: append([]string{
			`exit status: +exited with code 3`,
			`thread: +pid \d+ tid \d+ \(infomain\): 4 calls, from \S+ [mu]?s to \S+ [mu]?s`,
			`thread: +pid \d+ tid \d+ \(worker-1\): 3006 calls, from \S+ [mu]?s to \S+ [mu]?s`,
			`thread: +pid \d+ tid \d+ \(worker-2\): 3006 calls, from \S+ [mu]?s to \S+ [mu]?s`,
			`thread: +pid \d+ tid \d+ \(sleeper\): 5 calls, from \S+ [mu]?s to \S+ [mu]?s`,
		}, runtimeUsage...)},
		{name: "by _exit", args: []string{"_exit"}, code: 6, want: ended([]string{
			`exit status: +exited with code 6`,
			`thread: +pid \d+ tid \d+ \(infomain\): 4 calls, from \S+ [mu]?s to \S+ [mu]?s, 1 still running at the end`,
		}, runtimeUsage)},
		{name: "exit under record", args: []string{"exit"}, record: true, code: 3, want: ended([]string{
			`exit status: +exited with code 3`,
		}, recordUsage)},
		// Killed: main's stream, whose buffer filled twice, has no
		// summary; its name is the process's when tracing began (the
		// program's file's name); main, and the work and leaf whose
		// entries the last buffer written held, were running.
		{name: "SIGKILL under record", args: []string{"kill", "many"}, record: true, code: -1, read: 1, want: ended([]string{
			`pid: +\d+ \(prog\)`,
			`exit status: +killed by signal 9 \(SIGKILL\)`,
			`thread: +pid (\d+) tid \d+ \(prog\): \d+ calls, from \S+ [mu]?s to \S+ [mu]?s, [1-3] still running at the end`,
			`task list: +\d+\(prog\) \d+\(worker-[12]\) \d+\(worker-[12]\)`,
		}, killedUsage)},
		{name: "SIGSEGV under record", args: []string{"segv", "many"}, record: true, code: -1, read: 1, want: ended([]string{
			`exit status: +killed by signal 11 \(SIGSEGV\)`,
		}, killedUsage)},
		{name: "SIGSEGV under the flight recorder", args: []string{"segv", "open"}, env: []string{"FTRACE_BUFFER=ring:1m"}, code: -1, read: 4, want: ended([]string{
			`ended: +by signal 11 .*`,
			`exit status: +killed by signal 11 \(SIGSEGV\)`,
			`thread: +pid \d+ tid \d+ \(sleeper\): 5 calls, from \S+ [mu]?s to \S+ [mu]?s, 2 still running at the end`,
		}, runtimeUsage)},
		{name: "SIGSEGV", args: []string{"segv", "many"}, code: -1, read: 1, want: ended([]string{
			`exit status: +not recorded: the program was killed, and not run by ftpatch record`,
			`usage: +not recorded: the program was killed, and not run by ftpatch record`,
		})},
	} {
		t.Run(slug(c.name), func(t *testing.T) {
			out := filepath.Join(dir, slug(c.name))
			argv := append([]string{prog}, c.args...)
			env := append([]string{"FTRACE=function_graph", "FTRACE_OUT=" + out}, c.env...)
			if c.record {
				argv = append([]string{tool("ftpatch"), "record", "--no-libcall", "-d", out, "--"}, argv...) // the program's own calls, counted
				env = c.env
			}
			stdout, stderr, code, err := runStatusEnv(dir, env, argv...)
			if err != nil || code != c.code || stdout != "ended "+c.args[0]+"\n" {
				t.Fatalf("%s: exit %d, %v, output %q; want exit %d\n%s", strings.Join(argv, " "), code, err, stdout, c.code, stderr)
			}
			info, _ := run(t, dir, tool("ftpatch"), "info", out)
			for _, w := range c.want {
				if !regexp.MustCompile(`(?m)^` + w + `$`).MatchString(info) {
					t.Errorf("no line %s in ftpatch info:\n%s", w, info)
				}
			}
			summed, read := countsBothWays(t, out)
			if !slices.Equal(summed, read) {
				t.Errorf("each thread's calls counted\nfrom its stream's summary, where it has one: %+v\nfrom its records: %+v", summed, read)
			}
			fromRecords := 0
			for _, c := range summed {
				if !c.Summed {
					fromRecords++
				}
			}
			if fromRecords != c.read {
				t.Errorf("%d threads counted from their records, %d from their streams' summaries; want %d from their records",
					fromRecords, len(summed)-fromRecords, c.read)
			}
		})
	}
}

// countsBothWays counts each thread's calls in the trace in dir twice:
// as ftpatch info does (trace.Counts: from the streams' summaries where
// they have them), and by reading every record (trace.CountEvents of
// trace.Threads); the first with their names and whether they came from
// a summary, the second with those of the first (which reading the
// records does not give).
func countsBothWays(t *testing.T, dir string) (summed, read []trace.ThreadCounts) {
	t.Helper()
	tr := openForks(t, dir)
	var readErr error
	for c := range tr.Counts(&readErr) {
		summed = append(summed, c)
	}
	for th := range tr.Threads(&symbols.Table{}, &trace.Filter{}, &readErr) {
		c := trace.CountEvents(th)
		if i := len(read); i < len(summed) {
			c.Name, c.Summed = summed[i].Name, summed[i].Summed
		}
		read = append(read, c)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	return summed, read
}

// TestInfoARM64: on arm64 (under qemu), whose tracers count the records
// they write in C alone, ftpatch info of progs/info.c ending with
// exit(3) says so, names its threads as they named themselves, and
// counts their calls from their streams' summaries as reading the
// records counts them.
func TestInfoARM64(t *testing.T) {
	t.Parallel()
	need(t, a64GCC.tools...)
	dir := t.TempDir()
	prog := traced(t, a64GCC, dir, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8", true, "info.c")
	out := filepath.Join(dir, "trace")
	stdout, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_OUT=" + out}, a64GCC.on(prog, "exit", "open")...)
	if err != nil || code != 3 || stdout != "ended exit\n" {
		t.Fatalf("exit %d, %v, output %q; want exit 3\n%s", code, err, stdout, stderr)
	}
	info, _ := run(t, dir, tool("ftpatch"), "info", out)
	for _, w := range append([]string{
		`pid: +\d+ \(infomain\)`,
		`exit status: +exited with code 3`,
		`thread: +pid \d+ tid \d+ \(infomain\): 4 calls, from \S+ [mu]?s to \S+ [mu]?s, 1 still running at the end`,
		`thread: +pid \d+ tid \d+ \(sleeper\): 5 calls, from \S+ [mu]?s to \S+ [mu]?s, 2 still running at the end`,
		`task list: +\d+\(infomain\) \d+\(worker-[12]\) \d+\(worker-[12]\) \d+\(sleeper\)`,
	}, workersLines...) {
		if !regexp.MustCompile(`(?m)^` + w + `$`).MatchString(info) {
			t.Errorf("no line %s in ftpatch info:\n%s", w, info)
		}
	}
	summed, read := countsBothWays(t, out)
	if !slices.Equal(summed, read) {
		t.Errorf("each thread's calls counted\nfrom its stream's summary: %+v\nfrom its records: %+v", summed, read)
	}
	for _, c := range summed {
		if !c.Summed {
			t.Errorf("thread %d counted from its records: want its stream's summary", c.Tid)
		}
	}
}
