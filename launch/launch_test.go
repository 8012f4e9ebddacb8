package launch

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"ftpatch/internal/pty"
)

// The test binary run as a child reports foreground() and exits.
func TestMain(m *testing.M) {
	if os.Getenv("LAUNCH_TEST_FOREGROUND") == "1" {
		fmt.Println(foreground())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPassOn: a terminal's signals are passed on only when ftpatch is not
// in the terminal's foreground group; the others always.
func TestPassOn(t *testing.T) {
	fg, bg := func() bool { return true }, func() bool { return false }
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGWINCH} {
		if passOn(s, fg) || !passOn(s, bg) {
			t.Errorf("%v: passed on in the foreground %v, in the background %v", s, passOn(s, fg), passOn(s, bg))
		}
	}
	for _, s := range []os.Signal{syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM} {
		if !passOn(s, fg) || !passOn(s, bg) {
			t.Errorf("%v: not passed on", s)
		}
	}
}

// TestForeground: a process that leads a session with a terminal, as a
// shell's foreground job's group does, is in the foreground; one without
// a terminal is not.
func TestForeground(t *testing.T) {
	ptmx, pts, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer pts.Close()
	for _, tc := range []struct {
		name string
		attr *syscall.SysProcAttr
		want string
	}{
		{"terminal", &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}, "true"},
		{"no terminal", &syscall.SysProcAttr{Setsid: true}, "false"},
	} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "LAUNCH_TEST_FOREGROUND=1")
		cmd.SysProcAttr = tc.attr
		var out bytes.Buffer
		cmd.Stdin, cmd.Stdout = pts, &out
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.String()); got != tc.want {
			t.Errorf("%s: foreground() = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestEnv: the settings replace every variable they own, set or not,
// and leave the others; the replaced ones are named.
func TestEnv(t *testing.T) {
	s := Settings{Tracer: "function_graph", Out: "t", Filter: []string{"a*", "!ab"}, Depth: 3, GraphFuncs: []string{"main"},
		Buffer: "ring:64m", Ctl: true}
	env, dropped := s.Env([]string{"PATH=/bin", "FTRACE=function", "FTRACE_THRESH=5us", "FTRACE_CLOCK=mono", "FTRACEX=1", "FTRACE_CTL=0"})
	want := []string{"PATH=/bin", "FTRACE_CLOCK=mono", "FTRACEX=1", "FTRACE=function_graph", "FTRACE_OUT=t",
		"FTRACE_FILTER=a*,!ab", "FTRACE_BUFFER=ring:64m", "FTRACE_CTL=1", "FTRACE_DEPTH=3", "FTRACE_GRAPH_FUNCS=main"}
	if !slices.Equal(env, want) || !slices.Equal(dropped, []string{"FTRACE_THRESH=5us"}) {
		t.Errorf("env %q, dropped %q\nwant %q, dropped [FTRACE_THRESH=5us]", env, dropped, want)
	}
}

// TestStatus: statuses say what a shell reports.
func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		st   Status
		code int
		str  string
	}{
		{Exited(0), 0, "exit status 0"},
		{Exited(7), 7, "exit status 7"},
		{Signaled(syscall.SIGSEGV), 139, "killed by SIGSEGV"},
		{Signaled(syscall.SIGINT), 130, "killed by SIGINT"},
	} {
		if tc.st.Code() != tc.code || tc.st.String() != tc.str || tc.st.Success() != (tc.code == 0) {
			t.Errorf("%v: code %d, success %v; want %d", tc.st, tc.st.Code(), tc.st.Success(), tc.code)
		}
	}
}
