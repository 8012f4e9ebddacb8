package tracee

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// held is a running testdata/held.c: its process, its stdin and
// stdout, and the thread the test calls on.
type held struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	vector int
	// reader and sleeper are held in their system calls, read and
	// nanosleep, or about to make them again.
	reader, sleeper int
}

func startHeld(t *testing.T, flags ...string) *held {
	t.Helper()
	return startHeldBy(t, nil, flags...)
}

// startHeldBy starts held.c's program as the argument of wrap (a
// shell, which is then its parent), or directly if wrap is nil.
func startHeldBy(t *testing.T, wrap []string, flags ...string) *held {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "held")
	args := append([]string{"-O2", "-pthread", "-Wall", "-Werror", "-o", bin, "testdata/held.c"}, flags...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
	argv := append(slices.Clone(wrap), bin)
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	h := &held{cmd: cmd, in: in, out: bufio.NewReader(stdout)}
	line, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("held: %v", err)
	}
	if _, err := fmt.Sscanf(line, "ready %d %d %d", &h.vector, &h.reader, &h.sleeper); err != nil {
		t.Fatalf("held said %q", line)
	}
	return h
}

// finish lets the program end and returns what it printed.
func (h *held) finish(t *testing.T) string {
	t.Helper()
	io.WriteString(h.in, "end\n")
	rest, err := io.ReadAll(h.out)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("held: %v\n%s", err, rest)
	}
	return string(rest)
}

// looks is what of a process a hold and its release must leave as they
// were: its code (every executable mapping's bytes), its mappings, its
// descriptors, and each thread's signal mask, ignored and caught
// signals.
type looks struct {
	code     map[string][]byte
	maps     []Mapping
	fds      map[string]string
	sigState map[string]string
}

func look(t *testing.T, pid int) looks {
	t.Helper()
	l := looks{code: map[string][]byte{}, fds: map[string]string{}, sigState: map[string]string{}}
	maps, err := Maps(pid)
	if err != nil {
		t.Fatal(err)
	}
	l.maps = maps
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for _, m := range maps {
		if !strings.Contains(m.Perm, "x") || m.Path == "[vsyscall]" {
			continue
		}
		b := make([]byte, m.End-m.Start)
		if _, err := mem.ReadAt(b, int64(m.Start)); err != nil {
			t.Fatalf("reading %s at %#x: %v", m.Path, m.Start, err)
		}
		l.code[fmt.Sprintf("%#x %s", m.Start, m.Path)] = b
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		l.fds[e.Name()], _ = os.Readlink(filepath.Join(fdDir, e.Name()))
	}
	list, err := tids(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range list {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, line := range strings.Split(string(b), "\n") {
			for _, k := range []string{"SigBlk:", "SigIgn:", "SigCgt:", "TracerPid:"} {
				if strings.HasPrefix(line, k) {
					keep = append(keep, line)
				}
			}
		}
		l.sigState[strconv.Itoa(tid)] = strings.Join(keep, "; ")
	}
	return l
}

func (l looks) check(t *testing.T, now looks) {
	t.Helper()
	for k, b := range l.code {
		if !slices.Equal(b, now.code[k]) {
			t.Errorf("code of %s changed", k)
		}
	}
	if !reflect.DeepEqual(l.maps, now.maps) {
		t.Errorf("mappings changed:\n%v\nnow\n%v", l.maps, now.maps)
	}
	if !reflect.DeepEqual(l.fds, now.fds) {
		t.Errorf("descriptors changed: %v, now %v", l.fds, now.fds)
	}
	for tid, st := range l.sigState {
		if now.sigState[tid] != st {
			t.Errorf("thread %s's signal state changed: %s, now %s", tid, st, now.sigState[tid])
		}
	}
	if len(l.sigState) != len(now.sigState) {
		t.Errorf("threads changed: %d, now %d", len(l.sigState), len(now.sigState))
	}
}

// signalsTaken waits until process pid has no signal pending.
func signalsTaken(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		pending := false
		list, _ := tids(pid)
		for _, tid := range list {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
			for _, line := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && (k == "SigPnd" || k == "ShdPnd") && strings.Trim(strings.TrimSpace(v), "0") != "" {
					pending = true
				}
			}
		}
		if !pending {
			return
		}
	}
	t.Fatalf("process %d: a signal still pending after 5 s", pid)
}

// TestHoldCallRelease holds the 9-thread program 50 times in a row; each
// time a SIGUSR1 arrives while it is held, and a thread whose vector
// registers hold values, or one blocked in read or nanosleep, makes two
// calls (the others held, then running). The program must find nothing changed: its read and its
// sleeps not interrupted, its registers kept, each signal taken once,
// the calls made; its code, mappings, descriptors and signal state as
// before.
func TestHoldCallRelease(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Fatalf("calls are made on x86-64 only (GOARCH %s)", runtime.GOARCH)
	}
	for _, flags := range [][]string{{"-fPIE", "-pie"}, {"-fno-PIE", "-no-pie"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			h := startHeld(t, flags...)
			pid := h.cmd.Process.Pid
			probe, path, err := Lookup(pid, "probe", nil)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(path) != "held" {
				t.Fatalf("probe found in %s", path)
			}
			before := look(t, pid)
			var most time.Duration
			const rounds = 50
			for i := range rounds {
				p, err := Seize(pid)
				if err != nil {
					t.Fatalf("round %d: %v", i, err)
				}
				if n := len(p.Threads()); n != 9 {
					t.Errorf("round %d: %d threads held, want 9", i, n)
				}
				unix.Kill(pid, unix.SIGUSR1)
				on := []int{h.vector, h.reader, h.sleeper}[i%3]
				for _, o := range []CallOptions{{}, {OthersRun: true}} {
					ret, err := p.Call(on, probe, o, Word(40), Str("ab"))
					if err != nil || ret != 42 {
						t.Errorf("round %d: probe(40, \"ab\") with %+v: %d, %v; want 42", i, o, ret, err)
					}
				}
				d, err := p.Release()
				if err != nil {
					t.Fatalf("round %d: release: %v", i, err)
				}
				if p.Pause <= 0 || p.Pause > d {
					t.Errorf("round %d: longest pause %v, held %v", i, p.Pause, d)
				}
				most = max(most, d)
				signalsTaken(t, pid)
			}
			t.Logf("held at most %v a round (two calls)", most)
			look(t, pid).check(t, before)
			got := h.finish(t)
			want := "read ok\nsleep ok\nvectors ok\n" + strings.Repeat("work ok\n", 5) + fmt.Sprintf("usr1 %d\nprobes %d\n", rounds, 2*rounds)
			if got != want {
				t.Errorf("the program printed\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestSeizeRefused: a process traced already (by this test) cannot be
// held twice; the error says who traces it.
func TestSeizeRefused(t *testing.T) {
	h := startHeld(t)
	pid := h.cmd.Process.Pid
	p, err := Seize(pid)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Seize(pid)
	if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), "traces it already") {
		t.Errorf("second hold: %v, want ErrPermission saying it is traced already", err)
	}
	if _, err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := Seize(1 << 30); !errors.Is(err, ErrExited) {
		t.Errorf("no such process: %v, want ErrExited", err)
	}
	if got := h.finish(t); !strings.HasPrefix(got, "read ok\nsleep ok\nvectors ok\n") {
		t.Errorf("the program printed\n%s", got)
	}
}

// TestDlopen loads a shared object into the running program through a
// held thread, calls a function of it, and refuses a file that is not
// one with dlerror's words; the program runs on unchanged, its
// mappings only added to by the object loaded.
func TestDlopen(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "libinject.so")
	if out, err := exec.Command("gcc", "-O2", "-shared", "-fPIC", "-o", lib, "testdata/inject.c").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	h := startHeld(t)
	pid := h.cmd.Process.Pid
	before := look(t, pid)
	p, err := Seize(pid)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Dlopen(h.vector, filepath.Join(t.TempDir(), "missing.so"), false)
	if err == nil || !strings.Contains(err.Error(), "No such file") {
		t.Errorf("a missing object: %v, want dlerror's words", err)
	}
	if _, err := p.Release(); err != nil {
		t.Fatal(err)
	}
	look(t, pid).check(t, before)

	p, err = Seize(pid)
	if err != nil {
		t.Fatal(err)
	}
	on, err := p.SafeThread()
	if err != nil {
		t.Fatal(err)
	}
	if hd, err := p.Dlopen(on, lib, true); err != nil || hd == 0 {
		t.Fatalf("dlopen: %#x, %v", hd, err)
	}
	fn, path, err := Lookup(pid, "injected_answer", nil)
	if err != nil || path != lib {
		t.Fatalf("injected_answer: %v (in %s)", err, path)
	}
	// The others run since the dlopen (last): the calling thread, held
	// still, makes the call.
	if v, err := p.Call(on, fn, CallOptions{}); err != nil || v != 4242 {
		t.Errorf("injected_answer(): %d, %v", v, err)
	}
	if _, err := p.Release(); err != nil {
		t.Fatal(err)
	}
	// The others, let go as they ran by the tracer thread's end, are
	// no one's tracees once Release returns: held again at once.
	if p, err = Seize(pid); err != nil {
		t.Fatalf("held again after a last call: %v", err)
	}
	p.Release()
	now := look(t, pid)
	var added []Mapping
	for _, m := range now.maps {
		if !slices.Contains(before.maps, m) {
			added = append(added, m)
		}
	}
	for _, m := range added {
		if m.Path != lib {
			t.Errorf("a mapping not the object's: %+v", m)
		}
	}
	if len(added) == 0 {
		t.Errorf("no mapping of %s", lib)
	}
	before.maps = now.maps
	before.check(t, now)
	got := h.finish(t)
	if want := "read ok\nsleep ok\nvectors ok\n" + strings.Repeat("work ok\n", 5) + "usr1 0\nprobes 0\n"; got != want {
		t.Errorf("the program printed\n%s\nwant\n%s", got, want)
	}
}

// TestExitWhileHeld: a process killed while held, or one whose call
// ends it, is reported as gone (ErrExited), and letting it go after
// does not fail or hang.
func TestExitWhileHeld(t *testing.T) {
	h := startHeld(t)
	pid := h.cmd.Process.Pid
	p, err := Seize(pid)
	if err != nil {
		t.Fatal(err)
	}
	exit, _, err := Lookup(pid, "_exit", libc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(h.vector, exit, CallOptions{}, Word(7)); !errors.Is(err, ErrExited) {
		t.Errorf("a call of _exit(7): %v, want ErrExited", err)
	}
	if _, err := p.Release(); err != nil {
		t.Errorf("release after the exit: %v", err)
	}
	if err := h.cmd.Wait(); err == nil || h.cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("the program ended with %v, want exit status 7", err)
	}

	// Its parent a shell: the end, taken by the tracer, goes on to it.
	h = startHeldBy(t, []string{"sh", "-c", `"$0"; echo "status $?"`})
	shell := h.cmd.Process.Pid
	var kids string
	for deadline := time.Now().Add(5 * time.Second); kids == "" && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", shell, shell))
		kids = strings.TrimSpace(string(b))
	}
	pid, err = strconv.Atoi(kids)
	if err != nil {
		t.Fatalf("the shell's children: %q", kids)
	}
	if p, err = Seize(pid); err != nil {
		t.Fatal(err)
	}
	if exit, _, err = Lookup(pid, "_exit", libc); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(h.vector, exit, CallOptions{}, Word(7)); !errors.Is(err, ErrExited) {
		t.Errorf("a call of _exit(7): %v, want ErrExited", err)
	}
	p.Release()
	if out, _ := io.ReadAll(h.out); string(out) != "status 7\n" {
		t.Errorf("the shell printed %q, want the status 7", out)
	}

	h = startHeld(t)
	pid = h.cmd.Process.Pid
	if p, err = Seize(pid); err != nil {
		t.Fatal(err)
	}
	h.cmd.Process.Kill()
	if _, err := p.Call(h.vector, exit, CallOptions{}, Word(7)); err == nil {
		t.Errorf("a call in a killed process succeeded")
	}
	p.Release()
	if _, err := Seize(pid); err == nil {
		t.Errorf("a killed process held")
	}
}

// TestCallFault: a call of an address that faults is an error
// (ErrCallFault), and the program, which never sees the fault, runs on
// unchanged.
func TestCallFault(t *testing.T) {
	h := startHeld(t)
	pid := h.cmd.Process.Pid
	before := look(t, pid)
	p, err := Seize(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range []int{h.vector, h.reader} {
		if _, err := p.Call(tid, 8, CallOptions{}); !errors.Is(err, ErrCallFault) {
			t.Errorf("a call of address 8 on thread %d: %v, want ErrCallFault", tid, err)
		}
	}
	if _, err := p.Release(); err != nil {
		t.Fatal(err)
	}
	look(t, pid).check(t, before)
	if got, want := h.finish(t), "read ok\nsleep ok\nvectors ok\n"+strings.Repeat("work ok\n", 5)+"usr1 0\nprobes 0\n"; got != want {
		t.Errorf("the program printed\n%s\nwant\n%s", got, want)
	}
}

// TestSafeThread: the thread chosen for a call that takes the C
// library's locks is stopped outside the C library and the loader, or
// waiting in a system call that holds no lock; a process whose every
// thread is in the C library's code is let run until one is not.
func TestSafeThread(t *testing.T) {
	t.Run("dynamic", func(t *testing.T) { testSafeThread(t, nil) })
	t.Run("static", func(t *testing.T) { testSafeThread(t, []string{"-static"}) })
}

// testSafeThread: in a static program (flags -static), whose C library
// is its own code, the thread chosen is one waiting in a system call.
func testSafeThread(t *testing.T, flags []string) {
	static := len(flags) > 0
	h := startHeld(t, flags...)
	pid := h.cmd.Process.Pid
	for i := range 20 {
		p, err := Seize(pid)
		if err != nil {
			t.Fatal(err)
		}
		tid, err := p.SafeThread()
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		var why string
		p.do(func() {
			r, err := getRegs(tid)
			if err != nil {
				why = err.Error()
				return
			}
			maps, _ := Maps(pid)
			nr, in := r.syscall()
			if static && !(in && waits[nr]) {
				why = fmt.Sprintf("thread %d of a static program not waiting in a system call (%d: %v) at %#x", tid, nr, in, r.pc())
			}
			for _, m := range maps {
				if r.pc() >= m.Start && r.pc() < m.End && libraryCode(m.Path) && !(in && waits[nr]) {
					why = fmt.Sprintf("thread %d stopped in %s at %#x (system call %d: %v)", tid, m.Path, r.pc(), nr, in)
				}
			}
		})
		if why != "" {
			t.Errorf("round %d: %s", i, why)
		}
		if _, err := p.Release(); err != nil {
			t.Fatal(err)
		}
	}
	h.finish(t)
}

// TestSeizeStopped: a stopped process (SIGSTOP) is not held, since a
// call would resume it; it stays stopped, and runs on when continued.
func TestSeizeStopped(t *testing.T) {
	h := startHeld(t)
	pid := h.cmd.Process.Pid
	unix.Kill(pid, unix.SIGSTOP)
	for deadline := time.Now().Add(5 * time.Second); procState(pid) != 'T'; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the process did not stop: state %c", procState(pid))
		}
	}
	if p, err := Seize(pid); !errors.Is(err, ErrStopped) {
		t.Errorf("a stopped process: %v, want ErrStopped", err)
		if p != nil {
			p.Release()
		}
	}
	if s := procState(pid); s != 'T' {
		t.Errorf("state %c after the refusal, want T (stopped still)", s)
	}
	// Stopped between that look and the seizing: told by the threads'
	// group-stops, and let go stopped.
	if p, err := seize(pid); !errors.Is(err, ErrStopped) {
		t.Errorf("a process stopped while seized: %v, want ErrStopped", err)
		if p != nil {
			p.Release()
		}
	}
	time.Sleep(10 * time.Millisecond)
	if s := procState(pid); s != 'T' {
		t.Errorf("state %c after the group-stop's refusal, want T (stopped still)", s)
	}
	unix.Kill(pid, unix.SIGCONT)
	if got := h.finish(t); !strings.HasPrefix(got, "read ok\nsleep ok\nvectors ok\n") {
		t.Errorf("the program printed\n%s", got)
	}
}
