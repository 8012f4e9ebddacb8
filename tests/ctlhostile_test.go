package tests

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/asroot"
)

// TestCtlHostile: root's ftpatch ctl, pointed by another user (nobody)
// at a process of theirs (progs/ctlfake.c), talks to that process or to
// none, never to another, and prints what it answers with control
// characters escaped. Against a victim, root's own program listening
// with one site enabled:
//
//   - a fake whose environment names a runtime directory of nobody's
//     holding a link to the victim's socket is not listening: the victim
//     is sent nothing (its site stays enabled);
//   - a fake that listens on the names the victim's socket and its own
//     would have (abstract, and in its runtime directory): ctl of the
//     victim reaches the victim, and the fake is sent nothing; ctl of
//     the fake prints its answer (OSC 52, which writes the clipboard,
//     and CSI 2J, which clears the screen) escaped.
func TestCtlHostile(t *testing.T) {
	t.Parallel()
	needRoot(t)
	need(t, "setpriv")
	dir, prog, xdg, _, _ := ctlSetup(t)
	victim := startServer(t, x86GCC, dir, prog, xdg, "FTRACE_OUT="+filepath.Join(dir, "trace"), "FTRACE=function_graph", "FTRACE_FILTER=alpha")
	pub := traversable(t)
	fake := filepath.Join(pub, "ctlfake")
	run(t, pub, append(append([]string{}, x86GCC.cc...), "-O2", progPath(t, "ctlfake.c"), "-o", fake)...)
	enabled := func() {
		t.Helper()
		if st, err := victim.ctl("status"); err != nil || !strings.Contains(st, "enabled 1\n") {
			t.Errorf("the victim's status: %v\n%s; want its 1 site enabled still", err, st)
		}
	}
	enabled()

	fakeXDG := func(name string) string {
		d := filepath.Join(pub, name)
		mkdirOwned(t, d, 0o700, asroot.Nobody)
		return d
	}
	linker := startAs(t, asroot.Nobody, pub, []string{"XDG_RUNTIME_DIR=" + fakeXDG("link-xdg")},
		fake, "link", filepath.Join(xdg, "ftpatch-"+victim.pid+".sock"))
	linker.expect(t, "ready")
	if o, err := ctlAs(0, tool("ftpatch"), linker.pid, "disable", "*"); err == nil {
		t.Errorf("ctl %s disable '*', a process of nobody's linking to root's socket: %s; want not listening", linker.pid, o)
	}
	enabled()

	server := startAs(t, asroot.Nobody, pub, []string{"XDG_RUNTIME_DIR=" + fakeXDG("serve-xdg")}, fake, "serve", victim.pid)
	server.expect(t, "ready")
	if o, err := ctlAs(0, tool("ftpatch"), victim.pid, "status"); err != nil || !strings.Contains(o, "pid "+victim.pid+"\n") {
		t.Errorf("ctl %s status beside a fake listening on its names: %v\n%s; want the victim's own status", victim.pid, err, o)
	}
	o, err := ctlAs(0, tool("ftpatch"), server.pid, "status")
	if err != nil || strings.ContainsAny(o, "\x1b\x07") || !strings.Contains(o, `\x1b]52;`) {
		t.Errorf("ctl %s status, the fake's answer: %v\n%q; want its control characters escaped", server.pid, err, o)
	}
	server.stdin.Close()
	rest, _ := io.ReadAll(server.lines) // all it printed, before Wait closes the pipe
	server.cmd.Wait()
	if got := strings.TrimSpace(string(rest)); got != "request status" {
		t.Errorf("the fake was sent %q; want its own ctl's request alone, status", got)
	}
	enabled()
	os.Remove(filepath.Join(pub, "serve-xdg", "ftpatch-"+server.pid+".sock"))
}
