package tests

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/viewcheck"
)

// An offLine is a time off the CPU as replay shows it: the calls open
// around it (outermost first), sleeping or pre-empted, and how long, ms.
type offLine struct {
	stack []string
	why   string
	ms    float64
}

var (
	offCPURe    = regexp.MustCompile(`^/\* off-CPU ([0-9.]+ (?:us|ms|s)): (sleeping|pre-empted) \*/$`)
	preemptedRe = regexp.MustCompile(`^/\* pre-empted ([0-9.]+ (?:us|ms|s)) \*/$`)
)

// parseMS reads replay's "12.345 ms" (us, s) as ms.
func parseMS(t *testing.T, s string) float64 {
	t.Helper()
	f := strings.Fields(s)
	if len(f) != 2 {
		t.Fatalf("duration %q", s)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	switch f[1] {
	case "us":
		return v / 1000
	case "s":
		return v * 1000
	}
	return v
}

// replayOffCPU reads replay's text: each thread's times off the CPU,
// with the calls open around them.
func replayOffCPU(t *testing.T, out string) map[string][]offLine {
	t.Helper()
	stacks := map[string][]string{}
	got := map[string][]offLine{}
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, " | ")
		j := strings.Index(line, "[")
		if i < 0 || j < 0 || j > i || strings.HasPrefix(line, "#") {
			continue
		}
		tid := strings.TrimSpace(strings.Trim(line[j:i], "[]"))
		text := strings.TrimSpace(line[i+3:])
		st := stacks[tid]
		switch {
		case strings.HasSuffix(text, " {"):
			name := text
			if k := strings.IndexByte(name, '('); k > 0 {
				name = name[:k]
			}
			stacks[tid] = append(st, name)
		case strings.HasPrefix(text, "}"):
			if len(st) > 0 {
				stacks[tid] = st[:len(st)-1]
			}
		case strings.HasPrefix(text, "/* off-CPU"), strings.HasPrefix(text, "/* pre-empted"):
			ol := offLine{stack: append([]string(nil), st...)}
			if m := offCPURe.FindStringSubmatch(text); m != nil {
				ol.why, ol.ms = m[2], parseMS(t, m[1])
			} else if m := preemptedRe.FindStringSubmatch(text); m != nil {
				ol.why, ol.ms = "pre-empted", parseMS(t, m[1])
			} else {
				t.Fatalf("replay line %q: not an off-CPU line", line)
			}
			got[tid] = append(got[tid], ol)
		}
	}
	return got
}

// inCall are the lines of a thread (any) off the CPU inside a call of
// fn, of reason why.
func inCall(lines map[string][]offLine, fn, why string) (n int, ms float64, each []float64) {
	for _, ls := range lines {
		for _, l := range ls {
			for _, f := range l.stack {
				if f == fn && l.why == why {
					n++
					ms += l.ms
					each = append(each, l.ms)
					break
				}
			}
		}
	}
	return n, ms, each
}

// reportRow reads report's row of fn: TOTAL, ON-CPU, OFF-CPU, SELF (ms).
func reportRow(t *testing.T, out, fn string) (total, on, off, self float64) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) == 0 || !strings.Contains(lines[0], "ON-CPU") || !strings.Contains(lines[0], "OFF-CPU") {
		t.Fatalf("report without its on/off-CPU columns:\n%s", out)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 10 && f[9] == fn {
			return parseMS(t, f[0]+" "+f[1]), parseMS(t, f[2]+" "+f[3]), parseMS(t, f[4]+" "+f[5]), parseMS(t, f[6]+" "+f[7])
		}
	}
	t.Fatalf("no row of %s in the report:\n%s", fn, out)
	return
}

// offCPUProg builds progs/offcpu.c for tg into dir, its sites the
// architecture's preferred ones, PIE.
func offCPUProg(t *testing.T, tg target, dir string) string {
	t.Helper()
	objs := buildSrc(t, tg, dir, preferred[tg.arch], true, "offcpu.c")
	return linkRecordedOn(t, tg, dir, objs, picLink(true), "-pthread")
}

// sums says whether report's on- and off-CPU times (ms) add up to its
// total, to the figures' rounding: 3 decimals of us, ms or s, each.
func sums(total, on, off float64) bool {
	return math.Abs(total-on-off) <= roundingOf(total)+roundingOf(on)+roundingOf(off)
}

// roundingOf is how far replay's and report's figure of ms (3 decimals
// of its unit) may be from the time it shows.
func roundingOf(ms float64) float64 {
	switch {
	case ms >= 1000:
		return 0.5 // of 1 ms, in s
	case ms >= 1:
		return 0.0005
	}
	return 0.0000005
}

// TestOffCPU: ftpatch record records when each thread left the CPU and
// why, by default, and the views show it in the call that waited, with
// the kernel's times converted to the trace's clock (the cycle counter
// and CLOCK_MONOTONIC): progs/offcpu.c's nap3 sleeps 3 x 10 ms (three
// sleeping lines inside it, each about 10 ms), wait_pipe blocks on a
// pipe another thread fills after 20 ms, spin is pre-empted by a
// sibling of higher priority on its CPU; report's ON-CPU and OFF-CPU of
// a function sum to its TOTAL; --no-sched records none. C, gcc and clang.
func TestOffCPU(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang} {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			prog := offCPUProg(t, tg, dir)
			for _, c := range []struct{ mode, clock string }{{"sleep", ""}, {"sleep", "mono"}, {"pipe", ""}, {"preempt", ""}} {
				t.Run(c.mode+"/"+c.clock, func(t *testing.T) {
					tdir := filepath.Join(dir, "t-"+c.mode+"-"+c.clock)
					var env []string
					if c.clock != "" {
						env = []string{"FTRACE_CLOCK=" + c.clock}
					}
					out, stderr, code, err := runStatusEnv(dir, env, tool("ftpatch"), "record", "-d", tdir, prog, c.mode)
					if err != nil || code != 0 {
						t.Fatalf("record: exit %d, %v\n%s%s", code, err, out, stderr)
					}
					replay, _ := run(t, dir, tool("ftpatch"), "replay", "--no-pager", tdir)
					lines := replayOffCPU(t, replay)
					report, _ := run(t, dir, tool("ftpatch"), "report", "--no-pager", tdir)
					info, _ := run(t, dir, tool("ftpatch"), "info", tdir)
					if !regexp.MustCompile(`scheduler events: +on: [1-9]\d* times a thread left the CPU`).MatchString(info) {
						t.Fatalf("info does not say scheduler events were recorded:\n%s", info)
					}
					// The timeline, parsed back: the thread's states.
					pf, _ := run(t, dir, tool("ftpatch"), "dump", "--perfetto", tdir)
					states, err := viewcheck.PerfettoStates([]byte(pf))
					if err != nil {
						t.Fatalf("dump --perfetto: %v", err)
					}
					var stateMS = map[string]float64{}
					for _, st := range states {
						stateMS[st.State] += float64(st.End-st.Start) / 1e6
					}
					switch c.mode {
					case "sleep", "pipe":
						if stateMS["sleeping"] < 15 || stateMS["running"] <= 0 {
							t.Errorf("perfetto's thread states: %v ms; want sleeping (30 ms, 20 ms) and running", stateMS)
						}
					case "preempt":
						if stateMS["runnable (pre-empted)"] < 1 {
							t.Errorf("perfetto's thread states: %v ms; want runnable (pre-empted)", stateMS)
						}
					}
					if c.mode == "sleep" {
						// The off-CPU flame graph: nap3's naps, a leaf of
						// their own under it.
						folded, _ := run(t, dir, tool("ftpatch"), "dump", "--flame-graph", "--offcpu", tdir)
						if !regexp.MustCompile(`(?m)^.*;nap3;.*\[sleeping\] (\d+)$`).MatchString(folded) {
							t.Errorf("dump --flame-graph --offcpu has no [sleeping] stack under nap3:\n%s", folded)
						}
					}
					switch c.mode {
					case "sleep":
						n, ms, each := inCall(lines, "nap3", "sleeping")
						if n != 3 || ms < 29.5 || ms > 150 {
							t.Errorf("nap3: %d sleeping lines, %.3f ms in all (%v); want 3, 30 ms\n%s", n, ms, each, replay)
						}
						for _, d := range each {
							if d < 9.9 || d > 50 {
								t.Errorf("nap3 slept %.3f ms once, want 10 (nanosleep's 10 ms and the wake-up)", d)
							}
						}
						total, on, off, _ := reportRow(t, report, "nap3")
						if !sums(total, on, off) || off < 29.5 || off > total {
							t.Errorf("nap3 in the report: total %.3f = on %.3f + off %.3f? want off >= 30 ms\n%s", total, on, off, report)
						}
					case "pipe":
						n, ms, each := inCall(lines, "wait_pipe", "sleeping")
						if n < 1 || ms < 10 || ms > 150 {
							t.Errorf("wait_pipe: %d sleeping lines, %.3f ms in all (%v); want about 20 ms\n%s", n, ms, each, replay)
						}
					case "preempt":
						n, ms, each := inCall(lines, "spin", "pre-empted")
						min := 5.0
						if strings.Contains(out, "nice") {
							min = 1 // the scheduler's choice, not the test's
						}
						if n < 1 || ms < min {
							t.Errorf("spin (%s): %d pre-empted lines, %.3f ms in all (%v); want the sibling's 5 x 3 ms\n%s", strings.TrimSpace(out), n, ms, each, replay)
						}
						total, on, off, _ := reportRow(t, report, "spin")
						if !sums(total, on, off) || off < min {
							t.Errorf("spin in the report: total %.3f = on %.3f + off %.3f?\n%s", total, on, off, report)
						}
					}
				})
			}
			t.Run("pingpong", func(t *testing.T) {
				// Switches by the hundred thousand, both CPUs at once:
				// few lost to the rings' readers (a ring the threads
				// shared across CPUs lost more than half), each
				// thread's times off the CPU in order whichever CPU it
				// ran on.
				tdir := filepath.Join(dir, "t-pingpong")
				out, stderr, code, err := runStatus(dir, tool("ftpatch"), "record", "--no-libcall", "-d", tdir, prog, "pingpong")
				if err != nil || code != 0 {
					t.Fatalf("record: exit %d, %v\n%s%s", code, err, out, stderr)
				}
				info, _ := run(t, dir, tool("ftpatch"), "info", tdir)
				m := regexp.MustCompile(`scheduler events: +on: (\d+) times a thread left the CPU, recorded; (\d+) events? lost`).FindStringSubmatch(info)
				if m == nil {
					t.Fatalf("info:\n%s", info)
				}
				sw, _ := strconv.Atoi(m[1])
				lost, _ := strconv.Atoi(m[2])
				// A loaded machine may keep the reader from the rings
				// long enough to lose some; one ring shared across CPUs
				// lost more than it kept.
				if sw < 50000 || lost*4 > sw {
					t.Errorf("%d switches recorded, %d events lost: want at least 50,000 (a thread waits for the other 50,000 times) and under a quarter lost", sw, lost)
				}
				report, _ := run(t, dir, tool("ftpatch"), "report", "--no-pager", tdir)
				total, on, off, _ := reportRow(t, report, "turn")
				if !sums(total, on, off) || off <= 0 || off > total {
					t.Errorf("turn in the report: total %.3f = on %.3f + off %.3f?\n%s", total, on, off, report)
				}
			})
			t.Run("no-sched", func(t *testing.T) {
				tdir := filepath.Join(dir, "t-nosched")
				out, stderr, code, err := runStatus(dir, tool("ftpatch"), "record", "--no-sched", "-d", tdir, prog, "sleep")
				if err != nil || code != 0 || out != "slept\n" {
					t.Fatalf("record --no-sched: exit %d, %v\n%s%s", code, err, out, stderr)
				}
				replay, _ := run(t, dir, tool("ftpatch"), "replay", "--no-pager", tdir)
				info, _ := run(t, dir, tool("ftpatch"), "info", tdir)
				if strings.Contains(replay, "off-CPU") || !strings.Contains(replay, "nap3") || !strings.Contains(info, "scheduler events:   not recorded") {
					t.Errorf("--no-sched: replay\n%s\ninfo\n%s", replay, info)
				}
				report, _ := run(t, dir, tool("ftpatch"), "report", "--no-pager", tdir)
				if strings.Contains(report, "OFF-CPU") {
					t.Errorf("--no-sched: report has an OFF-CPU column:\n%s", report)
				}
			})
		})
	}
}

// TestOffCPUFlightRecorder: under the flight recorder (ring:1m) the
// switches are kept in memory with the calls: a snapshot (ftpatch ctl
// snapshot) taken while the program waits on its input shows nap3's
// three naps, and the trace written at the end its six, each in nap3.
func TestOffCPUFlightRecorder(t *testing.T) {
	t.Parallel()
	tg := x86GCC
	need(t, tg.tools...)
	dir := t.TempDir()
	prog := offCPUProg(t, tg, dir)
	xdg := filepath.Join(dir, "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "trace")
	srv := startServerArgs(t, tg, dir, []string{prog, "wait"}, xdg, "FTRACE_OUT="+out, "FTRACE=function_graph", "FTRACE_BUFFER=ring:1m", "FTRACE_SCHED=1")
	time.Sleep(300 * time.Millisecond) // nap3 done, waiting on its input
	snap := filepath.Join(dir, "snap")
	if got, err := srv.ctl("snapshot", snap); err != nil {
		t.Fatalf("ctl snapshot: %v\n%s", err, got)
	}
	srv.stop("waited\n", 0)
	for _, c := range []struct {
		dir  string
		naps int
	}{{snap, 3}, {out, 6}} {
		replay, _ := run(t, dir, tool("ftpatch"), "replay", "--no-pager", c.dir)
		if n, ms, each := inCall(replayOffCPU(t, replay), "nap3", "sleeping"); n != c.naps || ms < 9.9*float64(c.naps) {
			t.Errorf("%s: %d sleeping lines in nap3, %.3f ms (%v); want %d naps of 10 ms\n%s", c.dir, n, ms, each, c.naps, replay)
		}
	}
}
