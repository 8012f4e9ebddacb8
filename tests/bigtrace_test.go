package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readerLimit is the data-segment limit (RLIMIT_DATA: every private
// writable mapping, the Go runtime's heap and its threads' stacks, 1 MB
// each here, with it) under which replay and report must read a trace
// several times its size: the reader streams, it does not hold the
// trace.
const readerLimit = 128 << 20

// TestReaderMemory: replay and report of a trace of 4 times the memory
// they are allowed, or more (a program of four threads making 36
// million calls, under each tracer), read it whole: the report's counts
// are the calls the program made, the replay has a line per call, and
// each command's peak resident memory stays within the limit.
func TestReaderMemory(t *testing.T) {
	t.Parallel()
	need(t, "gcc", "prlimit")
	for _, tracer := range []string{"function_graph", "function"} {
		t.Run(tracer, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			prog := traced(t, x86GCC, dir, "-O2 -fno-optimize-sibling-calls -pg -mfentry", true, "bigtrace.c") // fib recursing, not looping
			const rounds = 7800                                                                                // 4 threads * 1164 calls * rounds: 36 M calls
			trace := filepath.Join(dir, "t")
			out, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_OUT=" + trace}, prog, fmt.Sprint(rounds))
			if err != nil || code != 0 {
				t.Fatalf("exit %d, %v\n%s", code, err, stderr)
			}
			size := dirSize(t, trace)
			if size < 4*readerLimit {
				t.Fatalf("the trace is %d MB, want at least %d MB: more calls", size>>20, 4*readerLimit>>20)
			}
			want := map[string]string{}
			for _, line := range strings.Split(out, "\n")[1:] {
				if f := strings.Fields(line); len(f) == 2 {
					want[f[0]] = f[1]
				}
			}

			report, rss := limited(t, dir, nil, tool("ftpatch"), "report", trace)
			for fn, calls := range want {
				found := false
				for _, line := range strings.Split(report, "\n") {
					f := strings.Fields(line)
					if len(f) >= 2 && f[len(f)-1] == fn && f[len(f)-2] == calls {
						found = true
					}
				}
				if !found {
					t.Errorf("report: no line of %s calls of %s:\n%s", calls, fn, report)
				}
			}
			t.Logf("trace %d MB; report's peak RSS %d MB", size>>20, rss>>20)

			replayOut, err := os.Create(filepath.Join(dir, "replay"))
			if err != nil {
				t.Fatal(err)
			}
			defer replayOut.Close()
			_, rss = limited(t, dir, replayOut, tool("ftpatch"), "replay", trace)
			lines := countLines(t, replayOut.Name())
			calls := 0
			for _, c := range want {
				var n int
				fmt.Sscan(c, &n)
				calls += n
			}
			// A line per call (a leaf), two per inner call, with the
			// threads' own (work's callers) and a head and a summary.
			if lines < calls {
				t.Errorf("replay: %d lines, want at least one per call (%d)", lines, calls)
			}
			t.Logf("replay's peak RSS %d MB", rss>>20)
		})
	}
}

// limited runs argv in dir under readerLimit, its output to out (nil:
// returned), failing the test unless it succeeds within the limit; it
// returns the output and the peak resident memory, which progs/maxrss.c
// measures (the rusage of a child Go starts counts the test process's
// own peak).
func limited(t *testing.T, dir string, out *os.File, argv ...string) (string, int64) {
	t.Helper()
	maxrss := once(t, "maxrss", func(dir string) string {
		bin := filepath.Join(dir, "maxrss")
		run(t, dir, "gcc", "-O2", progPath(t, "maxrss.c"), "-o", bin)
		return bin
	})
	rssFile := filepath.Join(t.TempDir(), "maxrss")
	cmd := exec.Command(maxrss, append([]string{rssFile, "prlimit", fmt.Sprintf("--data=%d", readerLimit), "--stack=1048576"}, argv...)...)
	cmd.Dir = dir
	var stdout strings.Builder
	var stderr strings.Builder
	if out != nil {
		cmd.Stdout = out
	} else {
		cmd.Stdout = &stdout
	}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s, under a %d MB data limit: %v\n%s", strings.Join(argv, " "), readerLimit>>20, err, stderr.String())
	}
	kb, err := os.ReadFile(rssFile)
	if err != nil {
		t.Fatal(err)
	}
	rss, err := strconv.ParseInt(strings.TrimSpace(string(kb)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", rssFile, err)
	}
	rss <<= 10
	if rss > readerLimit {
		t.Errorf("%s: peak RSS %d MB, over the %d MB limit", strings.Join(argv, " "), rss>>20, readerLimit>>20)
	}
	return stdout.String(), rss
}

// dirSize is the size of the files in dir and the directories in it (a
// session's images).
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if e.IsDir() {
			n += dirSize(t, filepath.Join(dir, e.Name()))
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// countLines counts the lines of a file, reading it a piece at a time.
func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	n := 0
	for {
		k, err := f.Read(buf)
		n += strings.Count(string(buf[:k]), "\n")
		if err != nil {
			return n
		}
	}
}
