package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"ftpatch/internal/viewcheck"
	"ftpatch/runtime/abi"
)

// demoSession makes a session's directory of the demo's trace src run
// by three processes: 100, which started 101 and 102 (the same run of
// calc each: a session of three identical processes).
func demoSession(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, abi.SessionFile), []byte(abi.SessionMagic+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, pid := range []int{100, 101, 102} {
		to := filepath.Join(dir, fmt.Sprintf("%d@%d", pid, i))
		if err := os.CopyFS(to, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		meta := filepath.Join(to, abi.MetaFile)
		b, err := os.ReadFile(meta)
		if err != nil {
			t.Fatal(err)
		}
		ppid := 100
		if pid == 100 {
			ppid = 1
		}
		b = regexp.MustCompile(`(?m)^pid \d+$`).ReplaceAll(b, fmt.Appendf(nil, "pid %d\nppid %d\nimage 1", pid, ppid))
		// Each started 1 ns after the one before (its clock pair moved
		// whole: the same rate).
		b = regexp.MustCompile(`(?m)^mono_(start|end)_ns (\d+)$`).ReplaceAllFunc(b, func(m []byte) []byte {
			f := strings.Fields(string(m))
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return fmt.Appendf(nil, "%s %d", f[0], n+uint64(i))
		})
		if err := os.WriteFile(meta, b, 0o644); err != nil {
			t.Fatal(err)
		}
		// Each stream the process's own: its name's and header's pid.
		streams, _ := filepath.Glob(filepath.Join(to, "*"+abi.StreamSuffix))
		for _, st := range streams {
			_, tid, _ := strings.Cut(filepath.Base(st), "-")
			renamed := filepath.Join(to, fmt.Sprintf("%d-%s", pid, tid))
			if err := os.Rename(st, renamed); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(renamed, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteAt(binary.LittleEndian.AppendUint32(nil, uint32(pid)), 8) // the header's pid
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// run runs ftpatch with args and returns its output, failing on an error.
func runOut(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	errOut, err := traceCmd(&out, args...)
	if err != nil {
		t.Fatalf("ftpatch %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out.String()
}

// calls are report's rows: calls by function.
func calls(t *testing.T, report string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, line := range strings.Split(report, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(line, "#") {
			continue
		}
		k := 0 // the function tracer's: CALLS FUNCTION
		if len(f) > 2 {
			k = len(f) - 2 // function_graph's: TOTAL (2 fields) SELF (2) CALLS FUNCTION
		}
		n, err := strconv.Atoi(f[k])
		if err != nil {
			continue // the heading
		}
		out[f[len(f)-1]] += n
	}
	return out
}

// TestSessionViews: a session of three processes reads as a whole:
// report sums each function's calls over them (three times one
// process's), --pid and --comm choose one (its report is the single
// trace's), replay heads each process's part, info --tasks prints the
// tree, two directories given read as one session, report --diff sums
// each side, and the timelines keep each process's threads under its
// pid, each in its place. Both tracers.
func TestSessionViews(t *testing.T) {
	for _, src := range []string{demoGraph, demoCalls} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			dir := demoSession(t, src)
			one := calls(t, runOut(t, "report", "--no-pager", "--exe", demoExe, src))
			all := calls(t, runOut(t, "report", "--no-pager", "--exe", demoExe, dir))
			if len(one) == 0 || len(all) != len(one) {
				t.Fatalf("report of the session has %d functions, one process's %d", len(all), len(one))
			}
			for fn, n := range one {
				if all[fn] != 3*n {
					t.Errorf("%s: %d calls in the session, want 3 x %d", fn, all[fn], n)
				}
			}
			for _, sel := range [][]string{{"--pid", "101"}, {"--comm", "c?lc", "--pid", "102"}} {
				got := calls(t, runOut(t, append(append([]string{"report", "--no-pager", "--exe", demoExe}, sel...), dir)...))
				if fmt.Sprint(got) != fmt.Sprint(one) {
					t.Errorf("report %v: %v, want one process's %v", sel, got, one)
				}
			}
			if _, err := traceCmd(&bytes.Buffer{}, "report", "--no-pager", "--pid", "7", dir); err == nil || !strings.Contains(err.Error(), "100 (calc), 101 (calc), 102 (calc)") {
				t.Errorf("--pid of no process: %v, want an error naming the session's", err)
			}
			two := calls(t, runOut(t, "report", "--no-pager", "--exe", demoExe, src, src))
			for fn, n := range one {
				if two[fn] != 2*n {
					t.Errorf("report of two directories: %s %d calls, want 2 x %d", fn, two[fn], n)
				}
			}
			// report --diff of sessions: each side summed over its
			// processes; the session against one process is 3 times it.
			diff := runOut(t, "report", "--no-pager", "--exe", demoExe, dir, "--diff", src)
			for fn, n := range one {
				row := regexp.MustCompile(fmt.Sprintf(`(?m)\s%d\s+%d\s+\+%d  %s$`, n, 3*n, 2*n, regexp.QuoteMeta(fn)))
				if !row.MatchString(diff) {
					t.Errorf("report SESSION --diff ONE: no row %s %d -> %d:\n%s", fn, n, 3*n, diff)
				}
			}
			replay := runOut(t, "replay", "--no-pager", "--exe", demoExe, dir)
			if h := regexp.MustCompile(`(?m)^# process (\d+) \(calc\): \S*build/demo/calc 2 \* \(3 \+ 4\)$`).FindAllStringSubmatch(replay, -1); len(h) != 3 || h[0][1] != "100" || h[1][1] != "101" || h[2][1] != "102" {
				t.Errorf("replay's headings: %q", h)
			}
			tasks := runOut(t, "info", "--no-pager", "--tasks", dir)
			want := regexp.MustCompile(`^# PID NAME.*\n100 calc  (ended|exit 0)  \[\d+(,\d+)*\]  \S*build/demo/calc 2 \* \(3 \+ 4\)\n  101 calc  .*\n  102 calc  .*\n$`)
			if !want.MatchString(tasks) {
				t.Errorf("info --tasks:\n%s", tasks)
			}
			chrome := runOut(t, "dump", "--chrome", "--exe", demoExe, dir)
			cc, err := viewcheck.Chrome([]byte(chrome))
			if err != nil {
				t.Errorf("dump --chrome of the session does not read back: %v", err)
			}
			// Each process in its place on one timeline: the same run,
			// started 1 ns after the one before.
			first := map[int]int64{}
			for _, c := range cc {
				if v, ok := first[c.Pid]; !ok || c.Start < v {
					first[c.Pid] = c.Start
				}
			}
			if first[101]-first[100] != 1 || first[102]-first[101] != 1 {
				t.Errorf("dump --chrome: the processes' first calls at %v, want 1 ns apart", first)
			}
			for _, pid := range []string{"100", "101", "102"} {
				if !strings.Contains(chrome, `"pid":`+pid) {
					t.Errorf("dump --chrome of the session has no event of process %s", pid)
				}
			}
		})
	}
}
