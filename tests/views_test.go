package tests

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReportDiff: report NEW --diff BASE on two real traces of
// progs/spin.c, one run fast (spin busy-waits 2 ms, after 5 calls of
// tick) and one slow (100 ms, after 2), read as uftrace reads it: headed
// with the base trace's name and the new one's, spin's total and self
// time in BASE's columns and NEW's, and the change from BASE to NEW:
// negative when NEW is the fast run, positive the other way round;
// tick's calls 2 and 5 (or 5 and 2), changed by +3 (or -3).
func TestReportDiff(t *testing.T) {
	t.Parallel()
	need(t, "gcc")
	dir := t.TempDir()
	prog := traced(t, x86GCC, dir, "-O2 -pg -mfentry", true, "spin.c")
	fast, slow := filepath.Join(dir, "fast.data"), filepath.Join(dir, "slow.data")
	run(t, dir, "env", "FTRACE=function_graph", "FTRACE_OUT="+fast, prog, "2000", "5")
	run(t, dir, "env", "FTRACE=function_graph", "FTRACE_OUT="+slow, prog, "100000", "2")
	const us, ms = 1e3, 1e6 // ns
	for _, c := range []struct {
		name      string
		new, base string
		ticks     [3]int // in base, in new, change
		faster    bool   // the new trace is the fast one
	}{
		{"faster", fast, slow, [3]int{2, 5, +3}, true},
		{"slower", slow, fast, [3]int{5, 2, -3}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := run(t, dir, tool("ftpatch"), "report", c.new, "--diff", c.base)
			if !strings.HasPrefix(out, "# base: "+c.base+"\n# new:  "+c.new+"\n") {
				t.Fatalf("heading: want base %s, new %s:\n%s", c.base, c.new, out)
			}
			rows := diffRows(t, out)
			spin, tick := rows["spin"], rows["tick"]
			if spin == nil || tick == nil {
				t.Fatalf("no row for spin or tick:\n%s", out)
			}
			// spin's total and self time alike: the slow run's at least
			// 100 ms, the fast run's less (it spins 2 ms: a machine would
			// have to stall it 98 ms for the test to fail). The trace's
			// clock (the TSC, converted by CLOCK_MONOTONIC readings at its
			// start and end) may tell a few ns less than spin's: 10 µs
			// of slack.
			for k, what := range []string{"total", "self"} {
				base, new, change := spin.times[k][0], spin.times[k][1], spin.times[k][2]
				slowT, fastT := base, new
				if !c.faster {
					slowT, fastT = new, base
				}
				if slowT < 100*ms-10*us || fastT < 2*ms-10*us || fastT >= slowT {
					t.Errorf("spin's %s time: base %.0f ns, new %.0f ns: want the slow run's at least 100 ms and the fast one's less, at least 2 ms\n%s", what, base, new, out)
				}
				// The change is printed to the µs.
				if d := change - (new - base); d > 1e3 || d < -1e3 || (change < 0) != c.faster {
					t.Errorf("spin's %s time changed by %.0f ns from base %.0f to new %.0f: want new - base, negative when new is faster\n%s", what, change, base, new, out)
				}
			}
			if tick.calls != c.ticks {
				t.Errorf("tick's calls (base, new, change) %v, want %v\n%s", tick.calls, c.ticks, out)
			}
		})
	}
}

// A diffRow is one function's line of report --diff: total and self
// time (ns) in the base, in the new trace and the change, and the calls.
type diffRow struct {
	times [2][3]float64
	calls [3]int
}

// diffRows reads report --diff's lines of function_graph traces, by
// function.
func diffRows(t *testing.T, out string) map[string]*diffRow {
	t.Helper()
	d := `([0-9.]+ +[mu]?s)`
	change := `([+-][0-9.]+ +[mu]?s)`
	row := regexp.MustCompile(`^ *` + d + ` +` + d + ` +` + change + ` +(?:[+-][0-9.]+%|new|gone)? +` + d + ` +` + d + ` +` + change + ` +(\d+) +(\d+) +([+-]\d+) +(\S+)$`)
	rows := map[string]*diffRow{}
	for _, line := range strings.Split(out, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		r := &diffRow{}
		for i := range 6 {
			r.times[i/3][i%3] = nsOf(t, m[1+i])
		}
		for i := range 3 {
			r.calls[i], _ = strconv.Atoi(m[7+i])
		}
		rows[m[10]] = r
	}
	return rows
}

// nsOf reads a duration as the views print it ("12.345 ms", "-0.500 us")
// in ns.
func nsOf(t *testing.T, s string) float64 {
	f := strings.Fields(s)
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return v * map[string]float64{"us": 1e3, "ms": 1e6, "s": 1e9}[f[1]]
}

// TestBigtraceViews: views of real traces of progs/bigtrace.c (four
// threads; fib recursing to mid, which calls leaf, so leaf is reached by
// a path per depth of fib).
//
// A flight-recorder trace (FTRACE_BUFFER=ring:64k, each thread's ring
// overwritten many times) is warned of once by replay, report and graph:
// the warning naming the streams that begin where a ring wrapped, not
// first a vaguer one before the streams are read.
//
// graph FUNC lists leaf's backtraces by their total time, the most
// first, or with --sort calls by their calls: not in the order first
// seen.
func TestBigtraceViews(t *testing.T) {
	t.Parallel()
	need(t, "gcc")
	dir := t.TempDir()
	prog := traced(t, x86GCC, dir, "-O2 -fno-optimize-sibling-calls -pg -mfentry", true, "bigtrace.c")
	t.Run("ring warned once", func(t *testing.T) {
		ring := filepath.Join(dir, "ring.data")
		run(t, dir, "env", "FTRACE=function_graph", "FTRACE_BUFFER=ring:64k", "FTRACE_OUT="+ring, prog, "300")
		for _, cmd := range []string{"replay", "report", "graph"} {
			_, errOut := run(t, dir, tool("ftpatch"), cmd, ring)
			if n := strings.Count(errOut, "the flight recorder's ring wrapped"); n != 1 || !regexp.MustCompile(`the calls of \S+\.trace.* start where the ring wrapped`).MatchString(errOut) {
				t.Errorf("%s: warned %d times that the ring wrapped, want once naming the streams:\n%s", cmd, n, errOut)
			}
		}
	})
	t.Run("graph backtraces ordered", func(t *testing.T) {
		whole := filepath.Join(dir, "whole.data")
		run(t, dir, "env", "FTRACE=function_graph", "FTRACE_OUT="+whole, prog, "2")
		bt := regexp.MustCompile(`(?m)^ backtrace #\d+: hit (\d+), time +([0-9.]+ +[mu]?s)$`)
		for _, c := range []struct {
			sort string
			key  func(hit, ns float64) float64 // what must not grow from one backtrace to the next
		}{
			{"total", func(hit, ns float64) float64 { return ns }},
			{"calls", func(hit, ns float64) float64 { return hit }},
		} {
			out, _ := run(t, dir, tool("ftpatch"), "graph", "--sort", c.sort, whole, "leaf")
			all := bt.FindAllStringSubmatch(out, -1)
			if len(all) < 5 {
				t.Fatalf("--sort %s: %d backtraces of leaf, want one per depth of fib:\n%.3000s", c.sort, len(all), out)
			}
			var last float64
			for i, m := range all {
				hit, _ := strconv.ParseFloat(m[1], 64)
				k := c.key(hit, nsOf(t, m[2]))
				if i > 0 && k > last {
					t.Errorf("--sort %s: backtrace #%d (hit %s, time %s) after one of less:\n%.3000s", c.sort, i, m[1], m[2], out)
				}
				last = k
			}
		}
	})
}
