package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/asroot"
)

// TestCtl: ftpatch ctl against a running program of four threads
// (progs/ctlserve.c) started with FTRACE_CTL=1 and no FTRACE: every site
// a NOP and no trace until the first enable; then 100 rounds of enabling
// and disabling alpha (and beta, every tenth), each saying what it
// changed; a change of tracer, a pause and a resume; errors for a
// snapshot of a trace that is not a flight recorder's and for a function
// that is not there. The program's output and exit status are the
// untraced one's, and its trace holds only the functions enabled, every
// call whole. Another user is refused by the runtime (SO_PEERCRED). No
// socket is left, in the directory the program is told is its runtime
// directory or in the abstract namespace.
//
// On x86-64, and on arm64 under qemu-user (whose process is the
// program's: its pid, its socket).
func TestCtl(t *testing.T) {
	t.Parallel()
	needRoot(t)
	need(t, "setpriv")
	for _, c := range []ccBuild{
		{x86GCC, "-O2 -pg -mfentry"},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"},
	} {
		t.Run(c.tg.arch, func(t *testing.T) {
			t.Parallel()
			testCtl(t, c)
		})
	}
}

func testCtl(t *testing.T, c ccBuild) {
	dir, prog, xdg, wantOut, wantCode := ctlSetupOn(t, c)
	out := filepath.Join(dir, "trace")
	srv := startServer(t, c.tg, dir, prog, xdg, "FTRACE_OUT="+out, "FTRACE=", "FTRACE_FILTER=")
	ctl, pid := srv.ctl, srv.pid
	status, err := ctl("status")
	if err != nil || !strings.Contains(status, "tracing none") || !strings.Contains(status, "enabled 0") {
		t.Fatalf("status before any enable: %v\n%s; want no trace and no site enabled", err, status)
	}
	must := func(want string, args ...string) {
		t.Helper()
		got, err := ctl(args...)
		if err != nil || !strings.Contains(got, want) {
			t.Fatalf("ctl %s: %v\n%s; want %q", strings.Join(args, " "), err, got, want)
		}
	}
	for i := range 100 {
		if i%10 == 0 {
			must("2 sites enabled", "enable", "alpha", "be*")
			must("2 sites disabled", "disable", "alpha", "beta")
		} else {
			must("1 sites enabled", "enable", "alpha")
			must("1 sites disabled", "disable", "al*")
		}
	}
	must("tracer function", "tracer", "function")
	must("tracer function_graph", "tracer", "function_graph")
	must("1 sites enabled", "enable", "alpha")
	must("0 sites enabled", "enable", "alpha")
	must("tracing off", "off")
	must("tracing on", "on")
	if got, err := ctl("snapshot"); err == nil || !strings.Contains(got, "not a flight recorder") {
		t.Errorf("ctl snapshot of a trace written as it goes: %v\n%s; want refused, not a flight recorder", err, got)
	}
	if got, err := ctl("enable", "no_such_function"); err != nil || !strings.Contains(got, "0 sites enabled") {
		t.Errorf("ctl enable no_such_function: %v\n%s; want 0 sites enabled", err, got)
	}
	status, _ = ctl("status")
	if !strings.Contains(status, "tracing on") || !strings.Contains(status, "enabled 1") || !strings.Contains(status, "trace "+out) {
		t.Errorf("status: %s; want tracing on, 1 site enabled, trace %s", status, out)
	}
	checkRefused(t, pid)
	time.Sleep(50 * time.Millisecond)
	srv.stop(wantOut, wantCode)
	checkNoSocket(t, xdg, pid)
	tr, syms := readTrace(t, out)
	calls, stats := tracedCalls(t, tr, syms, "function_graph")
	for f, n := range calls {
		if f != "alpha" && f != "beta" {
			t.Errorf("%s traced %d times; only alpha and beta were enabled", f, n)
		}
	}
	if calls["alpha"] == 0 {
		t.Errorf("alpha never traced")
	}
	for _, s := range stats {
		if s.Unwound != 0 || s.Open != 0 {
			t.Errorf("%s: %d calls unwound, %d open at the end; want every call whole", s.Func, s.Unwound, s.Open)
		}
	}
}

// checkRefused: another user (nobody) cannot control the process: the
// runtime refuses it by its credentials.
func checkRefused(t *testing.T, pid string) {
	t.Helper()
	// A copy of ftpatch nobody may run (the tools' directory is private).
	pub := asroot.PublicDir(t, "ftpatch-ctl-")
	bin := filepath.Join(pub, "ftpatch")
	copyFile(t, tool("ftpatch"), bin, 0o755)
	c := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "ctl", pid, "status")
	if o, err := c.CombinedOutput(); err == nil || !strings.Contains(string(o), "refused: permission denied") {
		t.Errorf("ctl by another user: %v\n%s; want refused by the runtime (permission denied)", err, o)
	}
}

// checkNoSocket: process pid, ended, left no control socket: nothing in
// xdg, the runtime directory it was told of, and no abstract socket
// named as its (in /proc/net/unix).
func checkNoSocket(t *testing.T, xdg, pid string) {
	t.Helper()
	if left, _ := os.ReadDir(xdg); len(left) != 0 {
		t.Errorf("%s holds %s after the program's exit; want nothing", xdg, left[0].Name())
	}
	if names := ctlSockets(t, pid); len(names) != 0 {
		t.Errorf("the control socket %q is left after the program's exit", names)
	}
}

// ctlSockets lists the sockets in this network namespace named as
// process pid's control socket.
func ctlSockets(t *testing.T, pid string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 8 && strings.HasPrefix(f[7], "@ftpatch-"+pid+"-") {
			names = append(names, f[7])
		}
	}
	return names
}

// A server is progs/ctlserve.c running under FTRACE_CTL=1.
type server struct {
	pid  string
	ctl  func(args ...string) (string, error) // ftpatch ctl PID args...: its stdout, or its stderr and error
	stop func(wantOut string, wantCode int)   // end it, and check it ended as the untraced program
}

// attachFirst, among startServer's variables, is not one: it says the
// first ftpatch ctl attaches to the process (started without
// FTRACE_CTL), where the others wait for it to listen (--no-attach).
const attachFirst = "attach first"

// serverStart bounds the wait for a started program to answer ftpatch
// ctl. Only a program that never answers waits that long; qemu-user
// starting the arm64 build on a loaded machine takes seconds.
const serverStart = time.Minute

// startServer starts prog (of tg) in dir with FTRACE_CTL=1, xdg as its
// XDG_RUNTIME_DIR (where the runtime makes nothing), and env, and waits
// until it answers ftpatch ctl.
func startServer(t *testing.T, tg target, dir, prog, xdg string, env ...string) *server {
	t.Helper()
	return startServerArgs(t, tg, dir, []string{prog}, xdg, env...)
}

// startServerArgs is startServer running the command argv (the program
// and its arguments).
func startServerArgs(t *testing.T, tg target, dir string, argv []string, xdg string, env ...string) *server {
	t.Helper()
	attachOK := slices.Contains(env, attachFirst)
	env = slices.DeleteFunc(slices.Clone(env), func(e string) bool { return e == attachFirst })
	argv = tg.on(argv[0], argv[1:]...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "FTRACE_CTL=1", "XDG_RUNTIME_DIR="+xdg), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &server{pid: fmt.Sprint(cmd.Process.Pid)}
	s.ctl = func(args ...string) (string, error) {
		c := exec.Command(tool("ftpatch"), append([]string{"ctl", s.pid}, args...)...)
		var o, e strings.Builder
		c.Stdout, c.Stderr = &o, &e
		if err := c.Run(); err != nil {
			return e.String(), err
		}
		return o.String(), nil
	}
	s.stop = func(wantOut string, wantCode int) {
		t.Helper()
		stdin.Close()
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		if stdout.String() != wantOut || code != wantCode {
			t.Fatalf("exit %d (%v), output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", code, err, stdout.String(), wantCode, wantOut, stderr.String())
		}
	}
	// Until it listens: asked without attaching, which would stop a
	// process that listens a moment later anyway (started with
	// FTRACE_CTL=1), and show in its scheduler events; a test that
	// means the attach says so (attachFirst).
	for deadline := time.Now().Add(serverStart); ; time.Sleep(20 * time.Millisecond) {
		probe := []string{"--no-attach", "status"}
		if attachOK {
			probe = probe[1:]
		}
		if _, err = s.ctl(probe...); err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("ftpatch ctl %s status: %v; stderr:\n%s", s.pid, err, stderr.String())
		}
	}
}

// TestCtlSnapshot: a program traced into the flight recorder
// (FTRACE_BUFFER=ring:1m) answers ftpatch ctl snapshot with a whole
// trace of what its threads' rings hold, into a directory asked for and
// into snapshot-N inside its trace's, while it goes on; the trace at its
// exit is whole too.
func TestCtlSnapshot(t *testing.T) {
	t.Parallel()
	dir, prog, xdg, wantOut, wantCode := ctlSetup(t)
	out := filepath.Join(dir, "trace")
	srv := startServer(t, x86GCC, dir, prog, xdg, "FTRACE_OUT="+out, "FTRACE=function_graph", "FTRACE_FILTER=alpha,beta", "FTRACE_BUFFER=ring:1m")
	time.Sleep(200 * time.Millisecond) /* some calls made */
	asked := filepath.Join(dir, "snap")
	for _, args := range [][]string{{"snapshot", asked}, {"snapshot"}} {
		got, err := srv.ctl(args...)
		if err != nil {
			t.Fatalf("ctl %s: %v\n%s", strings.Join(args, " "), err, got)
		}
		where := strings.TrimSpace(strings.TrimPrefix(got, "snapshot "))
		if want := asked; len(args) == 1 {
			want = filepath.Join(image(t, out), "snapshot-1")
			if where != want {
				t.Errorf("ctl snapshot: made %q, want %q", where, want)
			}
		} else if where != want {
			t.Errorf("ctl snapshot %s: made %q", asked, where)
		}
		tr, syms := readTrace(t, where)
		if tr.Meta.Unended || tr.Meta.Buffer != "ring" {
			t.Errorf("%s: unended %v, buffer %q; want a whole trace of the flight recorder", where, tr.Meta.Unended, tr.Meta.Buffer)
		}
		calls, _ := tracedCalls(t, tr, syms, "function_graph")
		if calls["alpha"] == 0 || calls["beta"] == 0 || calls["gamma_"] != 0 {
			t.Errorf("%s: alpha %d, beta %d, gamma_ %d calls; want alpha's and beta's", where, calls["alpha"], calls["beta"], calls["gamma_"])
		}
	}
	srv.stop(wantOut, wantCode)
	tr, syms := readTrace(t, out)
	calls, _ := tracedCalls(t, tr, syms, "function_graph")
	if tr.Meta.Unended || calls["alpha"] == 0 {
		t.Errorf("%s: unended %v, %d calls of alpha; want the rings written at exit", out, tr.Meta.Unended, calls["alpha"])
	}
}

// TestCtlBaked: a program ftpatch enable --ctl recorded listens with
// nothing set, tracing what the record enables (gamma_) and what ctl
// enables then (alpha); ftpatch verify takes the record; FTRACE_CTL=0
// says not to listen, and not to be attached to for it either.
func TestCtlBaked(t *testing.T) {
	t.Parallel()
	dir, prog, xdg, wantOut, wantCode := ctlSetup(t)
	baked := filepath.Join(dir, "baked")
	run(t, dir, tool("ftpatch"), "enable", "--ctl", "--tracer", "function_graph", "-o", baked, prog, "gamma_")
	run(t, dir, tool("ftpatch"), "verify", baked)
	out := filepath.Join(dir, "trace")
	srv := startServer(t, x86GCC, dir, baked, xdg, "FTRACE_OUT="+out, "FTRACE_CTL=")
	if st, err := srv.ctl("status"); err != nil || !strings.Contains(st, "tracing on") || !strings.Contains(st, "enabled 1") {
		t.Errorf("status: %v\n%s; want tracing on, the record's 1 site enabled", err, st)
	}
	if got, err := srv.ctl("enable", "alpha"); err != nil || !strings.Contains(got, "1 sites enabled") {
		t.Errorf("ctl enable alpha: %v\n%s", err, got)
	}
	time.Sleep(50 * time.Millisecond)
	srv.stop(wantOut, wantCode)
	tr, syms := readTrace(t, out)
	calls, _ := tracedCalls(t, tr, syms, "function_graph")
	if calls["gamma_"] == 0 || calls["alpha"] == 0 || calls["beta"] != 0 {
		t.Errorf("gamma_ %d, alpha %d, beta %d calls traced; want gamma_'s and alpha's", calls["gamma_"], calls["alpha"], calls["beta"])
	}

	// FTRACE_CTL=0: no socket.
	cmd := exec.Command(baked)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FTRACE_CTL=0", "XDG_RUNTIME_DIR="+xdg, "FTRACE_OUT="+filepath.Join(dir, "t0"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if o, err := exec.Command(tool("ftpatch"), "ctl", fmt.Sprint(cmd.Process.Pid), "status").CombinedOutput(); err == nil || !strings.Contains(string(o), "not listening") || !strings.Contains(string(o), "started with FTRACE_CTL=0") {
		t.Errorf("ctl of a process run with FTRACE_CTL=0: %v\n%s; want not listening, and its attach refused for FTRACE_CTL=0", err, o)
	}
	if tp := tracerPid(t, fmt.Sprint(cmd.Process.Pid)); tp != "0" {
		t.Errorf("the process refused is traced by %s", tp)
	}
	stdin.Close()
	cmd.Wait()
}

// ctlSetup builds progs/ctlserve.c untraced (its output and exit status
// are wantOut and wantCode) and traced (prog), and makes xdg, a private
// directory the program is told is its runtime directory (where nothing
// may be left), all in dir.
func ctlSetup(t *testing.T) (dir, prog, xdg, wantOut string, wantCode int) {
	t.Helper()
	return ctlSetupOn(t, ccBuild{x86GCC, "-O2 -pg -mfentry"})
}

// ctlSetupOn is ctlSetup for the build c.
func ctlSetupOn(t *testing.T, c ccBuild) (dir, prog, xdg, wantOut string, wantCode int) {
	t.Helper()
	tg := c.tg
	need(t, tg.tools...)
	dir = t.TempDir()
	wantOut, wantCode = untraced(t, tg, dir, "ctlserve.c")
	prog = traced(t, tg, dir, c.flags, true, "ctlserve.c")
	xdg = filepath.Join(dir, "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir, prog, xdg, wantOut, wantCode
}
