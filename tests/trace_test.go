package tests

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"ftpatch/model"
	"ftpatch/symbols"
	"ftpatch/trace"
)

// oracleCounts builds the test program with -finstrument-functions and a
// counting hook, runs it, and returns the calls per function name. Both
// it and the traced build are compiled at -O0: the instrumentation
// changes what the optimiser does (clang turns half of fib's recursion
// into a loop in one build and not the other), and the comparison must be
// of the same calls. Counted once per test run.
func oracleCounts(t *testing.T, tg target) map[string]int {
	t.Helper()
	return maps.Clone(once(t, sharedKey("oracle", tg.id()), func(dir string) map[string]int { return countOracle(t, tg, dir) }))
}

// countOracle builds and runs oracleCounts' program in dir.
func countOracle(t *testing.T, tg target, dir string) map[string]int {
	t.Helper()
	objs := build(t, tg, dir, "-O0 -finstrument-functions", false)
	cyg := progPath(t, "cyg.c")
	prog := filepath.Join(dir, "oracle")
	run(t, dir, append(append(append([]string{}, tg.link...), "-o", prog, "-no-pie"), append(objs, cyg)...)...)
	_, errOut, _, err := runStatus(dir, tg.on(prog)...)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := symbols.Load(prog)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(errOut))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "cyg" {
			continue
		}
		addr, _ := strconv.ParseUint(f[1], 16, 64)
		n, _ := strconv.Atoi(f[2])
		counts[syms.Name(addr)] += n
	}
	if len(counts) < 5 {
		t.Fatalf("the oracle counted %d functions:\n%s", len(counts), errOut)
	}
	return counts
}

// TestFunctionTracer: FTRACE=function records every call of every
// function, exactly as many as an independent count (-finstrument-
// functions) finds, without changing the program's output or exit status;
// FTRACE_FILTER narrows it; a trace directory that exists is moved aside,
// never mixed or lost.
func TestFunctionTracer(t *testing.T) {
	t.Parallel()
	forTracedArchBuilds(t, func(t *testing.T, tg target, flags string, pie bool) {
		want := oracleCounts(t, tg)
		dir := t.TempDir()
		plain, wantOut, wantCode := plainRun(t, tg, pie, "bfd")

		objs := build(t, tg, dir, "-O0 "+flags, pie)
		prog := linkRecordedOn(t, tg, dir, objs, picLink(pie))

		out := filepath.Join(dir, "ftrace.data")
		if err := os.Mkdir(out, 0o755); err != nil { // a previous trace, to be moved aside
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "keep"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _, code, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_OUT=" + out}, tg.on(prog)...)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, "traced", got, code, wantOut, wantCode)
		if b, err := os.ReadFile(filepath.Join(out+".old", "keep")); err != nil || string(b) != "mine" {
			t.Errorf("the existing trace directory was not moved aside intact: %v", err)
		}
		// Names come only from the binary that was traced.
		if tr, err := trace.Read(out); err != nil || tr.Meta.BuildID == "" {
			t.Errorf("no build-id in the trace's metadata (%v)", err)
		} else if _, err := symbols.Load(plain, tr.Meta.BuildID); !errors.Is(err, symbols.ErrBuildID) {
			t.Errorf("naming the trace from another binary: %v, want ErrBuildID", err)
		}
		// arm64's counter gives its rate (cntfrq_el0), which the
		// metadata records; x86-64's TSC does not. Where cntfrq_el0
		// reads 0 (firmware that never set it; qemu-user from 9.1),
		// neither does arm64's: the reader takes the rate from the run.
		wantHz := uint64(0)
		if tg.arch == "arm64" {
			wantHz = arm64CounterHz(t)
		}
		if tr, err := trace.Read(out); err != nil {
			t.Error(err)
		} else if tr.Meta.TSCHz != wantHz {
			t.Errorf("%s: tsc_hz %d in the metadata, want %d (cntfrq_el0's)", tg.arch, tr.Meta.TSCHz, wantHz)
		}
		counts := traceCounts(t, out)
		for fn, n := range want {
			if counts[fn] != n {
				t.Errorf("%s: traced %d calls, the oracle counted %d", fn, counts[fn], n)
			}
		}
		for fn := range counts {
			if _, ok := want[fn]; !ok {
				t.Errorf("%s: traced %d calls the oracle never saw", fn, counts[fn])
			}
		}
		// Each record's parent ip names the call's real caller
		// (main.c and other.c say which; main's is libc's).
		callers := traceCallers(t, out)
		wantCallers := map[string]map[string]int{
			"fib":            {"main": 2, "fib": want["fib"] - 2},
			"weak_or_strong": {"main": 1, "helper": 1},
			"local_twice":    {"main": 1},
			"helper":         {"main": 1},
			"sum":            {"main": 1},
			"scale":          {"main": 1},
			"make_pair":      {"main": 1},
		}
		for fn, wc := range wantCallers {
			if !maps.Equal(callers[fn], wc) {
				t.Errorf("%s: called from %v, want %v", fn, callers[fn], wc)
			}
		}

		// The empty tracer: sites call a stub; nothing is recorded.
		nopOut := filepath.Join(t.TempDir(), "t")
		got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=nop", "FTRACE_DEBUG=1", "FTRACE_OUT=" + nopOut}, tg.on(prog)...)
		if err != nil || got != wantOut || code != wantCode {
			t.Errorf("FTRACE=nop: exit %d, %v, output\n%s", code, err, got)
		}
		if _, err := os.Stat(nopOut); err == nil {
			t.Error("FTRACE=nop made a trace directory")
		}
		// With no filter, calls of __fentry__ are enabled
		// without the symbol table, the dead copy of
		// main.c's weak weak_or_strong among them (the
		// table lists it; no symbol covers it); -pg and NOP
		// sites go by the table, which leaves it out.
		enabled := len(want)
		if strings.Contains(flags, "-mfentry") {
			enabled++
		}
		if m := ftrtLine.FindStringSubmatch(errOut); m == nil || !strings.Contains(errOut, fmt.Sprintf("; %d traced,", enabled)) {
			t.Errorf("FTRACE=nop: want %d sites enabled, every one of the %d functions' and, with -mfentry, the dead weak copy's:\n%s", enabled, len(want), errOut)
		}

		// A filter: only fib, and everything but fib.
		for _, c := range []struct {
			filter string
			only   func(string) bool
		}{
			{"fib", func(f string) bool { return f == "fib" }},
			{"*,!fib", func(f string) bool { return f != "fib" }},
		} {
			out2 := filepath.Join(t.TempDir(), "t")
			if _, _, _, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_FILTER=" + c.filter, "FTRACE_OUT=" + out2}, tg.on(prog)...); err != nil {
				t.Fatal(err)
			}
			counts := traceCounts(t, out2)
			for fn, n := range want {
				wantN := 0
				if c.only(fn) {
					wantN = n
				}
				if counts[fn] != wantN {
					t.Errorf("FTRACE_FILTER=%s: %s traced %d times, want %d", c.filter, fn, counts[fn], wantN)
				}
			}
		}
	})
}

// traceEvents reads the trace in dir and names its calls; a warning, a
// dropped event or a site skipped or failed is an error of the test.
func traceEvents(t *testing.T, dir string) []model.Event {
	t.Helper()
	tr, syms := readTrace(t, dir)
	if tr.Meta.Dropped != 0 || tr.Meta.Skipped != 0 || tr.Meta.Failed != 0 {
		t.Errorf("meta: %+v", tr.Meta)
	}
	return model.Events(tr, syms)
}

// traceCallers reads the function trace in dir: for each function, how
// many of its calls came from each caller function (by the record's
// parent ip).
func traceCallers(t *testing.T, dir string) map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]int{}
	for _, e := range traceEvents(t, dir) {
		caller, _, _ := strings.Cut(e.Caller, "+")
		if out[e.Func] == nil {
			out[e.Func] = map[string]int{}
		}
		out[e.Func][caller]++
	}
	return out
}

// readTrace reads the trace in dir and the symbols of the process it
// recorded; a warning naming them is an error of the test.
func readTrace(t *testing.T, dir string) (*trace.Trace, *symbols.Table) {
	t.Helper()
	tr := openForks(t, dir)
	for i := range tr.Streams {
		s := &tr.Streams[i]
		if err := tr.EachRecord(i, func(recs []trace.Record) { s.Records = append(s.Records, recs...) }); err != nil {
			t.Fatal(err)
		}
	}
	syms, warns, err := symbols.LoadProcess(&tr.Meta, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		t.Error(w)
	}
	return tr, syms
}

// checkClock checks that every record of tr lies within its run: the
// metadata's tsc_start to tsc_end, give or take 2^24 ticks (5 ms at
// 3 GHz: clocks read on two CPUs a little apart). A record's time is the
// one before's plus its delta, so a stream that does not start its clock
// afresh where the runtime must (its first record, a forked child's
// stream, one made after records were lost) reads times off by the
// clock's whole reading.
func checkClock(t *testing.T, tr *trace.Trace) {
	t.Helper()
	const slack = 1 << 24
	m := &tr.Meta
	for _, s := range tr.Streams {
		for i, r := range s.Records {
			if r.TS+slack < m.TSCStart || r.TS > m.TSCEnd+slack {
				t.Errorf("pid %d thread %d: record %d of %d at %d, outside the run (%d to %d)", s.Pid, s.Tid, i, len(s.Records), r.TS, m.TSCStart, m.TSCEnd)
				break
			}
		}
	}
}

// traceCounts reads a trace with the package every command uses and
// tallies calls per function.
func traceCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, c := range model.Counts(traceEvents(t, dir)) {
		counts[c.Func] = c.Calls
	}
	return counts
}

var counterHz = struct {
	once sync.Once
	hz   uint64
	err  error
}{}

// arm64CounterHz is what cntfrq_el0 reads where the arm64 tests run.
func arm64CounterHz(t *testing.T) uint64 {
	t.Helper()
	counterHz.once.Do(func() {
		dir, err := os.MkdirTemp("", "cntfrq")
		if err != nil {
			counterHz.err = err
			return
		}
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "cntfrq.c")
		const prog = `#include <stdio.h>
int main(void) { unsigned long hz; __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(hz)); printf("%lu\n", hz); return 0; }
`
		if counterHz.err = os.WriteFile(src, []byte(prog), 0o644); counterHz.err != nil {
			return
		}
		bin := filepath.Join(dir, "cntfrq")
		if out, err := exec.Command(a64GCC.cc[0], "-O2", src, "-o", bin).CombinedOutput(); err != nil {
			counterHz.err = fmt.Errorf("%v: %s", err, out)
			return
		}
		argv := a64GCC.on(bin)
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			counterHz.err = err
			return
		}
		counterHz.hz, counterHz.err = strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	})
	if counterHz.err != nil {
		t.Fatalf("reading cntfrq_el0: %v", counterHz.err)
	}
	return counterHz.hz
}

// openForks opens the trace at dir as one program's: a process image,
// or a session whose images are one process and the children it (and
// they) forked without an exec, each of which has an image of its own.
// The children's streams are read as the first image's (a Stream's name
// is a path from the trace's directory), their losses added to its
// counts, and its end the last one's: the tests of a program that forks
// count its calls over every process it became, as it made them.
func openForks(t *testing.T, dir string) *trace.Trace {
	t.Helper()
	if !trace.IsSession(dir) {
		tr, err := trace.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	s, err := trace.OpenSession(dir)
	if err != nil {
		t.Fatal(err)
	}
	tr := s.Procs[0]
	for _, c := range s.Procs[1:] {
		m := &c.Meta
		if m.Exe != tr.Meta.Exe || m.Image != 1 || m.Bias != tr.Meta.Bias {
			t.Fatalf("%s: image %s (%s, image %d) is not a forked child of %s", dir, c.Dir, m.Exe, m.Image, tr.Dir)
		}
		rel, err := filepath.Rel(tr.Dir, c.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range c.Streams {
			st.Name = filepath.Join(rel, st.Name)
			tr.Streams = append(tr.Streams, st)
		}
		tm := &tr.Meta
		tm.AddLosses(m)
		tm.Unended = tm.Unended || m.Unended
		if m.Clock == tm.Clock && m.TSCEnd > tm.TSCEnd {
			tm.TSCEnd, tm.MonoEnd = m.TSCEnd, m.MonoEnd
		}
	}
	slices.SortStableFunc(tr.Streams, func(a, b trace.Stream) int { return cmp.Or(cmp.Compare(a.Pid, b.Pid), cmp.Compare(a.Tid, b.Tid)) })
	return tr
}
