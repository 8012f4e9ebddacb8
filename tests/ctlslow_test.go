package tests

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ftpatch/control"
	"ftpatch/internal/asroot"
)

// TestCtlSlowClients: clients that connect to a process's control socket
// and never send a whole request (progs/ctlhold.c: a byte a second, no
// newline) cannot keep ftpatch ctl from an answer. Another user's (50
// connections) hold nothing: ctl answers in a few seconds at most. The
// process's own user's (20) hold a slot each for the runtime's deadline
// (5 s), the others turned away as busy: ctl, asking again, answers in
// 15 s at most.
func TestCtlSlowClients(t *testing.T) {
	t.Parallel()
	needRoot(t)
	need(t, "setpriv")
	dir, prog, xdg, _, _ := ctlSetup(t)
	srv := startServer(t, x86GCC, dir, prog, xdg)
	pid, _ := strconv.Atoi(srv.pid)
	names, err := control.Names(pid)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(strings.TrimPrefix(names[0], "@"), "\x00")
	pub := traversable(t)
	hold := filepath.Join(pub, "ctlhold")
	run(t, pub, append(append([]string{}, x86GCC.cc...), "-O2", progPath(t, "ctlhold.c"), "-o", hold)...)

	for _, c := range []struct {
		uid, conns int
		bound      time.Duration
	}{
		{asroot.Nobody, 50, 4 * time.Second},
		{0, 20, 15 * time.Second},
	} {
		h := startAs(t, c.uid, pub, nil, hold, name, strconv.Itoa(c.conns))
		held := h.expect(t, "held ")
		start := time.Now()
		st, err := srv.ctl("status")
		took := time.Since(start)
		if err != nil || !strings.Contains(st, "pid "+srv.pid+"\n") || took > c.bound {
			t.Errorf("ctl status beside %s slow connections of uid %d: %v after %v\n%s; want the status in %v at most",
				held, c.uid, err, took.Round(time.Millisecond), st, c.bound)
		}
		t.Logf("uid %d, %s slow connections: answered in %v", c.uid, held, took.Round(time.Millisecond))
		h.stdin.Close()
		h.cmd.Wait()
	}
}
