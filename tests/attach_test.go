package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// attachedProg builds progs/attached.c as kind says: linked (-pg
// -mfentry, the runtime linked in), sited (-pg -mfentry, recordmcount's
// table, no runtime: it is loaded into the process at the attach). It
// returns the directory and the program, run as it is.
func attachedProg(t *testing.T, kind string) (dir, prog string) {
	t.Helper()
	tg := x86GCC
	need(t, tg.tools...)
	dir = t.TempDir()
	objs := buildSrc(t, tg, dir, "-O2 -pg -mfentry", true, "attached.c")
	rm := linkedMode
	if kind == "sited" {
		rm = preloadedMode
	}
	prog, _ = linkAs(t, tg, dir, rm, objs, picLink(true), "-pthread")
	return dir, prog
}

// procState is what of a process an attach must leave as it was: its
// mappings (a line of /proc/PID/maps each), the bytes of each executable
// one (read through /proc/PID/mem), its descriptors, its signal
// dispositions (SigIgn, SigCgt) and each thread's blocked signals.
type procState struct {
	maps    []string
	code    map[string][]byte
	fds     map[string]string
	sigs    string
	blocked map[string]string
}

func readProcState(t *testing.T, pid int) procState {
	t.Helper()
	p := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(p + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open(p + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	st := procState{code: map[string][]byte{}, fds: fdLinks(t, pid), blocked: map[string]string{}}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		st.maps = append(st.maps, line)
		f := strings.Fields(line)
		if len(f) < 2 || f[1][2] != 'x' || strings.HasSuffix(line, "[vsyscall]") {
			continue
		}
		var lo, hi uint64
		fmt.Sscanf(f[0], "%x-%x", &lo, &hi)
		code := make([]byte, hi-lo)
		if _, err := mem.ReadAt(code, int64(lo)); err != nil {
			t.Fatalf("reading %s of process %d: %v", line, pid, err)
		}
		st.code[line] = code
	}
	status := func(file string, keys ...string) string {
		b, _ := os.ReadFile(file)
		var got []string
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range keys {
				if strings.HasPrefix(l, k+":") {
					got = append(got, strings.Join(strings.Fields(l), " "))
				}
			}
		}
		return strings.Join(got, "; ")
	}
	st.sigs = status(p+"/status", "SigIgn", "SigCgt")
	tasks, _ := os.ReadDir(p + "/task")
	for _, task := range tasks {
		st.blocked[task.Name()] = status(p+"/task/"+task.Name()+"/status", "SigBlk")
	}
	return st
}

// sameAs reports how after differs from st other than as an attach
// may leave a process: mappings added (the runtime's, documented in
// docs/live.md), a control server's socket.
func (st procState) sameAs(after procState) []string {
	var diffs []string
	inAfter := map[string]bool{}
	for _, m := range after.maps {
		inAfter[m] = true
	}
	for _, m := range st.maps {
		if !inAfter[m] && !strings.Contains(m, "[heap]") && !strings.Contains(m, "[stack]") && !anonymous(m) {
			diffs = append(diffs, "mapping gone or changed: "+m)
		}
	}
	for m, code := range st.code {
		if got, ok := after.code[m]; ok && !bytes.Equal(got, code) {
			i := 0
			for i < len(code) && got[i] == code[i] {
				i++
			}
			diffs = append(diffs, fmt.Sprintf("code changed at byte %#x of %s: % x, was % x", i, m, got[i:min(i+8, len(got))], code[i:min(i+8, len(code))]))
		}
	}
	for fd, link := range after.fds {
		if was, ok := st.fds[fd]; (!ok || was != link) && !strings.HasPrefix(link, "socket:[") {
			diffs = append(diffs, fmt.Sprintf("descriptor %s -> %s; before: %q", fd, link, was))
		}
	}
	for fd, link := range st.fds {
		if after.fds[fd] != link {
			diffs = append(diffs, fmt.Sprintf("descriptor %s was %s, now %q", fd, link, after.fds[fd]))
		}
	}
	if after.sigs != st.sigs {
		diffs = append(diffs, fmt.Sprintf("signal dispositions %s; before: %s", after.sigs, st.sigs))
	}
	for task, was := range st.blocked {
		if now, ok := after.blocked[task]; ok && now != was {
			diffs = append(diffs, fmt.Sprintf("thread %s blocks %s; before: %s", task, now, was))
		}
	}
	return diffs
}

// anonymous says whether a maps line is of anonymous memory, which the
// kernel may merge with a mapping the runtime adds beside it.
func anonymous(line string) bool {
	return len(strings.Fields(line)) == 5
}

// rtSignals sends n SIGRTMINs, 30 ms apart, to each of pids.
func rtSignals(pids []int, n int) {
	sig := syscall.Signal(34) // glibc's SIGRTMIN (the kernel's first two are its own)
	for i := 0; i < n; i++ {
		for _, pid := range pids {
			syscall.Kill(pid, sig)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// monoNow is CLOCK_MONOTONIC, the clock of a trace's MonoStart and
// MonoEnd.
func monoNow(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// TestAttach: ftpatch record -p on each kind of process the attach
// issue names (linked with the runtime; built with sites and run
// without it), each with eight threads: six calling traced functions,
// one blocked in read on a pipe, one in nanosleep; real-time signals
// arrive all the while. It records 1 s. The trace holds the calls of
// that second and only those (its clock span inside record -p's run);
// afterwards the process is no one's tracee, its code pages are
// byte-identical to before (read through /proc/PID/mem), its mappings,
// descriptors, signal dispositions and masks as before but for what
// the runtime adds (docs/live.md); and it ends with the output and exit
// status of a twin started beside it, given the same signals, never
// attached.
func TestAttach(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"linked", "sited"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir, prog := attachedProg(t, kind)
			twin, p := startPlain(t, dir, prog), startPlain(t, dir, prog)
			pid := p.cmd.Process.Pid
			time.Sleep(200 * time.Millisecond)
			before := readProcState(t, pid)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); rtSignals([]int{pid, twin.cmd.Process.Pid}, 40) }()
			out := filepath.Join(dir, "trace")
			t0 := monoNow(t)
			o, err := exec.Command(tool("ftpatch"), "record", "-p", strconv.Itoa(pid), "--duration", "1s", "-d", out).CombinedOutput()
			t1 := monoNow(t)
			wg.Wait()
			if err != nil {
				t.Fatalf("record -p: %v\n%s", err, o)
			}
			if _, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid)); err != nil {
				p.cmd.Wait()
				if _, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid)); err != nil {
					p.cmd.Wait()
					t.Fatalf("the process ended during record -p (%v): %v\n%s", err, p.cmd.ProcessState, o)
				}
			}
			if tp := tracerPid(t, strconv.Itoa(pid)); tp != "0" {
				t.Errorf("traced by %s after record -p", tp)
			}
			for _, d := range before.sameAs(readProcState(t, pid)) {
				t.Error(d)
			}
			tr, syms := readTrace(t, out)
			calls, _ := tracedCalls(t, tr, syms, "function_graph")
			for _, f := range []string{"alpha", "beta", "gamma_"} {
				if calls[f] == 0 {
					t.Errorf("traced %v; want alpha, beta and gamma_", calls)
					break
				}
			}
			if tr.Meta.MonoStart < t0 || tr.Meta.MonoEnd > t1 || time.Duration(tr.Meta.MonoEnd-tr.Meta.MonoStart) < 900*time.Millisecond {
				t.Errorf("the trace spans [%d, %d]; record -p ran [%d, %d]: want 1 s inside it", tr.Meta.MonoStart, tr.Meta.MonoEnd, t0, t1)
			}
			twin.stdin.Close()
			twin.cmd.Wait()
			p.end(t, twin.stdout.String(), twin.cmd.ProcessState.ExitCode())
			if !strings.Contains(twin.stdout.String(), "rt 40") || !strings.Contains(twin.stdout.String(), "sleep ok") {
				t.Errorf("the twin said:\n%s", twin.stdout.String())
			}
		})
	}
}

// TestAttachRounds: ftpatch record -p 50 times in a row on one process,
// its runtime linked, or its sites calling the C library's __fentry__
// and the runtime loaded at the first attach; under load (its six busy
// threads and its twin's, twelve on the machine's processors), with
// real-time signals arriving, function_graph and function in turn,
// alpha and nap traced: nap's 250 ms sleep is under way at nearly every
// end and start, so its return in one trace finds its shadow entry from
// the trace before. Each round's trace is one record -p ended, and holds
// alpha's and nap's calls alone, its records whole (read in six of
// them); after the last, the code, mappings, descriptors and signals are
// as the first left them (each detach gives every site back its bytes);
// a record -p made while another records the process is refused, naming
// why; the process ends as its never-attached twin does.
func TestAttachRounds(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"linked", "sited"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			attachRounds(t, kind)
		})
	}
}

// attachRounds is TestAttachRounds on a process built as kind says
// (attachedProg).
func attachRounds(t *testing.T, kind string) {
	dir, prog := attachedProg(t, kind)
	twin, p := startPlain(t, dir, prog), startPlain(t, dir, prog)
	pid := p.cmd.Process.Pid
	time.Sleep(300 * time.Millisecond) // its handler set: a real-time signal's default ends it
	var before procState
	done := make(chan struct{})
	go func() { rtSignals([]int{pid, twin.cmd.Process.Pid}, 60); close(done) }()
	for i := range 50 {
		out := filepath.Join(dir, fmt.Sprintf("r%d", i))
		d, tracer := "30ms", "function_graph"
		if i == 7 {
			d = "3s" // long enough for another to be refused meanwhile
		}
		if i%3 == 0 {
			tracer = "function"
		}
		rec := exec.Command(tool("ftpatch"), "record", "-p", strconv.Itoa(pid), "--tracer", tracer, "--filter", "alpha,nap", "--duration", d, "-d", out)
		var recOut bytes.Buffer
		rec.Stderr = &recOut
		if err := rec.Start(); err != nil {
			t.Fatal(err)
		}
		if i == 7 {
			// Once this one records (its directory made): another is
			// refused.
			for j := 0; j < 200; j++ {
				if _, err := os.Stat(out); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			o, err := exec.Command(tool("ftpatch"), "record", "-p", strconv.Itoa(pid), "--duration", "100ms", "-d", filepath.Join(dir, "second")).CombinedOutput()
			if err == nil || !strings.Contains(string(o), "a trace open already") {
				t.Errorf("record -p while another records: %v\n%s; want refused", err, o)
			}
		}
		if err := rec.Wait(); err != nil {
			t.Fatalf("round %d: record -p: %v\n%s", i, err, recOut.String())
		}
		if i == 0 {
			before = readProcState(t, pid)
		}
		// Each round's trace ended by record -p, with a stream; every
		// record read in some (reading all takes a second a round).
		tr := openForks(t, out)
		if tr.Meta.Detached != 1 || len(tr.Streams) == 0 || tr.Streams[0].Size <= 16 {
			t.Errorf("round %d: detached %d, %d streams; want a trace record -p ended, with records", i, tr.Meta.Detached, len(tr.Streams))
		}
		if i%10 == 7 || i == 48 || i == 49 {
			tr, syms := readTrace(t, out)
			calls, _ := tracedCalls(t, tr, syms, tracer)
			if calls["alpha"] == 0 || len(calls) != 1+min(calls["nap"], 1) {
				t.Errorf("round %d (%s) traced %v; want alpha, and nap", i, tracer, calls)
			}
		}
	}
	<-done
	// 49 attaches and detaches since the first: the code, mappings,
	// descriptors and signals as the first left them.
	for _, d := range before.sameAs(readProcState(t, pid)) {
		t.Error(d)
	}
	twin.stdin.Close()
	twin.cmd.Wait()
	p.end(t, twin.stdout.String(), twin.cmd.ProcessState.ExitCode())
}
