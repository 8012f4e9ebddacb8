// Package control is the client side of a traced process's control
// socket (the runtime's ctl.c): where a process listens, and one request
// and its reply. A process listens only when started with FTRACE_CTL=1,
// on ftpatch-PID.sock in a directory only its user may enter: its
// $XDG_RUNTIME_DIR, or /tmp/ftpatch-UID.
package control

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ftpatch/runtime/abi"
)

// ErrNotListening: the process exists but has no control socket (it was
// not started with FTRACE_CTL=1, or it has ended its tracing).
var ErrNotListening = errors.New("not listening for ftpatch ctl")

// ErrNoProcess: no process has that pid.
var ErrNoProcess = errors.New("no such process")

// ErrRefused: the process answered with an error; the error's text is
// its reason.
var ErrRefused = errors.New("refused")

// Timeout bounds a request, from connecting to the reply's end.
const Timeout = 60 * time.Second

// Socket returns the path of process pid's control socket: the first of
// the places it may listen that holds a socket.
func Socket(pid int) (string, error) {
	proc := fmt.Sprintf("/proc/%d", pid)
	status, err := os.ReadFile(filepath.Join(proc, "status"))
	if err != nil {
		return "", fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	}
	uid := euid(status)
	name := fmt.Sprintf("ftpatch-%d.sock", pid)
	var dirs []string
	if env, err := os.ReadFile(filepath.Join(proc, "environ")); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("XDG_RUNTIME_DIR=")); ok && len(v) > 0 {
				dirs = append(dirs, string(v))
			}
		}
	}
	if uid >= 0 {
		dirs = append(dirs, fmt.Sprintf("/run/user/%d", uid))
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		dirs = append(dirs, x)
	}
	if uid >= 0 {
		dirs = append(dirs, fmt.Sprintf("/tmp/ftpatch-%d", uid))
	}
	var denied error
	for _, d := range dirs {
		p := filepath.Join(d, name)
		st, err := os.Stat(p)
		if err == nil && st.Mode()&os.ModeSocket != 0 {
			return p, nil
		}
		if errors.Is(err, os.ErrPermission) && denied == nil {
			denied = fmt.Errorf("process %d: %s: permission denied: only the process's own user or root may control it", pid, d)
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", fmt.Errorf("process %d is %w (start it with %s=1)", pid, ErrNotListening, abi.EnvCtl)
}

// euid is the effective uid in a /proc/PID/status file, or -1.
func euid(status []byte) int {
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "Uid:" {
			if n, err := strconv.Atoi(f[2]); err == nil {
				return n
			}
		}
	}
	return -1
}

// Do sends process pid one request (a line: "status", "enable GLOB...",
// "disable GLOB...", "tracer NAME", "on", "off", "snapshot [DIR]") and
// returns its reply: the lines after "ok" (the first line's rest
// included). A reply "error: ..." is an error wrapping ErrRefused.
func Do(pid int, request string) (string, error) {
	path, err := Socket(pid)
	if err != nil {
		return "", err
	}
	c, err := net.DialTimeout("unix", path, Timeout)
	if err != nil {
		return "", fmt.Errorf("process %d: %s: %w", pid, path, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(Timeout))
	// A process that refuses the connection replies before it reads the
	// request: its reply tells more than the failed write.
	_, werr := io.WriteString(c, request+"\n")
	reply, err := io.ReadAll(bufio.NewReader(io.LimitReader(c, 1<<20)))
	if len(reply) == 0 && werr != nil {
		return "", fmt.Errorf("process %d: %w", pid, werr)
	}
	if err != nil {
		return "", fmt.Errorf("process %d: reading the reply: %w", pid, err)
	}
	first, rest, _ := strings.Cut(string(reply), "\n")
	switch {
	case first == "ok":
		return rest, nil
	case strings.HasPrefix(first, "ok "):
		return strings.TrimPrefix(first, "ok ") + "\n" + rest, nil
	case strings.HasPrefix(first, "error: "):
		return "", fmt.Errorf("process %d: %w: %s", pid, ErrRefused, strings.TrimPrefix(first, "error: "))
	}
	return "", fmt.Errorf("process %d: a reply not of the protocol: %q", pid, first)
}
