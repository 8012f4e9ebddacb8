package tests

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCtlAttach: ftpatch ctl on a process started without FTRACE_CTL
// (the common production case) attaches to it through ptrace and asks
// its runtime to listen: linked, linked and stripped (the runtime is
// found by its section, not a symbol), preloaded, injected (a -pg
// program linked without the runtime and run plainly: the runtime's
// shared object is loaded into it through dlopen first), and static
// (the call made on a thread waiting in read: its C library is its own
// code). The first status
// says no trace; an enable opens one, which holds the calls; the
// process is traced by no one afterwards, and its output and exit
// status are the untraced program's. On x86-64: under qemu-user, the
// threads ptrace holds are the emulator's, not the program's.
func TestCtlAttach(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"linked", "stripped", "preloaded", "injected", "static"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir, prog, on, wantOut, wantCode := attachProg(t, mode)
			xdg := filepath.Join(dir, "xdg")
			if err := os.Mkdir(xdg, 0o700); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "trace")
			srv := startServer(t, on, dir, prog, xdg, attachFirst, "FTRACE_CTL=", "FTRACE_OUT="+out, "FTRACE=", "FTRACE_FILTER=")
			status, err := srv.ctl("status")
			if err != nil || !strings.Contains(status, "tracing none") {
				t.Fatalf("status: %v\n%s; want no trace yet", err, status)
			}
			if tp := tracerPid(t, srv.pid); tp != "0" {
				t.Errorf("process %s traced by %s after the attach", srv.pid, tp)
			}
			// A stripped program's functions have no names for a live
			// enable's glob to choose (the live path names sites by the
			// symbol table): its attach alone is checked.
			if mode == "stripped" {
				srv.stop(wantOut, wantCode)
				return
			}
			for _, args := range [][]string{{"enable", "alpha"}, {"status"}} {
				if got, err := srv.ctl(args...); err != nil {
					t.Fatalf("ctl %s: %v\n%s", strings.Join(args, " "), err, got)
				}
			}
			time.Sleep(50 * time.Millisecond)
			srv.stop(wantOut, wantCode)
			tr, syms := readTrace(t, out)
			calls, _ := tracedCalls(t, tr, syms, "function_graph")
			if calls["alpha"] == 0 || len(calls) != 1 {
				t.Errorf("traced %v; want alpha alone", calls)
			}
		})
	}
}

// attachProg builds progs/ctlserve.c for the attach tests: untraced (its
// output and status), and traced with -pg -mfentry, linked with the
// runtime (linked, stripped: the symbol table gone; static) or without
// it (preloaded, injected); it returns the directory, the program, the
// target to run it on (preloaded: with LD_PRELOAD) and the untraced
// output and status.
func attachProg(t *testing.T, mode string) (dir, prog string, on target, wantOut string, wantCode int) {
	t.Helper()
	tg := x86GCC
	need(t, append(tg.tools, "strip")...)
	dir = t.TempDir()
	wantOut, wantCode = untraced(t, tg, dir, "ctlserve.c")
	objs := buildSrc(t, tg, dir, "-O2 -pg -mfentry", true, "ctlserve.c")
	rm := linkedMode
	if mode == "preloaded" || mode == "injected" {
		rm = preloadedMode
	}
	link := picLink(true)
	if mode == "static" {
		link = "-static"
	}
	prog, on = linkAs(t, tg, dir, rm, objs, link, "-pthread")
	switch mode {
	case "stripped":
		run(t, dir, "strip", prog)
	case "injected":
		on = tg // run as it is: the runtime is loaded at the attach
	}
	return dir, prog, on, wantOut, wantCode
}

// plainProc is a program started as a production process is: no FTRACE
// variable, its stdin a pipe (closing it ends ctlserve.c).
type plainProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout strings.Builder
}

func startPlain(t *testing.T, dir string, argv ...string) *plainProc {
	t.Helper()
	r := &plainProc{cmd: exec.Command(argv[0], argv[1:]...)}
	r.cmd.Dir = dir
	r.cmd.Env = append(os.Environ(), "FTRACE_CTL=", "FTRACE=", "FTRACE_OUT=", "FTRACE_FILTER=")
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout = &r.stdout
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	return r
}

// end closes its stdin, and checks it ended as the untraced program did.
func (r *plainProc) end(t *testing.T, wantOut string, wantCode int) {
	t.Helper()
	r.stdin.Close()
	r.cmd.Wait()
	if r.stdout.String() != wantOut || r.cmd.ProcessState.ExitCode() != wantCode {
		t.Errorf("exit %d, output\n%s\nwant exit %d, output\n%s", r.cmd.ProcessState.ExitCode(), r.stdout.String(), wantCode, wantOut)
	}
}

// tracerPid is the TracerPid line's value of process pid's status.
func tracerPid(t *testing.T, pid string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestCtlAttachRefused: a process whose sandbox refuses socket() (a
// seccomp filter returning EACCES) cannot listen: ftpatch ctl says why,
// and leaves the process as it was (traced by no one, its mappings and
// descriptors as before, its output the untraced program's).
func TestCtlAttachRefused(t *testing.T) {
	t.Parallel()
	dir, prog, _, wantOut, wantCode := attachProg(t, "linked")
	deny := compiled(t, "deny", []string{"gcc", "-O2", progPath(t, "deny.c")})
	r := startPlain(t, dir, deny, "socket", prog)
	pid := fmt.Sprint(r.cmd.Process.Pid)
	// Started: its image is the program's, not the launcher's.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if exe, _ := os.Readlink("/proc/" + pid + "/exe"); exe == prog {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the program did not start")
		}
	}
	time.Sleep(100 * time.Millisecond)
	maps := func() string {
		b, err := os.ReadFile("/proc/" + pid + "/maps")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	fds := func() []string {
		ents, err := os.ReadDir("/proc/" + pid + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			l, _ := os.Readlink("/proc/" + pid + "/fd/" + e.Name())
			out = append(out, e.Name()+" "+l)
		}
		return out
	}
	mapsBefore, fdsBefore := maps(), fds()
	o, err := exec.Command(tool("ftpatch"), "ctl", pid, "status").CombinedOutput()
	if err == nil || !strings.Contains(string(o), "the control server cannot start: permission denied") {
		t.Errorf("ctl of a process that may not make a socket: %v\n%s; want its server refused, permission denied", err, o)
	}
	if tp := tracerPid(t, pid); tp != "0" {
		t.Errorf("traced by %s after the refused attach", tp)
	}
	if now := maps(); now != mapsBefore {
		t.Errorf("mappings changed by the refused attach:\n%s\nnow\n%s", mapsBefore, now)
	}
	if now := fds(); !slices.Equal(now, fdsBefore) {
		t.Errorf("descriptors changed by the refused attach: %v, now %v", fdsBefore, now)
	}
	r.end(t, wantOut, wantCode)
}
