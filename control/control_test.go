package control

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// serve answers each connection on a socket named as process pid's
// control socket (which this process listens on: pid is itself, or it
// impersonates another) with the reply reply gives for its request line.
// It returns the socket's address, and a function that stops it and
// returns the requests it was sent.
func serve(t *testing.T, pid int, reply func(req string) string) (string, func() []string) {
	t.Helper()
	name := fmt.Sprintf("@ftpatch-%d-%016x\x00", pid, time.Now().UnixNano())
	l, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			req, _ := bufio.NewReader(c).ReadString('\n')
			if req != "" { // a client that checked whose the socket is, and left
				got = append(got, req)
			}
			c.Write([]byte(reply(strings.TrimSuffix(req, "\n"))))
			c.Close()
		}
	}()
	stop := func() []string {
		l.Close()
		<-done
		return got
	}
	t.Cleanup(func() { stop() })
	return name, stop
}

func TestDo(t *testing.T) {
	pid := os.Getpid()
	busy := 0
	serve(t, pid, func(req string) string {
		switch req {
		case "status":
			return "ok\npid 1\ntracer function\n"
		case "enable a b":
			return "ok 2 sites enabled\n"
		case "off":
			return "error: no\n"
		case "tracer \x1b":
			return "ok tracer \x1b]52;c;aGk=\x07\x1b[2J\u009b\xff\n"
		case "tracer busy":
			if busy++; busy < 3 {
				return "error: busy: every request slot is taken; try again\n"
			}
			return "ok tracer function\n"
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
		{"tracer \x1b", `tracer \x1b]52;c;aGk=\x07\x1b[2J\u009b\xff` + "\n", nil},
		{"tracer busy", "tracer function\n", nil},
	} {
		got, err := Do(pid, c.req)
		switch {
		case c.req == "on":
			if err == nil || !strings.Contains(err.Error(), "not of the protocol") {
				t.Errorf("%q: %q, %v; want a reply not of the protocol", c.req, got, err)
			}
		case c.err != nil:
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), "no") {
				t.Errorf("%q: %q, %v; want %v", c.req, got, err, c.err)
			}
		case err != nil || got != c.want:
			t.Errorf("%q: %q, %v; want %q", c.req, got, err, c.want)
		}
	}
	if busy != 3 {
		t.Errorf("a busy process was asked %d times; want until it answered, 3", busy)
	}
}

// TestImpostor: a socket named as another process's control socket is
// not taken for it: connected to, it is sent nothing (its listener is
// not the process), and Do says whose it is.
func TestImpostor(t *testing.T) {
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	victim := sleep.Process.Pid
	addr, stop := serve(t, victim, func(string) string { return "ok\npid 1\n" })
	if c, err := Dial(victim, addr, time.Now().Add(Timeout)); !errors.Is(err, ErrImpostor) {
		if c != nil {
			c.Close()
		}
		t.Errorf("Dial of another's socket named as process %d's: %v; want %v", victim, err, ErrImpostor)
	}
	if got, err := Do(victim, "status"); !errors.Is(err, ErrImpostor) {
		t.Errorf("Do of a process that holds no socket, another's named as its: %q, %v; want %v", got, err, ErrImpostor)
	}
	if sent := stop(); len(sent) != 0 {
		t.Errorf("the impostor was sent %q", sent)
	}
}

func TestNamesMissing(t *testing.T) {
	if _, err := Names(os.Getpid()); !errors.Is(err, ErrNotListening) {
		t.Errorf("Names of a process not listening: %v; want %v", err, ErrNotListening)
	}
	if _, err := Names(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Names of no process: %v; want %v", err, ErrNoProcess)
	}
}

func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ok\npid 1\n", "ok\npid 1\n"},
		{"trace /tmp/\x1b[2J\n", `trace /tmp/\x1b[2J` + "\n"},
		{"\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`},
		{"a\rb\tc\x7f", `a\x0db\x09c\x7f`},
		{"\u009b31m", `\u009b31m`},
		{"caf\xe9", `caf\xe9`},
		{"café ✓", "café ✓"},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
