package tests

import (
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ftpatch/trace"
)

// TestRecordPid: ftpatch record -p on a running process started without
// any FTRACE variable, linked with the runtime and given it at the
// attach (a -pg program linked without it, run plainly): 1 s of tracing
// (--duration), --filter alpha; the trace holds alpha's calls alone,
// made in that second; the process is no one's tracee afterwards, runs
// on, and ends with the untraced program's output and status; a second
// record -p, after the first, records it again into a trace of its own.
func TestRecordPid(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"linked", "injected"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir, prog, _, wantOut, wantCode := attachProg(t, mode)
			r := startPlain(t, dir, prog)
			pid := r.cmd.Process.Pid
			time.Sleep(200 * time.Millisecond)
			out := filepath.Join(dir, "trace")
			fdsBefore := fdLinks(t, pid)
			t0 := time.Now()
			_, errOut := run(t, dir, tool("ftpatch"), "record", "-p", strconv.Itoa(pid), "--filter", "alpha", "--duration", "1s", "-d", out)
			took := time.Since(t0)
			if !strings.Contains(errOut, "the trace is in "+out) {
				t.Errorf("record -p said:\n%s", errOut)
			}
			// Not more than a bound: it may build the runtime to load first.
			if took < time.Second {
				t.Errorf("record -p --duration 1s took %v", took)
			}
			if tp := tracerPid(t, strconv.Itoa(pid)); tp != "0" {
				t.Errorf("traced by %s after record -p", tp)
			}
			// Its descriptors as before: the trace's closed; only the
			// control server's socket added (as FTRACE_CTL=1's).
			for fd, link := range fdLinks(t, pid) {
				if was, ok := fdsBefore[fd]; ok && was == link {
					continue
				}
				if !strings.HasPrefix(link, "socket:[") {
					t.Errorf("descriptor %s -> %s after record -p; before: %q", fd, link, fdsBefore[fd])
				}
			}
			// Another record -p, once the first has ended, records the
			// process again into a trace of its own: gamma_ alone.
			again := filepath.Join(dir, "again")
			if o, err := exec.Command(tool("ftpatch"), "record", "-p", strconv.Itoa(pid), "--filter", "gamma_", "--duration", "300ms", "-d", again).CombinedOutput(); err != nil {
				t.Errorf("a second record -p: %v\n%s", err, o)
			} else {
				tr2, syms2 := readTrace(t, again)
				if calls, _ := tracedCalls(t, tr2, syms2, "function_graph"); calls["gamma_"] == 0 || len(calls) != 1 {
					t.Errorf("the second trace holds %v; want gamma_ alone", calls)
				}
			}
			tr, syms := readTrace(t, out)
			calls, _ := tracedCalls(t, tr, syms, "function_graph")
			if calls["alpha"] == 0 || len(calls) != 1 {
				t.Errorf("traced %v; want alpha alone", calls)
			}
			// The calls were made while it recorded: a second or a
			// little more, not the process's whole life.
			if d := time.Duration(tr.Meta.MonoEnd - tr.Meta.MonoStart); d < 900*time.Millisecond || d > took+time.Second {
				t.Errorf("the trace spans %v; record -p ran %v", d, took)
			}
			if tr.Meta.Detached != 1 {
				t.Errorf("metadata: detached %d; want 1", tr.Meta.Detached)
			}
			// What record -p enabled (alpha's site), though its end
			// disabled it.
			if tr.Meta.Enabled != 1 {
				t.Errorf("metadata: %d sites traced; want 1, alpha's", tr.Meta.Enabled)
			}
			info, _ := run(t, dir, tool("ftpatch"), "info", out)
			if !strings.Contains(info, "ended:              by ftpatch record -p") || !strings.Contains(info, "the process ran on after its trace ended") ||
				!strings.Contains(info, "sites chosen while the process ran, by ftpatch record -p") {
				t.Errorf("ftpatch info does not say record -p ended the trace:\n%s", info)
			}
			r.end(t, wantOut, wantCode)
			// The process's own end, later, left the ended trace alone.
			after, _ := readTrace(t, out)
			if after.Meta.Detached != 1 || after.Meta.MonoEnd != tr.Meta.MonoEnd {
				t.Errorf("after the process's exit: detached %d, end %d; want 1, %d (the trace as record -p ended it)", after.Meta.Detached, after.Meta.MonoEnd, tr.Meta.MonoEnd)
			}
		})
	}
}

// fdLinks is what each of process pid's descriptors is open on.
func fdLinks(t *testing.T, pid int) map[string]string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for _, e := range ents {
		links[e.Name()], _ = os.Readlink(filepath.Join(dir, e.Name()))
	}
	return links
}

// TestLivePid: ftpatch live -p records a running process into a
// temporary directory, replays it (alpha's calls, beta inside), and
// removes the directory; the process runs on and ends as untraced.
func TestLivePid(t *testing.T) {
	t.Parallel()
	dir, prog, _, wantOut, wantCode := attachProg(t, "linked")
	r := startPlain(t, dir, prog)
	time.Sleep(200 * time.Millisecond)
	out, errOut := run(t, dir, tool("ftpatch"), "live", "-p", strconv.Itoa(r.cmd.Process.Pid), "--filter", "alpha,beta", "--duration", "200ms")
	if !strings.Contains(out, "| alpha() {") || !strings.Contains(out, "beta();") {
		t.Errorf("live -p replayed:\n%.2000s", out)
	}
	_, tmp, ok := strings.Cut(errOut, " into ")
	tmp, _, _ = strings.Cut(tmp, " until ")
	if !ok || tmp == "" {
		t.Fatalf("live -p said:\n%s", errOut)
	}
	if _, err := os.Stat(filepath.Dir(tmp)); !os.IsNotExist(err) {
		t.Errorf("live -p left %s: %v", filepath.Dir(tmp), err)
	}
	r.end(t, wantOut, wantCode)
}

// TestRecordPidForks: the children a process forks while record -p
// records it record on in images of their own, each with its copy of
// the runtime; record -p's end ends theirs too (attached to as ftpatch
// ctl does), so that nothing in the trace changes once record -p has
// returned, and those it ended say so (detached). Their exit statuses
// are as untraced (the parent checks them).
func TestRecordPidForks(t *testing.T) {
	t.Parallel()
	tg := x86GCC
	need(t, tg.tools...)
	dir := t.TempDir()
	wantOut, wantCode := untraced(t, tg, dir, "attachfork.c")
	prog, _ := linkAs(t, tg, dir, linkedMode, buildSrc(t, tg, dir, "-O2 -pg -mfentry", true, "attachfork.c"), picLink(true), "-pthread")
	r := startPlain(t, dir, prog)
	time.Sleep(300 * time.Millisecond)
	out := filepath.Join(dir, "trace")
	_, errOut := run(t, dir, tool("ftpatch"), "record", "-p", strconv.Itoa(r.cmd.Process.Pid), "--duration", "700ms", "-d", out)
	if !strings.Contains(errOut, "forked meanwhile") {
		t.Errorf("record -p ended no child's trace:\n%s", errOut)
	}
	files := func() map[string]int64 {
		m := map[string]int64{}
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					m[p] = fi.Size()
				}
			}
			return nil
		})
		return m
	}
	at := files()
	// The children run on, calling alpha: a trace not ended would grow.
	time.Sleep(600 * time.Millisecond)
	if now := files(); !maps.Equal(at, now) {
		t.Errorf("the trace changed after record -p returned:\nthen %v\nnow  %v", at, now)
	}
	s, err := trace.OpenSession(out)
	if err != nil {
		t.Fatal(err)
	}
	var ended uint64
	for _, p := range s.Procs[1:] {
		ended += p.Meta.Detached
	}
	if len(s.Procs) < 2 || ended == 0 {
		t.Errorf("%d images, %d of them ended by record -p; want children's, some ended so", len(s.Procs), ended)
	}
	r.end(t, wantOut, wantCode)
}
