// Package control is the client side of a traced process's control
// socket (the runtime's ctl.c): where a process listens, and one request
// and its reply. A process listens only when started with FTRACE_CTL=1,
// on a socket in the abstract namespace (no file) named
// "ftpatch-PID-RANDOM" and a NUL, RANDOM 16 hex digits no other user can
// guess.
//
// What it trusts: the kernel, not anything the process's user, or
// another, may write. The process's environment is not read. The socket
// is found in /proc/PID/net/unix (its network namespace's sockets, by
// name), among those process PID holds (/proc/PID/fd) where the caller
// may see them; and, connected, its listener must be process PID itself
// (SO_PEERCRED gives the pid that called listen), else nothing is sent.
// The reply comes back with its control characters escaped (Sanitize),
// fit for a terminal.
package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

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

// ErrImpostor: a socket named as the process's is listened on by another
// process; nothing was sent to it.
var ErrImpostor = errors.New("the socket is not the process's")

// Timeout bounds a request, from finding the socket to the reply's end,
// tries again included.
const Timeout = 60 * time.Second

// maxOthers bounds the sockets tried for one process that it does not
// hold: one is the process's only for a moment (see Names); the others
// are another's (ErrImpostor), each refused at its connect.
const maxOthers = 8

// Names returns the addresses (for net.Dial's "unix", abstract: "@...")
// of the sockets process pid may listen for ftpatch ctl on: the
// listening sockets of its network namespace named as its control socket
// is (Dial checks whose each is), those the process holds first when the
// caller may read /proc/PID/fd. One it does not hold is still tried
// after them: a socket the program closed under the runtime's thread,
// which listens on it until it wakes and makes a new one.
func Names(pid int) ([]string, error) {
	proc := fmt.Sprintf("/proc/%d", pid)
	if _, err := os.Stat(proc); err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	}
	// An abstract socket is reached only from its own network namespace.
	if mine, err := os.Readlink("/proc/self/ns/net"); err == nil {
		if its, err := os.Readlink(filepath.Join(proc, "ns", "net")); err == nil && its != mine {
			return nil, fmt.Errorf("process %d is in another network namespace, where its control socket is: run ftpatch ctl there (nsenter -n -t %d ftpatch ctl ...)", pid, pid)
		}
	}
	list, err := os.ReadFile(filepath.Join(proc, "net", "unix"))
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	}
	held := heldSockets(proc)
	name := regexp.MustCompile(fmt.Sprintf(`^@ftpatch-%d-[0-9a-f]{16}@$`, pid))
	var names, others []string
	for _, line := range strings.Split(string(list), "\n") {
		// Num RefCount Protocol Flags Type St Inode Path: a listening
		// (__SO_ACCEPTCON) stream socket; each NUL of an abstract name
		// shows as '@'.
		f := strings.Fields(line)
		if len(f) != 8 || !name.MatchString(f[7]) || f[4] != "0001" {
			continue
		}
		if flags, err := strconv.ParseUint(f[3], 16, 32); err != nil || flags&0x10000 == 0 {
			continue
		}
		addr := "@" + strings.ReplaceAll(f[7][1:], "@", "\x00")
		if held == nil || held[f[6]] {
			names = append(names, addr)
		} else {
			others = append(others, addr)
		}
	}
	names = append(names, others[:min(len(others), maxOthers)]...)
	if len(names) == 0 {
		return nil, fmt.Errorf("process %d is %w (start it with %s=1)", pid, ErrNotListening, abi.EnvCtl)
	}
	return names, nil
}

// heldSockets is the set of socket inodes (decimal) process proc holds,
// or nil when its descriptors cannot be read (another user's process).
func heldSockets(proc string) map[string]bool {
	dir := filepath.Join(proc, "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	held := map[string]bool{}
	for _, e := range entries {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if ino, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			held[strings.TrimSuffix(ino, "]")] = true
		}
	}
	return held
}

// Dial connects to the socket at addr and returns the connection if its
// listener is process pid (SO_PEERCRED), else an error wrapping
// ErrImpostor, with nothing sent.
func Dial(pid int, addr string, deadline time.Time) (*net.UnixConn, error) {
	d := net.Dialer{Deadline: deadline}
	c, err := d.Dial("unix", addr)
	if err != nil {
		// The error without its address, whose NUL would go to the terminal.
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		return nil, fmt.Errorf("process %d: connecting to %s: %w", pid, Sanitize(addr), err)
	}
	uc := c.(*net.UnixConn)
	raw, err := uc.SyscallConn()
	var cred *syscall.Ucred
	if err == nil {
		cerr := raw.Control(func(fd uintptr) {
			cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		})
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("process %d: %q: its listener: %w", pid, addr, err)
	}
	if int(cred.Pid) != pid {
		c.Close()
		return nil, fmt.Errorf("process %d: %q: %w: listened on by process %d (uid %d)", pid, Sanitize(addr), ErrImpostor, cred.Pid, cred.Uid)
	}
	return uc, nil
}

// Do sends process pid one request (a line: "status", "enable GLOB...",
// "disable GLOB...", "tracer NAME", "on", "off", "snapshot [DIR]") and
// returns its reply: the lines after "ok" (the first line's rest
// included), sanitised. A reply "error: ..." is an error wrapping
// ErrRefused, its reason sanitised too. A process busy with other
// requests (every slot it serves taken), or whose connection closed with
// nothing answered (a socket the program closed, which the runtime makes
// again), is asked again until Timeout.
func Do(pid int, request string) (string, error) {
	deadline := time.Now().Add(Timeout)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		reply, again, err := attempt(pid, request, deadline)
		if !again || time.Now().Add(wait).After(deadline) {
			return reply, err
		}
		time.Sleep(wait)
	}
}

// attempt is one try of Do; again says whether another may get an
// answer (nothing was answered: busy, or a socket gone meanwhile).
func attempt(pid int, request string, deadline time.Time) (reply string, again bool, err error) {
	names, err := Names(pid)
	if err != nil {
		return "", false, err
	}
	var c *net.UnixConn
	for _, n := range names {
		if c, err = Dial(pid, n, deadline); err == nil {
			break
		}
		again = again || !errors.Is(err, ErrImpostor)
	}
	if c == nil {
		return "", again, err
	}
	defer c.Close()
	c.SetDeadline(deadline)
	// A process that refuses the connection replies before it reads the
	// request: its reply tells more than the failed write.
	_, werr := io.WriteString(c, request+"\n")
	raw, rerr := io.ReadAll(bufio.NewReader(io.LimitReader(c, 1<<20)))
	first, rest, whole := strings.Cut(Sanitize(string(raw)), "\n")
	switch {
	case len(raw) == 0 && werr != nil:
		return "", true, fmt.Errorf("process %d: %w", pid, werr)
	case len(raw) == 0 && rerr != nil:
		return "", true, fmt.Errorf("process %d: no reply: %w", pid, rerr)
	case len(raw) == 0:
		return "", true, fmt.Errorf("process %d: the connection closed with no reply", pid)
	case !whole && rerr != nil:
		return "", false, fmt.Errorf("process %d: reading the reply: %w", pid, rerr)
	case first == "ok":
		return rest, false, nil
	case strings.HasPrefix(first, "ok "):
		return strings.TrimPrefix(first, "ok ") + "\n" + rest, false, nil
	case strings.HasPrefix(first, "error: busy"):
		return "", true, fmt.Errorf("process %d: %w: %s", pid, ErrRefused, strings.TrimPrefix(first, "error: "))
	case strings.HasPrefix(first, "error: "):
		return "", false, fmt.Errorf("process %d: %w: %s", pid, ErrRefused, strings.TrimPrefix(first, "error: "))
	}
	return "", false, fmt.Errorf("process %d: a reply not of the protocol: %q", pid, first)
}

// Sanitize returns s with every control character but the newline (C0,
// DEL, C1) and every byte that is not UTF-8 escaped (\xHH, a C1
// character \u00HH), so that what a process answers cannot move a
// terminal's cursor, retitle it or write its clipboard.
func Sanitize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteByte('\n')
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
