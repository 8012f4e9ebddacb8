package tests

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/asroot"
)

// scratchUID is a user with no account but its id, who runs a traced
// program another user (nobody) would deny its control socket.
const scratchUID = 65533

// A started is a program started by startAs: its pid, its stdout's
// lines, its stdin, and the file its stderr goes to.
type started struct {
	cmd    *exec.Cmd
	pid    string
	lines  *bufio.Reader
	stdin  io.WriteCloser
	errLog string
}

// startAs starts argv in dir as uid (setpriv; root: as it is), with env
// and PATH alone in its environment, and ends it at the test's end.
func startAs(t *testing.T, uid int, dir string, env []string, argv ...string) *started {
	t.Helper()
	if uid != 0 {
		argv = append([]string{"setpriv", fmt.Sprintf("--reuid=%d", uid), fmt.Sprintf("--regid=%d", uid), "--clear-groups", "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	errLog := filepath.Join(t.TempDir(), "stderr")
	f, err := os.Create(errLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stderr = f
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &started{cmd, fmt.Sprint(cmd.Process.Pid), bufio.NewReader(stdout), stdin, errLog}
}

// stderr is what the program has written to its stderr so far.
func (s *started) stderr() string {
	b, _ := os.ReadFile(s.errLog)
	return string(b)
}

// expect reads the program's next line, which must begin with prefix,
// and returns its rest.
func (s *started) expect(t *testing.T, prefix string) string {
	t.Helper()
	l, err := s.lines.ReadString('\n')
	if err != nil || !strings.HasPrefix(l, prefix) {
		t.Fatalf("process %s printed %q (%v); want %q...\nstderr:\n%s", s.pid, l, err, prefix, s.stderr())
	}
	return strings.TrimSpace(strings.TrimPrefix(l, prefix))
}

// ctlAs runs ftpatch ctl (bin, a copy another user may run) as uid and
// returns its output and error.
func ctlAs(uid int, bin string, args ...string) (string, error) {
	argv := append([]string{bin, "ctl"}, args...)
	if uid != 0 {
		argv = append([]string{"setpriv", fmt.Sprintf("--reuid=%d", uid), fmt.Sprintf("--regid=%d", uid), "--clear-groups", "--"}, argv...)
	}
	o, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(o), err
}

// TestCtlSocketTaken: a program started with FTRACE_CTL=1 and no
// XDG_RUNTIME_DIR listens, and answers its own user and root, though
// another user (nobody) has made the directory a guessable name would
// give its socket (/tmp/ftpatch-UID) first: the socket has no file, and
// its name's random part cannot be guessed to be taken first.
func TestCtlSocketTaken(t *testing.T) {
	t.Parallel()
	needRoot(t)
	need(t, "setpriv")
	need(t, x86GCC.tools...)
	dir := traversable(t)
	prog := traced(t, x86GCC, dir, "-O2 -pg -mfentry", true, "ctlserve.c")
	bin := filepath.Join(dir, "ftpatch")
	copyFile(t, tool("ftpatch"), bin, 0o755)
	home := filepath.Join(dir, "home")
	mkdirOwned(t, home, 0o755, scratchUID)

	squat := fmt.Sprintf("/tmp/ftpatch-%d", scratchUID)
	os.RemoveAll(squat)
	mkdirOwned(t, squat, 0o700, asroot.Nobody)
	t.Cleanup(func() { os.RemoveAll(squat) })

	p := startAs(t, scratchUID, home, []string{"FTRACE_CTL=1"}, prog)
	var o string
	var err error
	for deadline := time.Now().Add(serverStart); ; time.Sleep(20 * time.Millisecond) {
		if o, err = ctlAs(0, bin, p.pid, "status"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	for _, uid := range []int{0, scratchUID} {
		if uid != 0 {
			o, err = ctlAs(uid, bin, p.pid, "status")
		}
		if err != nil || !strings.Contains(o, "pid "+p.pid+"\n") {
			t.Errorf("ctl %s status as uid %d, %s made by nobody: %v\n%s; want the process's status\nits stderr:\n%s", p.pid, uid, squat, err, o, p.stderr())
		}
	}
	if left, _ := os.ReadDir(squat); len(left) != 0 {
		t.Errorf("%s, nobody's, holds %s", squat, left[0].Name())
	}
}

// TestCtlNoStaleSocket: a root daemon (progs/ctldrop.c) started with
// FTRACE_CTL=1 answers ftpatch ctl, drops its privileges to nobody's,
// and then returns from main, dies of SIGKILL, or forks a child that
// lives on and returns: however it ends, no control socket is left of
// it, in the runtime directory it is told of or in the abstract
// namespace (a forked child holds no copy of it).
func TestCtlNoStaleSocket(t *testing.T) {
	t.Parallel()
	needRoot(t)
	need(t, x86GCC.tools...)
	dir := t.TempDir()
	prog := traced(t, x86GCC, dir, "-O2 -pg -mfentry", true, "ctldrop.c")
	for _, end := range []string{"exit", "kill", "fork"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			xdg := filepath.Join(t.TempDir(), "xdg")
			if err := os.Mkdir(xdg, 0o700); err != nil {
				t.Fatal(err)
			}
			p := startAs(t, 0, dir, []string{"FTRACE_CTL=1", "XDG_RUNTIME_DIR=" + xdg}, prog, end)
			p.expect(t, "ready")
			if o, err := ctlAs(0, tool("ftpatch"), p.pid, "status"); err != nil {
				t.Fatalf("ctl %s status: %v\n%s\nits stderr:\n%s", p.pid, err, o, p.stderr())
			}
			io.WriteString(p.stdin, "go\n")
			if end == "fork" {
				child := p.expect(t, "child ")
				t.Cleanup(func() { exec.Command("kill", "-KILL", child).Run() })
			}
			p.cmd.Wait()
			// The name goes with the last descriptor on the socket:
			// a child's close may come a moment after its parent's end.
			var left []string
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if left = ctlSockets(t, p.pid); len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			if len(left) != 0 {
				t.Errorf("the control socket %q is left 10 s after the process's end", left)
			}
			if files, _ := os.ReadDir(xdg); len(files) != 0 {
				t.Errorf("%s holds %s after the process's end; want nothing", xdg, files[0].Name())
			}
		})
	}
}
