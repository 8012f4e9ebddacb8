// Command session-bench measures a session of many processes (`make
// bench`): a shell starting a small traced program N times (1,000 by
// default), one after another, each making a few calls, recorded as one
// session by `ftpatch record --tracer function_graph -- sh loop N`,
// against the same loop of the program built without the runtime and of
// the traced build run untraced (sites NOPs). The record cost per
// process is the recorded loop's time less the untraced build's, over
// N, against each process traced alone into a directory of its own
// (what a process's trace cost before sessions); target: at most 1 ms
// more a process. Then each reading command over the
// session (info, info --tasks, report, report --tasks, replay, graph,
// dump --chrome), its wall time and peak RSS: bounded by functions,
// threads, processes and depth, not by calls.
//
// With -package PKG (not in make bench: it builds a Debian source
// package twice), a real test suite instead: PKG's source (apt-get
// source) configured and built plainly and with `ftpatch cc gcc`, its
// `make check` run untraced and recorded as one session
// (`ftpatch record -- make check`), each -runs times: the wall-time
// ratio, the tests' results, the session's processes and size, and
// report's time and peak RSS over it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"ftpatch/internal/machine"
	"ftpatch/internal/measure"
)

const program = `#include <stdio.h>
static volatile int sink;
__attribute__((noinline)) int leaf(int x) { sink = x; return sink + 1; }
__attribute__((noinline)) int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += leaf(i); return s; }
int main(void) { return work(8) == 36 ? 0 : 1; }
`

const loop = `i=0
while [ $i -lt $2 ]; do "$1" || exit 1; i=$((i+1)); done
`

// apart is loop with each process traced into a directory of its own,
// by itself: what a process's trace cost before sessions.
const apart = `i=0
mkdir -p apart
while [ $i -lt $2 ]; do FTRACE=function_graph FTRACE_OUT=apart/$i "$1" || exit 1; i=$((i+1)); done
`

func main() {
	bin := flag.String("bin", "bin", "directory holding recordmcount and ftpatch")
	n := flag.Int("n", 1000, "processes in the session")
	runs := flag.Int("runs", 5, "timed runs per case")
	pkg := flag.String("package", "", "a Debian source package whose `make check` to record as a session instead (e.g. gzip)")
	flag.Parse()
	var err error
	if *pkg != "" {
		err = runPackage(*bin, *pkg, *runs)
	} else {
		err = run(*bin, *n, *runs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "session-bench:", err)
		os.Exit(1)
	}
}

func run(bin string, n, runs int) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	ftpatch := filepath.Join(bin, "ftpatch")
	work, err := os.MkdirTemp("", "session-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for name, text := range map[string]string{"p.c": program, "loop.sh": loop, "apart.sh": apart} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	libs, err := exec.Command(ftpatch, "flags", "--libs").Output()
	if err != nil {
		return fmt.Errorf("ftpatch flags --libs: %w", err)
	}
	if err := measure.Steps(work,
		[]string{"gcc", "-O2", "p.c", "-o", "plain"},
		[]string{"gcc", "-O2", "-pg", "-mfentry", "-c", "p.c", "-o", "p.o"},
		[]string{filepath.Join(bin, "recordmcount"), "p.o"},
		[]string{"sh", "-c", "gcc p.o -o traced " + string(libs)},
	); err != nil {
		return err
	}
	fmt.Printf("machine: %s; load average at start %s\n", machine.Name(), machine.LoadAvg())
	fmt.Printf("a session of %d processes, each making %d calls; median of %d runs each, cases interleaved\n\n", n, 9, runs)
	cases := []struct {
		name string
		argv []string
	}{
		{"untraced build", []string{"sh", "loop.sh", "./plain", strconv.Itoa(n)}},
		{"traced build, not traced", []string{"sh", "loop.sh", "./traced", strconv.Itoa(n)}},
		{"each traced alone, own directory", []string{"sh", "apart.sh", "./traced", strconv.Itoa(n)}},
		{"ftpatch record (one session)", []string{ftpatch, "record", "--tracer", "function_graph", "-d", "s", "--", "sh", "loop.sh", "./traced", strconv.Itoa(n)}},
	}
	times := make([][]time.Duration, len(cases))
	for r := 0; r < runs; r++ {
		for i, c := range cases {
			os.RemoveAll(filepath.Join(work, "s"))
			os.RemoveAll(filepath.Join(work, "s.old"))
			os.RemoveAll(filepath.Join(work, "apart"))
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			cmd.Dir = work
			d, err := measure.Run(cmd)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			times[i] = append(times[i], d)
		}
	}
	fmt.Printf("%-32s %10s %14s\n", "case", "median", "per process")
	for i, c := range cases {
		m := measure.Median(times[i])
		fmt.Printf("%-32s %10s %14s\n", c.name, m.Round(time.Microsecond), (m / time.Duration(n)).Round(time.Microsecond))
	}
	per := func(i int) time.Duration {
		return (measure.Median(times[i]) - measure.Median(times[0])) / time.Duration(n)
	}
	verdict := "met"
	if per(3) > per(2)+time.Millisecond {
		verdict = "MISSED"
	}
	fmt.Printf("\nrecord cost per process over the untraced build: %s in one session; %s each traced alone into a directory of its own\n",
		per(3).Round(time.Microsecond), per(2).Round(time.Microsecond))
	fmt.Printf("target: a session's process costs at most 1 ms more than one traced alone: %s: %s\n", (per(3) - per(2)).Round(time.Microsecond), verdict)
	fmt.Printf("the session: %d bytes in %s\n\n", measure.DirSize(filepath.Join(work, "s")), filepath.Join(work, "s"))

	fmt.Printf("%-32s %10s %12s\n", "reading the session", "median", "peak RSS")
	for _, args := range [][]string{
		{"info"}, {"info", "--tasks"}, {"report"}, {"report", "--tasks"}, {"replay"}, {"graph"}, {"dump", "--chrome"},
	} {
		var ds []time.Duration
		var rss int64
		for r := 0; r < runs; r++ {
			cmd := exec.Command(ftpatch, append(append(append([]string{}, args...), "--no-pager"), "s")...)
			if args[0] == "dump" {
				cmd.Args = append(append([]string{ftpatch}, args...), "s")
			}
			cmd.Dir = work
			d, err := measure.Run(cmd)
			if err != nil {
				return fmt.Errorf("ftpatch %v: %w", args, err)
			}
			ds = append(ds, d)
			rss = max(rss, measure.MaxRSS(cmd.ProcessState))
		}
		fmt.Printf("%-32s %10s %9d KB\n", fmt.Sprint(args), measure.Median(ds).Round(time.Microsecond), rss)
	}
	fmt.Printf("(a child's peak RSS is at least this process's own, %d KB)\n", measure.SelfHWM())
	return nil
}

// runPackage measures PKG's make check, untraced and as one session.
func runPackage(bin, pkg string, runs int) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	ftpatch := filepath.Join(bin, "ftpatch")
	work, err := os.MkdirTemp("", "session-bench-"+pkg+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := measure.Sh(work, "apt-get", "source", "--download-only", "-qq", pkg); err != nil {
		return fmt.Errorf("%w (run make deps, which adds Debian's deb-src entry)", err)
	}
	origs, _ := filepath.Glob(filepath.Join(work, pkg+"_*.orig.tar.*"))
	origs = slices.DeleteFunc(origs, func(p string) bool { return strings.HasSuffix(p, ".asc") }) // signatures
	if len(origs) != 1 {
		return fmt.Errorf("%s: %d orig tarballs", pkg, len(origs))
	}
	trees := map[string]string{}
	for _, kind := range []string{"plain", "traced"} {
		dir := filepath.Join(work, kind)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		if err := measure.Sh(dir, "tar", "-xf", origs[0]); err != nil {
			return err
		}
		tops, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(tops) != 1 {
			return fmt.Errorf("%s: %d top directories", origs[0], len(tops))
		}
		cc := "gcc"
		if kind == "traced" {
			cc = ftpatch + " cc gcc"
		}
		if err := measure.Sh(tops[0], "sh", "-c", "CC='"+cc+"' ./configure -q && make -s -j2"); err != nil {
			return err
		}
		trees[kind] = tops[0]
	}
	fmt.Printf("machine: %s; load average at start %s\n", machine.Name(), machine.LoadAvg())
	fmt.Printf("%s's make check, median of %d runs each, interleaved\n\n", pkg, runs)
	var plain, traced []time.Duration
	var plainLog, tracedLog []byte
	sess := filepath.Join(work, "session")
	for r := 0; r < runs; r++ {
		cmd := exec.Command("make", "-s", "check")
		cmd.Dir = trees["plain"]
		out, d, err := timed(cmd)
		if err != nil {
			return fmt.Errorf("untraced make check: %w\n%s", err, out)
		}
		plain, plainLog = append(plain, d), out
		os.RemoveAll(sess)
		os.RemoveAll(sess + ".old")
		cmd = exec.Command(ftpatch, "record", "--tracer", "function_graph", "-d", sess, "--", "make", "-s", "check")
		cmd.Dir = trees["traced"]
		out, d, err = timed(cmd)
		if err != nil {
			return fmt.Errorf("recorded make check: %w\n%s", err, out)
		}
		traced, tracedLog = append(traced, d), out
	}
	summary := func(log []byte) string {
		var lines []string
		for _, l := range strings.Split(string(log), "\n") {
			if strings.HasPrefix(l, "# TOTAL") || strings.HasPrefix(l, "# PASS") || strings.HasPrefix(l, "# FAIL") {
				lines = append(lines, strings.Join(strings.Fields(l), " "))
			}
		}
		return strings.Join(lines, ", ")
	}
	p, t := measure.Median(plain), measure.Median(traced)
	fmt.Printf("untraced make check     %10s   %s\n", p.Round(time.Millisecond), summary(plainLog))
	fmt.Printf("recorded, one session   %10s   %s\n", t.Round(time.Millisecond), summary(tracedLog))
	fmt.Printf("wall-time ratio %.3f\n", float64(t)/float64(p))
	images, _ := filepath.Glob(filepath.Join(sess, "*@*"))
	fmt.Printf("the session: %d process images, %d bytes\n", len(images), measure.DirSize(sess))
	cmd := exec.Command(ftpatch, "report", "--no-pager", sess)
	d, err := measure.Run(cmd)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Printf("report over the session: %s, peak RSS %d KB\n", d.Round(time.Millisecond), measure.MaxRSS(cmd.ProcessState))
	return nil
}

// timed runs cmd and returns its output (stdout and stderr) and wall time.
func timed(cmd *exec.Cmd) ([]byte, time.Duration, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	d, err := measure.Run(cmd)
	return out.Bytes(), d, err
}
