package control

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve answers each connection on a socket where process pid listens
// (in $XDG_RUNTIME_DIR, set to a directory of the test's) with the reply
// reply gives for its request line.
func serve(t *testing.T, pid int, reply func(req string) string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir)
	l, err := net.Listen("unix", filepath.Join(dir, fmt.Sprintf("ftpatch-%d.sock", pid)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			req, _ := bufio.NewReader(c).ReadString('\n')
			c.Write([]byte(reply(strings.TrimSuffix(req, "\n"))))
			c.Close()
		}
	}()
}

func TestDo(t *testing.T) {
	pid := os.Getpid()
	serve(t, pid, func(req string) string {
		switch req {
		case "status":
			return "ok\npid 1\ntracer function\n"
		case "enable a b":
			return "ok 2 sites enabled\n"
		case "off":
			return "error: no\n"
		}
		return "what?\n"
	})
	for _, c := range []struct {
		req, want string
		err       error
	}{
		{"status", "pid 1\ntracer function\n", nil},
		{"enable a b", "2 sites enabled\n", nil},
		{"off", "", ErrRefused},
		{"on", "", nil},
	} {
		got, err := Do(pid, c.req)
		switch {
		case c.req == "on":
			if err == nil || !strings.Contains(err.Error(), "not of the protocol") {
				t.Errorf("%s: %q, %v; want a reply not of the protocol", c.req, got, err)
			}
		case c.err != nil:
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), "no") {
				t.Errorf("%s: %q, %v; want %v", c.req, got, err, c.err)
			}
		case err != nil || got != c.want:
			t.Errorf("%s: %q, %v; want %q", c.req, got, err, c.want)
		}
	}
}

func TestSocketMissing(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if _, err := Socket(os.Getpid()); !errors.Is(err, ErrNotListening) {
		t.Errorf("Socket of a process not listening: %v; want %v", err, ErrNotListening)
	}
	if _, err := Socket(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Socket of no process: %v; want %v", err, ErrNoProcess)
	}
}
