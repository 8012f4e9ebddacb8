package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDaemonFds: a daemon (progs/ctldaemon.c) traced with FTRACE_CTL=1,
// a string argument recorded through the runtime's pipe (the program
// refuses itself process_vm_readv, as qemu-user does), closes the
// descriptors it inherited, then serves 20 clients on TCP and a 21st
// that makes it quit. Before the close, every descriptor of the
// runtime's lies above the program's range (1,024 and up under a soft
// RLIMIT_NOFILE of 8,192) and is close-on-exec. After it, every client
// gets the program's own answer (never the control thread's error text
// or the runtime's bytes, never a SIGPIPE); ftpatch ctl still answers,
// and still changes sites (through /proc/self/mem); and the trace is
// whole: ended, nothing lost, every call of work, handle and answer in
// it, each answer with its string. Closing 3..1023 leaves the runtime's
// descriptors alone; closing every one up to the limit takes them all,
// and the runtime opens again what it had (the trace directory, the
// thread's stream, /proc/self/mem, the pipe, the control socket). When
// what it had cannot be found again (the thread's stream moved out of the
// trace directory while the daemon waited), what could not be written is
// counted as lost in the trace's metadata, and the daemon's clients are
// served all the same.
func TestDaemonFds(t *testing.T) {
	t.Parallel()
	need(t, x86GCC.tools...)
	need(t, "prlimit")
	dir := t.TempDir()
	prog := traced(t, x86GCC, dir, "-O2 -pg -mfentry", true, "ctldaemon.c")
	for _, c := range []struct {
		last string
		move bool // the thread's stream moved out of the trace directory
	}{
		{"1023", false},
		{"max", false},
		{"max", true},
	} {
		name := "close-3-to-" + c.last
		if c.move {
			name += "-stream-moved"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDaemonFds(t, prog, c.last, c.move)
		})
	}
}

// daemonLimit is the soft RLIMIT_NOFILE the daemon runs under.
const daemonLimit = 8192

func testDaemonFds(t *testing.T, prog, last string, move bool) {
	out := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command("prlimit", fmt.Sprintf("--nofile=%d:%d", daemonLimit, daemonLimit), "--", prog, last)
	cmd.Env = append(os.Environ(), "FTRACE=function_graph", "FTRACE_FILTER=work,handle,answer", "FTRACE_ARGS=answer@arg1/s",
		"FTRACE_CTL=1", "FTRACE_OUT="+out)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := strconv.Itoa(cmd.Process.Pid)
	lines := bufio.NewReader(stdout)
	expect := func(prefix string) string {
		t.Helper()
		l, err := lines.ReadString('\n')
		if err != nil || !strings.HasPrefix(l, prefix) {
			t.Fatalf("the daemon printed %q (%v); want %q...\nstderr:\n%s", l, err, prefix, stderr.String())
		}
		return strings.TrimSpace(strings.TrimPrefix(l, prefix))
	}
	ctl := func(want string, args ...string) {
		t.Helper()
		o, err := exec.Command(tool("ftpatch"), append([]string{"ctl", pid}, args...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(o), want) {
			t.Errorf("ftpatch ctl %s: %v\n%s; want %q", strings.Join(args, " "), err, o, want)
		}
	}
	// Each time: the socket answers, and sites change (work runs no more:
	// its calls are all made before "ready").
	ctlAll := func() {
		t.Helper()
		ctl("trace "+out, "status")
		ctl("1 sites disabled", "disable", "work")
		ctl("1 sites enabled", "enable", "work")
	}
	expect("ready")
	ctlAll()
	// Only the runtime's descriptors are open past stdin, stdout and stderr.
	checkRuntimeFds(t, pid, 3, daemonLimit-1024)
	if move {
		streams, _ := filepath.Glob(filepath.Join(image(t, out), pid+"-*.trace"))
		if len(streams) != 1 {
			t.Fatalf("%s holds the streams %q; want the daemon's thread's alone", out, streams)
		}
		if err := os.Rename(streams[0], filepath.Join(t.TempDir(), "moved.trace")); err != nil {
			t.Fatal(err)
		}
	}
	io.WriteString(stdin, "close\n")
	port := expect("port ")
	ctlAll()
	for i := range 20 {
		if got, want := ask(t, port, fmt.Sprintf("hello %d", i)), fmt.Sprintf("echo hello %d\n", i); got != want {
			t.Errorf("client %d got %q; want the daemon's %q", i, got, want)
		}
	}
	ctlAll()
	// The daemon's listener (3), the runtime's above.
	checkRuntimeFds(t, pid, 4, daemonLimit-1024)
	if got := ask(t, port, "quit"); got != "echo quit\n" {
		t.Errorf("the last client got %q; want echo quit", got)
	}
	expect("served 21")
	if err := cmd.Wait(); err != nil || stderr.Len() > 0 {
		t.Fatalf("the daemon: %v; want exit 0 and nothing on stderr:\n%s", err, stderr.String())
	}
	if move {
		tr, _ := readTrace(t, out)
		if tr.Meta.Unended || tr.Meta.LostBytes == 0 {
			t.Errorf("%s, its stream moved away: unended %v, %d bytes lost; want an ended trace that counts what it lost", out, tr.Meta.Unended, tr.Meta.LostBytes)
		}
		return
	}
	tr, syms := readWhole(t, out, "function_graph")
	calls, _ := tracedCalls(t, tr, syms, "function_graph")
	if calls["work"] != 300000 || calls["handle"] != 21 || calls["answer"] != 21 {
		t.Errorf("%s: work %d, handle %d, answer %d calls; want 300000, 21 and 21", out, calls["work"], calls["handle"], calls["answer"])
	}
	replay, _ := run(t, "", tool("ftpatch"), "replay", "--no-pager", out)
	for i := range 21 {
		arg := fmt.Sprintf("hello %d", i)
		if i == 20 {
			arg = "quit"
		}
		if want := fmt.Sprintf("answer(%q)", arg); !strings.Contains(replay, want) {
			t.Errorf("%s: no %s in its replay", out, want)
		}
	}
}

// ask sends line to the daemon's port and returns its whole answer.
func ask(t *testing.T, port, line string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, line+"\n")
	b, _ := io.ReadAll(c)
	return string(b)
}

// checkRuntimeFds: every descriptor of process pid from first on is at
// floor or above, and close-on-exec; but those it inherited from this
// one (the same number open on the same file here: what the test's own
// parent passed down).
func checkRuntimeFds(t *testing.T, pid string, first, floor int) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fd, _ := strconv.Atoi(e.Name())
		what, _ := os.Readlink(filepath.Join("/proc", pid, "fd", e.Name()))
		if mine, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); fd < first || (err == nil && mine == what) {
			continue
		}
		info, _ := os.ReadFile(filepath.Join("/proc", pid, "fdinfo", e.Name()))
		var flags uint64
		for _, l := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(l, "flags:"); ok {
				flags, _ = strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			}
		}
		if fd < floor || flags&0o2000000 == 0 {
			t.Errorf("descriptor %d (%s, flags %o): want the runtime's at %d or above, close-on-exec", fd, what, flags, floor)
		}
	}
}
