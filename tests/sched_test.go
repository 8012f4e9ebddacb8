package tests

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ftpatch/runtime/abi"
	"ftpatch/trace"
)

// schedProg is progs/sched.c built by ftpatch cc for tg, once a run,
// linked into dir.
func schedProg(t *testing.T, tg target, dir string) string {
	t.Helper()
	need(t, tg.tools...)
	shared := once(t, sharedKey("schedProg", tg.id()), func(d string) string {
		prog := filepath.Join(d, "sched")
		run(t, d, append([]string{tool("ftpatch"), "cc"}, append(append([]string{}, tg.cc...), "-O2", "-pthread", progPath(t, "sched.c"), "-o", prog)...)...)
		return prog
	})
	prog := filepath.Join(dir, "sched")
	sharedProgram(t, shared, prog)
	return prog
}

// A schedEvent is one event of a .sched file: its time (the trace's
// clock) and its kind (abi.SchedIn, SchedSleep, SchedPreempt).
type schedEvent struct {
	ts   uint64
	kind uint64
}

// readSched parses the .sched file of the process image dir (abi.h's
// SCHED_*): the pid its header names, and each thread's events in the
// order of the file's chunks. A missing file is a test failure.
func readSched(t *testing.T, dir string) (int, map[int][]schedEvent) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+abi.SchedSuffix))
	if len(files) != 1 {
		t.Fatalf("%s: %d %s files (%v), want one", dir, len(files), abi.SchedSuffix, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < abi.SchedHeader || string(b[:8]) != abi.SchedMagic {
		t.Fatalf("%s: header %q, want %q", files[0], b[:min(len(b), 16)], abi.SchedMagic)
	}
	pid := int(binary.LittleEndian.Uint32(b[8:]))
	if want := strconv.Itoa(pid) + abi.SchedSuffix; filepath.Base(files[0]) != want {
		t.Errorf("%s: its header says pid %d", files[0], pid)
	}
	events := map[int][]schedEvent{}
	for p := abi.SchedHeader; p < len(b); {
		if p+8 > len(b) {
			t.Fatalf("%s: a chunk cut short at byte %d", files[0], p)
		}
		w := binary.LittleEndian.Uint64(b[p:])
		tid, n := int(uint32(w)), int(w>>32)
		p += 8
		if n == 0 || p+8*n > len(b) {
			t.Fatalf("%s: a chunk of %d events at byte %d of %d", files[0], n, p, len(b))
		}
		for i := 0; i < n; i++ {
			e := binary.LittleEndian.Uint64(b[p+8*i:])
			events[tid] = append(events[tid], schedEvent{e >> abi.SchedKindBits, e & (1<<abi.SchedKindBits - 1)})
		}
		p += 8 * n
	}
	return pid, events
}

// metaOf is the image dir's metadata, as package trace reads it.
func metaOf(t *testing.T, dir string) *trace.Meta {
	t.Helper()
	tr, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &tr.Meta
}

// A sleep is a thread's time off its CPU, blocked: a SchedSleep and the
// SchedIn after it.
type sleep struct{ out, in uint64 }

// longSleeps are the sleeps of evs 9.5 ms or longer (tr's clock), each
// checked to be followed by its IN within 40 ms, and all to be in time
// order.
func longSleeps(t *testing.T, tr *trace.Trace, tid int, evs []schedEvent) []sleep {
	t.Helper()
	var out []sleep
	for i, e := range evs {
		if i > 0 && e.ts < evs[i-1].ts {
			t.Errorf("thread %d: event %d at %d before the one before it (%d)", tid, i, e.ts, evs[i-1].ts)
		}
		if e.kind != abi.SchedSleep || i+1 >= len(evs) {
			continue
		}
		next := evs[i+1]
		ms := (tr.Meta.Nanos(next.ts) - tr.Meta.Nanos(e.ts)) / 1e6
		if ms < 9.5 {
			continue
		}
		if next.kind != abi.SchedIn || ms > 40 {
			t.Errorf("thread %d: slept at %d, then kind %d %.2f ms later; want an IN within 40 ms", tid, e.ts, next.kind, ms)
		}
		out = append(out, sleep{e.ts, next.ts})
	}
	return out
}

// callSpan is the entry and exit times of the one graphed call of the
// stream of tid: the traced function (FTRACE_FILTER names one).
func callSpan(t *testing.T, tr *trace.Trace, pid, tid int) (uint64, uint64) {
	t.Helper()
	for _, s := range tr.Streams {
		if s.Pid != pid || s.Tid != tid {
			continue
		}
		var entry, exit uint64
		for _, r := range s.Records {
			switch {
			case r.IsCall():
				entry = r.TS
			case r.Kind() == trace.Exit:
				exit = r.TS
			}
		}
		if entry == 0 || exit <= entry {
			t.Fatalf("stream %d-%d: entry %d, exit %d; want a whole call", pid, tid, entry, exit)
		}
		return entry, exit
	}
	t.Fatalf("no stream of thread %d-%d", pid, tid)
	return 0, 0
}

// checkSleepsIn: thread tid of the image slept want times 10 ms, inside
// its traced call, as the streams' clock says.
func checkSleepsIn(t *testing.T, tr *trace.Trace, events map[int][]schedEvent, pid, tid, want int) {
	t.Helper()
	entry, exit := callSpan(t, tr, pid, tid)
	sl := longSleeps(t, tr, tid, events[tid])
	if len(sl) != want {
		t.Errorf("thread %d: %d sleeps of 10 ms, want %d (events %v)", tid, len(sl), want, events[tid])
	}
	for _, s := range sl {
		if s.out < entry || s.in > exit {
			t.Errorf("thread %d: a sleep [%d, %d] not within its call [%d, %d]", tid, s.out, s.in, entry, exit)
		}
	}
}

// TestSchedSleeps: with FTRACE_SCHED=1, the main thread's three 10 ms
// nanosleeps in naps() are in <pid>.sched as three sleeps, each followed
// by its return to the CPU 10 ms later, within naps()'s entry and exit
// as its stream records them; the metadata says sched on and counts
// them.
func TestSchedSleeps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := schedProg(t, x86GCC, dir)
	_, out := runTracedEnv(t, dir, prog, "function_graph", "t", []string{"FTRACE_SCHED=1", "FTRACE_FILTER=naps"}, "slept\n", 0)
	im := image(t, out)
	tr, err := trace.Read(im)
	if err != nil {
		t.Fatal(err)
	}
	pid, events := readSched(t, im)
	checkSleepsIn(t, tr, events, pid, pid, 3)
	if m := tr.Meta; m.Sched != abi.SchedOn || m.SchedSwitches < 3 {
		t.Errorf("metadata: sched %q, sched_switches %d; want on, at least 3", m.Sched, m.SchedSwitches)
	}
}

// TestSchedThreads: threads made after the trace began inherit the
// event: each one's sleep in worker() is in the process's file, under
// its own id, within its call.
func TestSchedThreads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := schedProg(t, x86GCC, dir)
	_, out := runTracedArgv(t, dir, []string{prog, "threads"}, "function_graph", "t", []string{"FTRACE_SCHED=1", "FTRACE_FILTER=worker"}, "slept\n", 0)
	im := image(t, out)
	tr, err := trace.Read(im)
	if err != nil {
		t.Fatal(err)
	}
	pid, events := readSched(t, im)
	workers := 0
	for _, s := range tr.Streams {
		if s.Tid != pid {
			workers++
			checkSleepsIn(t, tr, events, pid, s.Tid, 1)
		}
	}
	if workers != 3 {
		t.Errorf("%d streams of threads, want 3", workers)
	}
}

// TestSchedFork: a child forked opens its own event: its naps() are in
// its own image's file, named for it.
func TestSchedFork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := schedProg(t, x86GCC, dir)
	_, out := runTracedArgv(t, dir, []string{prog, "fork"}, "function_graph", "t", []string{"FTRACE_SCHED=1", "FTRACE_FILTER=naps"}, "slept\n", 0)
	var child string
	for _, im := range images(t, out) {
		if metaOf(t, im).Forked {
			child = im
		}
	}
	if child == "" {
		t.Fatalf("no forked child's image in %v", images(t, out))
	}
	tr, err := trace.Read(child)
	if err != nil {
		t.Fatal(err)
	}
	pid, events := readSched(t, child)
	if want := tr.Meta.Pid; pid != want {
		t.Errorf("the child's file names pid %d, want %d", pid, want)
	}
	checkSleepsIn(t, tr, events, pid, pid, 3)
}

// TestSchedRecord: ftpatch record records the scheduler events by
// default; --no-sched leaves them out: no file, nothing in the
// metadata.
func TestSchedRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := schedProg(t, x86GCC, dir)
	for _, tc := range []struct {
		flags []string
		want  bool
	}{{nil, true}, {[]string{"--no-sched"}, false}} {
		out := filepath.Join(dir, "t"+strings.Join(tc.flags, ""))
		argv := append(append([]string{tool("ftpatch"), "record", "-d", out}, tc.flags...), "--", prog)
		got, stderr, code, err := runStatusEnv(dir, []string{"FTRACE_SCHED=1"}, argv...)
		if err != nil || code != 0 || got != "slept\n" {
			t.Fatalf("%v: exit %d, %v, output %q\n%s", tc.flags, code, err, got, stderr)
		}
		im := image(t, out)
		files, _ := filepath.Glob(filepath.Join(im, "*"+abi.SchedSuffix))
		if sched := metaOf(t, im).Sched; (len(files) == 1) != tc.want || (sched == abi.SchedOn) != tc.want {
			t.Errorf("record %v: files %v, sched %q; want scheduler events %v", tc.flags, files, sched, tc.want)
		}
	}
}

// TestSchedRefused: where the kernel refuses perf events (here a
// seccomp filter returns EACCES for perf_event_open, as a container's
// may), the trace is whole without them and the metadata says why; and
// arm64 under qemu-user, which has no perf events, traces the same.
func TestSchedRefused(t *testing.T) {
	t.Parallel()
	t.Run("seccomp", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		prog := schedProg(t, x86GCC, dir)
		deny := compiled(t, "deny", []string{"gcc", "-O2", progPath(t, "deny.c")})
		_, out := runTracedArgv(t, dir, []string{deny, "perf_event_open", prog}, "function_graph", "t", []string{"FTRACE_SCHED=1", "FTRACE_FILTER=naps"}, "slept\n", 0)
		checkSchedRefused(t, image(t, out), "perf_event_open: EACCES")
	})
	t.Run("qemu", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		prog := schedProg(t, a64GCC, dir)
		_, out := runTracedArgv(t, dir, a64GCC.on(prog), "function_graph", "t", []string{"FTRACE_SCHED=1", "FTRACE_FILTER=naps"}, "slept\n", 0)
		checkSchedRefused(t, image(t, out), "perf_event_open: ")
	})
}

// checkSchedRefused: the image's trace reads, with naps() whole in it, no
// .sched file, and its metadata says sched refused and why (starting
// with why).
func checkSchedRefused(t *testing.T, im, why string) {
	t.Helper()
	tr, err := trace.Read(im)
	if err != nil {
		t.Fatal(err)
	}
	callSpan(t, tr, tr.Meta.Pid, tr.Meta.Pid)
	if files, _ := filepath.Glob(filepath.Join(im, "*"+abi.SchedSuffix)); len(files) != 0 {
		t.Errorf("scheduler events refused, yet %v", files)
	}
	m := tr.Meta
	if m.Sched != abi.SchedRefused || !strings.HasPrefix(m.SchedWhy, why) {
		t.Errorf("metadata: sched %q, sched_why %q; want refused, %q...", m.Sched, m.SchedWhy, why)
	}
	// ftpatch info says so, and why.
	info, _ := run(t, im, tool("ftpatch"), "info", im)
	if !strings.Contains(info, "scheduler events:   refused by the kernel ("+why) {
		t.Errorf("ftpatch info does not say the kernel refused the scheduler events (%s...):\n%s", why, info)
	}
	t.Logf("sched_why %s", m.SchedWhy)
}
