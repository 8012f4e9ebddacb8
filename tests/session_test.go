package tests

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/viewcheck"
)

// sessionScript runs the traced program P (progs/sess.c) every way a
// process tree starts programs: one after another, in a pipeline, in
// parallel, through make -j2, through an untraced shell, by
// posix_spawn, by a double exec, and forking a child that does not
// exec. The shell itself and make are not traced.
const sessionScript = `set -e
P=$1
$P seq1
$P seq2
$P pipe1 | $P pipe2
$P par1 & $P par2 & wait
printf 'all: a b\na:\n\t%s mk1\nb:\n\t%s mk2\n' "$P" "$P" > mk
make -s -j2 -f mk
sh -c "$P sub"
$P spawn
$P exec2
$P fork
`

// A logged is one process image as progs/sess.c logged it.
type logged struct {
	pid, ppid int
	tag       string
}

// TestSession: everything one `ftpatch record -- sh script` starts
// records into one directory (sessionScript: sequential, pipeline,
// parallel, make -j2, an untraced shell between, posix_spawn, a double
// exec, a fork), under both tracers, nothing beside it; info --tasks
// prints the exact tree of the images the processes logged (each under
// the traced process that started it, an exec under the image it
// replaced, a forked child, with its own exit status, under its
// parent); report's calls are the sum over every process; --pid and
// --comm choose exactly one process. On x86-64, and on arm64 under
// qemu-user (the program a script that runs it under qemu, so its execs
// of itself by argv[0] run too).
func TestSession(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC} {
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, append(tg.tools, "make", "sh")...)
			dir := t.TempDir()
			prog := traced(t, tg, dir, "-O2 "+preferred[tg.arch], true, "sess.c")
			if len(tg.exec) > 0 {
				// Under qemu-user: the program as a script the host runs,
				// which runs it under qemu (so its own execs of itself,
				// by argv[0], run too).
				tg.onSelf(t, prog)
				prog += ".run"
			}
			if err := os.WriteFile(filepath.Join(dir, "script.sh"), []byte(sessionScript), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, tracer := range []string{"function", "function_graph"} {
				t.Run(tracer, func(t *testing.T) {
					sessionCase(t, dir, prog, tracer)
				})
			}
		})
	}
}

func sessionCase(t *testing.T, dir, prog, tracer string) {
	out := filepath.Join(dir, "s-"+tracer)
	log := filepath.Join(dir, "log-"+tracer)
	_, stderr, code, err := runStatusEnv(dir, []string{"SESS_LOG=" + log}, tool("ftpatch"), "record", "--no-libcall", "--tracer", tracer, "-d", out, "--", "sh", "script.sh", prog)
	if err != nil || code != 0 {
		t.Fatalf("record: exit %d, %v\n%s", code, err, stderr)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var procs []logged
	pids := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l logged
		if _, err := fmt.Sscan(line, &l.pid, &l.ppid, &l.tag); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		procs = append(procs, l)
		pids[l.pid] = true
	}
	if len(procs) != 16 {
		t.Fatalf("the script ran %d traced images, want 16 (15 programs and a forked child):\n%s", len(procs), b)
	}
	if beside, _ := filepath.Glob(out + ".*"); len(beside) != 0 {
		t.Errorf("beside the session: %v; want nothing", beside)
	}
	if im := images(t, out); len(im) != len(procs) {
		t.Errorf("the session holds %d images, the processes logged %d", len(im), len(procs))
	}

	// info --tasks: each image once, under the right parent.
	tasks, errOut := run(t, dir, tool("ftpatch"), "info", "--tasks", "--no-pager", out)
	if errOut != "" {
		t.Errorf("info --tasks: stderr %q", errOut)
	}
	type node struct {
		pid, depth      int
		name, how, ends string
	}
	var lines []node
	line := regexp.MustCompile(`^( *)(\d+) (\S+)(?: \((exec'd|forked)\))?  (\S+(?: \d+)?)  `)
	for _, l := range strings.Split(strings.TrimSpace(tasks), "\n")[1:] {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("info --tasks line %q", l)
		}
		pid, _ := strconv.Atoi(m[2])
		lines = append(lines, node{pid, len(m[1]) / 2, m[3], m[4], m[5]})
	}
	parentOf := func(i int) *node {
		for j := i - 1; j >= 0; j-- {
			if lines[j].depth == lines[i].depth-1 {
				return &lines[j]
			}
			if lines[j].depth < lines[i].depth-1 {
				break
			}
		}
		return nil
	}
	seen := map[string]bool{}
	forked := 0
	for i, n := range lines {
		p := parentOf(i)
		if n.how == "forked" {
			forked++
			if p == nil || p.name != "fork" || n.name != "forked" || n.ends != "exit 9" {
				t.Errorf("info --tasks: forked %d %s (ended %s) under %v, want forked under the fork process, ended exit 9", n.pid, n.name, n.ends, p)
			}
		}
		k := slices.IndexFunc(procs, func(l logged) bool { return l.pid == n.pid && l.tag == n.name })
		if k < 0 {
			t.Errorf("info --tasks: %d %s, which no process logged", n.pid, n.name)
			continue
		}
		l := procs[k]
		seen[fmt.Sprint(l)] = true
		switch {
		case n.how == "exec'd":
			if p == nil || p.pid != l.pid {
				t.Errorf("info --tasks: %s (exec'd) under %v, want under its pid's image before", l.tag, p)
			}
		case pids[l.ppid] && l.ppid != l.pid:
			if p == nil || p.pid != l.ppid {
				t.Errorf("info --tasks: %s under %v, want under %d, its traced parent", l.tag, p, l.ppid)
			}
		default:
			if p != nil {
				t.Errorf("info --tasks: %s under %v, want at the top (its parent, %d, is not traced)", l.tag, p, l.ppid)
			}
		}
	}
	if len(seen) != len(procs) || forked != 1 {
		t.Errorf("info --tasks shows %d of the %d images logged and %d forked children, want 1:\n%s", len(seen), len(procs), forked, tasks)
	}

	// report: the calls of every process, summed; one chosen.
	counts, errOut := reportCounts(t, out)
	n := len(procs) - 1 // main's: not the forked child's
	if want := map[string]int{"main": n, "logself": n + 1, "work": n + 1, "leaf": 3 * (n + 1)}; !maps.Equal(counts, want) || errOut != "" {
		t.Errorf("report of the session: %v, stderr %q; want %v", counts, errOut, want)
	}
	seq2 := procs[slices.IndexFunc(procs, func(l logged) bool { return l.tag == "seq2" })]
	one := map[string]int{"main": 1, "logself": 1, "work": 1, "leaf": 3}
	for _, sel := range [][]string{{"--pid", strconv.Itoa(seq2.pid)}, {"--comm", "seq?"}} {
		got, errOut := reportCounts(t, out, sel...)
		want := one
		if sel[0] == "--comm" {
			want = map[string]int{"main": 2, "logself": 2, "work": 2, "leaf": 6} // seq1 and seq2
		}
		if !maps.Equal(got, want) || errOut != "" {
			t.Errorf("report %v: %v, stderr %q; want %v", sel, got, errOut, want)
		}
	}
	forkedChild := procs[slices.IndexFunc(procs, func(l logged) bool { return l.tag == "forked" })]
	if got, _ := reportCounts(t, out, "--pid", strconv.Itoa(forkedChild.pid)); !maps.Equal(got, map[string]int{"logself": 1, "work": 1, "leaf": 3}) {
		t.Errorf("report --pid %d (the forked child): %v, want its own calls alone", forkedChild.pid, got)
	}
	if got, _ := reportCounts(t, out, "--comm", "exec0"); !maps.Equal(got, one) {
		t.Errorf("report --comm exec0: %v, want %v", got, one)
	}

	// The Perfetto timeline: a process per pid, with its logged parent,
	// and every call of the session on it.
	pf, errOut := run(t, dir, tool("ftpatch"), "dump", "--perfetto", out)
	ps, err := viewcheck.PerfettoProcesses([]byte(pf))
	if err != nil || errOut != "" {
		t.Fatalf("dump --perfetto: %v, stderr %q", err, errOut)
	}
	for _, l := range procs {
		if p := ps[l.pid]; p == nil || p.Ppid != l.ppid || p.Name != "prog" {
			t.Errorf("dump --perfetto: process %d (%s) is %+v; want one named prog, parent %d", l.pid, l.tag, p, l.ppid)
		}
	}
	calls, err := viewcheck.Perfetto([]byte(pf))
	sum := 0
	for _, n := range counts {
		sum += n
	}
	if err != nil || len(calls) != sum {
		t.Errorf("dump --perfetto: %d calls (%v), want the session's %d", len(calls), err, sum)
	}
}

// sessionWait is what the tests of a session held open need: a
// directory, progs/sess.c traced in it (x86-64, gcc), the session's
// path (dir/s, not made), and a FIFO (dir/go) a script waits on.
func sessionWait(t *testing.T) (dir, prog, out, fifo string) {
	t.Helper()
	need(t, x86GCC.tools...)
	dir = t.TempDir()
	prog = traced(t, x86GCC, dir, "-O2 "+preferred["x86_64"], true, "sess.c")
	out, fifo = filepath.Join(dir, "s"), filepath.Join(dir, "go")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Fatal(err)
	}
	return dir, prog, out, fifo
}

// TestSessionGap: between two programs of a session that ftpatch record
// started (an untraced shell runs one, sleeps, runs the next: no traced
// process holds the directory then), another program with the same
// FTRACE_OUT, not of the session, neither moves the session aside nor
// joins it: it records beside it, in DIR.PID; the session keeps both of
// its programs.
func TestSessionGap(t *testing.T) {
	t.Parallel()
	dir, prog, out, fifo := sessionWait(t)
	rec := exec.Command(tool("ftpatch"), "record", "-d", out, "--", "sh", "-c", `"$1" first; read x < "$2"; "$1" second`, "sh", prog, fifo)
	rec.Dir = dir
	var recErr strings.Builder
	rec.Stderr = &recErr
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	// The first program has ended once its image's metadata says so:
	// no traced process holds the session then.
	for i := 0; i < 1000; i++ {
		metas, _ := filepath.Glob(filepath.Join(out, "*@*", "meta"))
		if len(metas) == 1 {
			if b, _ := os.ReadFile(metas[0]); strings.Contains(string(b), "\nended 1\n") {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_OUT=" + out}, prog, "other"); err != nil || code != 0 {
		t.Fatalf("the other program: exit %d, %v\n%s", code, err, errOut)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, recErr.String())
	}
	if old, _ := filepath.Glob(out + ".old*"); len(old) != 0 {
		t.Errorf("the session was moved aside: %v", old)
	}
	if im := images(t, out); len(im) != 2 {
		t.Errorf("the session holds %v; want its two programs' images", im)
	}
	beside, _ := filepath.Glob(out + ".[0-9]*")
	if len(beside) != 1 || len(images(t, beside[0])) != 1 {
		t.Errorf("beside the session: %v; want the other program's session, DIR.PID", beside)
	}
}

// TestSessionBeside: a session recorded while another running session
// holds its directory goes beside it whole: `ftpatch record -d DIR --
// sh -c 'P a; P b'` puts both programs into one session, DIR.PID (PID
// record's, the session's root), and says so; the running session is
// left as it was.
func TestSessionBeside(t *testing.T) {
	t.Parallel()
	dir, prog, out, fifo := sessionWait(t)
	held := exec.Command(tool("ftpatch"), "record", "-d", out, "--", "sh", "-c", `"$1" first; read x < "$2"`, "sh", prog, fifo)
	held.Dir = dir
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.WriteFile(fifo, []byte("go\n"), 0o644)
		held.Wait()
	}()
	for i := 0; i < 1000; i++ { // until the first program has its image
		if metas, _ := filepath.Glob(filepath.Join(out, "*@*", "meta")); len(metas) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec := exec.Command(tool("ftpatch"), "record", "-d", out, "--", "sh", "-c", `"$1" a; "$1" b`, "sh", prog)
	rec.Dir = dir
	var recErr strings.Builder
	rec.Stderr = &recErr
	if err := rec.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, recErr.String())
	}
	want := fmt.Sprintf("%s.%d", out, rec.Process.Pid)
	beside, _ := filepath.Glob(out + ".[0-9]*")
	if len(beside) != 1 || beside[0] != want || len(images(t, want)) != 2 {
		t.Errorf("beside the running session: %v; want one session, %s, with both programs' images", beside, want)
	}
	if !strings.Contains(recErr.String(), "the trace is in "+want+":") {
		t.Errorf("record's message does not name %s:\n%s", want, recErr.String())
	}
	if im := images(t, out); len(im) != 1 {
		t.Errorf("the running session holds %v; want its one program's image", im)
	}
}
