package tests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"ftpatch/internal/pty"
)

// recordedProgs builds progs/recorded.c into dir twice: with ftpatch cc
// (compiled and linked in one command), and with gcc alone.
func recordedProgs(t *testing.T, dir string) (traced, plain string) {
	t.Helper()
	need(t, "gcc")
	src := progPath(t, "recorded.c")
	traced, plain = filepath.Join(dir, "recorded"), filepath.Join(dir, "plain")
	run(t, dir, tool("ftpatch"), "cc", "gcc", "-O2", "-Wall", src, "-o", traced)
	run(t, dir, "gcc", "-O2", "-Wall", src, "-o", plain)
	return traced, plain
}

// startPiped starts cmd with its stdout a pipe, returned to be read, and
// its stderr kept in a buffer.
func startPiped(t *testing.T, cmd *exec.Cmd) (io.ReadCloser, *bytes.Buffer) {
	t.Helper()
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return pipe, &stderr
}

// waitRun runs argv in dir with env added to the environment, and
// returns its stdout, stderr and wait status (which says a signal).
func waitRun(t *testing.T, dir string, env []string, argv ...string) (string, string, syscall.WaitStatus) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	o, e, _ := runCmd(t, cmd)
	return o, e, cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// lastLine is s's last line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestRecordEnds: ftpatch record passes the program's output through and
// ends as it ends: its exit status, or killed by the same signal (no core
// dump of ftpatch's own), saying so; each run's trace is where record
// says it is, an earlier one moved aside and named, and replays.
func TestRecordEnds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	traced, plain := recordedProgs(t, dir)
	for i, tc := range []struct {
		args []string
		say  string // what the last line of stderr says
	}{
		{[]string{"env"}, `^ftpatch: the trace is in t: read it with .ftpatch replay t. or .ftpatch report t.$`},
		{[]string{"exit", "7"}, `^ftpatch: the trace is in t \(the earlier trace moved to t\.old\): read it with`},
		{[]string{"exit", "0"}, `\(the earlier trace moved to t\.old\.1\)`},
		{[]string{"kill", "11"}, `^ftpatch: .*recorded was killed by SIGSEGV; the trace is in t \(the earlier trace moved to t\.old\.2\)`},
		{[]string{"kill", "15"}, `killed by SIGTERM; the trace is in t`},
		{[]string{"kill", "9"}, `killed by SIGKILL; the trace is in t`},
		{[]string{"kill", "6"}, `killed by SIGABRT; the trace is in t`},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			wantOut, _, wantWs := waitRun(t, dir, nil, append([]string{plain}, tc.args...)...)
			wantOut = strings.ReplaceAll(wantOut, "FTRACE=(unset)", "FTRACE=function_graph")
			wantOut = strings.ReplaceAll(wantOut, "FTRACE_OUT=(unset)", "FTRACE_OUT=t")
			out, stderr, ws := waitRun(t, dir, nil, append([]string{tool("ftpatch"), "record", "-d", "t", traced}, tc.args...)...)
			if out != wantOut || describe(ws) != describe(wantWs) {
				t.Errorf("record %v: status %v (%s), output\n%s\nwant status %v, output\n%s\nstderr:\n%s", tc.args, ws, describe(ws), out, wantWs, wantOut, stderr)
			}
			if ws.CoreDump() {
				t.Errorf("ftpatch dumped core")
			}
			if !regexp.MustCompile(tc.say).MatchString(lastLine(stderr)) {
				t.Errorf("stderr ends %q, want it to match %q", lastLine(stderr), tc.say)
			}
			if _, err := os.Stat(filepath.Join(image(t, filepath.Join(dir, "t")), "meta")); err != nil {
				t.Errorf("no trace: %v", err)
			}
			if i == 0 {
				if replay, _ := run(t, dir, tool("ftpatch"), "replay", "t"); !leafCall.MatchString(replay) || !strings.Contains(replay, "main() {") {
					t.Errorf("replay of the recorded run lacks main and work:\n%s", replay)
				}
			}
		})
	}
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exit %d", ws.ExitStatus())
}

// TestRecordSettings: the flags set the runtime's variables, the flags'
// own replacing any the environment held (named on stderr), the others
// passed through; -F and -N imply function_graph; a program pre-patched
// by ftpatch enable traces as its record says unless a flag says
// otherwise.
func TestRecordSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	traced, _ := recordedProgs(t, dir)
	env := []string{"FTRACE=function", "FTRACE_FILTER=nothing", "FTRACE_DEPTH=9", "FTRACE_CLOCK=mono"}
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string // lines of the program's output
		note  string   // what the note on stderr names
	}{
		{"defaults", nil, []string{"FTRACE=function_graph", "FTRACE_OUT=t", "FTRACE_FILTER=(unset)", "FTRACE_DEPTH=(unset)",
			"FTRACE_GRAPH_FUNCS=(unset)", "FTRACE_CLOCK=mono"}, "FTRACE_FILTER=nothing FTRACE_DEPTH=9 from the environment not passed on"},
		{"every flag", []string{"-F", "main", "-F", "work,other", "-N", "noisy*", "-D", "3", "-t", "2us", "--filter", "main", "--filter", "work"},
			[]string{"FTRACE=function_graph", "FTRACE_FILTER=main,work", "FTRACE_DEPTH=3", "FTRACE_THRESH=2000ns",
				"FTRACE_GRAPH_FUNCS=main,work,other", "FTRACE_GRAPH_NOTRACE=noisy*", "FTRACE_CLOCK=mono"}, ""},
		{"tracer", []string{"--tracer", "function"}, []string{"FTRACE=function", "FTRACE_GRAPH_FUNCS=(unset)"}, "FTRACE_FILTER=nothing FTRACE_DEPTH=9"},
		{"-N implies function_graph", []string{"-N", "work"}, []string{"FTRACE=function_graph", "FTRACE_GRAPH_NOTRACE=work"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, ws := waitRun(t, dir, env, append(append([]string{tool("ftpatch"), "record", "-d", "t"}, tc.flags...), traced, "env")...)
			if ws.ExitStatus() != 0 {
				t.Fatalf("%s\n%s", describe(ws), stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("the program was not given %s:\n%s", w, out)
				}
			}
			if tc.note != "" && !strings.Contains(stderr, tc.note) {
				t.Errorf("stderr does not say %q:\n%s", tc.note, stderr)
			}
		})
	}
	// Flags that contradict each other are a usage error, and nothing runs.
	for _, flags := range [][]string{{"--tracer", "function", "-F", "main"}, {"--tracer", "nop", "-t", "1us"}, {"--tracer", "fn"}, {"-D", "-1"}} {
		out, stderr, ws := waitRun(t, dir, nil, append(append([]string{tool("ftpatch"), "record"}, flags...), traced, "env")...)
		if ws.ExitStatus() != 2 || out != "" || !strings.Contains(stderr, "ftpatch: ") {
			t.Errorf("record %v: %s, output %q, stderr %q; want exit 2, nothing run", flags, describe(ws), out, stderr)
		}
	}
	// Pre-patched: no FTRACE, the record's tracer and functions.
	pre := filepath.Join(dir, "pre")
	run(t, dir, tool("ftpatch"), "enable", "--tracer", "function", "-o", pre, traced, "work")
	out, stderr, ws := waitRun(t, dir, nil, tool("ftpatch"), "record", "-d", "p", pre, "env")
	if ws.ExitStatus() != 0 || !strings.Contains(out, "FTRACE=(unset)\n") {
		t.Fatalf("pre-patched: %s, output\n%s\nstderr\n%s", describe(ws), out, stderr)
	}
	report, _ := run(t, dir, tool("ftpatch"), "report", "p")
	if !regexp.MustCompile(`(?m)^ *[0-9]+ +work$`).MatchString(report) || strings.Contains(report, "main") {
		t.Errorf("the pre-patched program's record chooses work alone, with function; report:\n%s", report)
	}
	// A flag that chooses the tracer traces it as FTRACE does.
	out, _, _ = waitRun(t, dir, nil, tool("ftpatch"), "record", "-d", "p2", "--tracer", "function_graph", pre, "env")
	if !strings.Contains(out, "FTRACE=function_graph\n") {
		t.Errorf("pre-patched with --tracer: output\n%s", out)
	}
}

// TestRecordRefuses: a program built without the runtime runs (a shell
// or make, whose traced children record into the session), and when
// nothing it ran traced, record says there is no trace and what to do;
// one not found or not executable gets the shell's statuses; a shared
// object is refused; a script runs, with a note.
func TestRecordRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	traced, plain := recordedProgs(t, dir)
	wantOut, _, wantWs := waitRun(t, dir, nil, plain, "env")
	out, stderr, ws := waitRun(t, dir, nil, tool("ftpatch"), "record", plain, "env")
	if ws.ExitStatus() != wantWs.ExitStatus() || !strings.Contains(out, "FTRACE_OUT=ftrace.data") || len(out) < len(wantOut)/2 ||
		!strings.Contains(lastLine(stderr), "no trace in ftrace.data: "+plain+" is not built with the ftpatch runtime") || !strings.Contains(stderr, "ftpatch cc") {
		t.Errorf("a program without the runtime: %s, output %q, stderr %q", describe(ws), out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ftrace.data")); err == nil {
		t.Error("an untraced program made a trace directory")
	}
	_, stderr, ws = waitRun(t, dir, nil, tool("ftpatch"), "record", "no-such-program-anywhere")
	if ws.ExitStatus() != 127 || !strings.Contains(stderr, "no-such-program-anywhere") {
		t.Errorf("a program not found: %s, %q", describe(ws), stderr)
	}
	src := filepath.Join(dir, "recorded.c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644)
	_, stderr, ws = waitRun(t, dir, nil, tool("ftpatch"), "record", src)
	if ws.ExitStatus() != 126 {
		t.Errorf("a file that is not executable: %s, %q", describe(ws), stderr)
	}
	lib := filepath.Join(dir, "libx.so")
	os.WriteFile(filepath.Join(dir, "x.c"), []byte("int x(int a) { return a + 1; }\n"), 0o644)
	run(t, dir, tool("ftpatch"), "cc", "gcc", "-shared", "-fPIC", "x.c", "-o", lib)
	if _, stderr, ws := waitRun(t, dir, nil, tool("ftpatch"), "record", lib); ws.ExitStatus() != 1 || !strings.Contains(stderr, "shared object") {
		t.Errorf("a shared object: %s, %q", describe(ws), stderr)
	}
	// Stripped, it is still known by the runtime's exported entry points,
	// and by its .preinit_array when linked statically.
	stripped, static := filepath.Join(dir, "stripped"), filepath.Join(dir, "static")
	run(t, dir, "strip", "-o", stripped, traced)
	run(t, dir, tool("ftpatch"), "cc", "gcc", "-O2", "-static", progPath(t, "recorded.c"), "-o", static)
	run(t, dir, "strip", static)
	for _, prog := range []string{stripped, static} {
		_, stderr, ws := waitRun(t, dir, nil, tool("ftpatch"), "record", "-d", "st", prog, "exit", "3")
		if ws.ExitStatus() != 3 || !strings.Contains(lastLine(stderr), "the trace is in st") {
			t.Errorf("%s, stripped: %s, stderr %q", prog, describe(ws), stderr)
		}
	}
	script := filepath.Join(dir, "run.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nexec "+traced+" exit 3\n"), 0o755)
	_, stderr, ws = waitRun(t, dir, nil, tool("ftpatch"), "record", "-d", "s", script)
	if ws.ExitStatus() != 3 || !strings.Contains(stderr, "not an ELF program") || !strings.Contains(lastLine(stderr), "the trace is in s") {
		t.Errorf("a script running a traced program: %s, stderr %q", describe(ws), stderr)
	}
}

// TestRecordBeside: a trace directory that a running process is writing
// is left alone, the run's trace going to DIR.PID, which record names.
func TestRecordBeside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	traced, _ := recordedProgs(t, dir)
	bg := exec.Command(traced, "signals")
	bg.Dir = dir
	bg.Env = append(os.Environ(), "FTRACE=function_graph", "FTRACE_OUT=busy")
	pipe, err := bg.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	defer bg.Process.Kill()
	if line, err := bufio.NewReader(pipe).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the busy program: %q, %v", line, err)
	}
	_, stderr, ws := waitRun(t, dir, nil, tool("ftpatch"), "record", "-d", "busy", traced, "env")
	m := regexp.MustCompile(`the trace is in (busy\.[0-9]+):`).FindStringSubmatch(stderr)
	if ws.ExitStatus() != 0 || m == nil {
		t.Fatalf("%s: stderr %q, want it to name busy.PID", describe(ws), stderr)
	}
	if _, err := os.Stat(filepath.Join(image(t, filepath.Join(dir, m[1])), "meta")); err != nil {
		t.Errorf("record named %s: %v", m[1], err)
	}
	bg.Process.Signal(syscall.SIGTERM)
	bg.Wait()
}

// TestRecordSignals: signals sent to ftpatch reach the program through
// it, once, and do not end ftpatch first; a terminal's ^C, which the
// terminal sends to the program itself, is not sent again.
func TestRecordSignals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	traced, _ := recordedProgs(t, dir)
	t.Run("sent to ftpatch", func(t *testing.T) {
		cmd := exec.Command(tool("ftpatch"), "record", "-d", "t", traced, "signals")
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no terminal
		pipe, stderr := startPiped(t, cmd)
		defer cmd.Process.Kill()
		r := bufio.NewReader(pipe)
		expect := func(want string) {
			t.Helper()
			line, err := r.ReadString('\n')
			line = strings.TrimSuffix(line, "\n")
			if err != nil || !regexp.MustCompile(want).MatchString(line) {
				t.Fatalf("the program said %q (%v), want %q; stderr:\n%s", line, err, want, stderr.String())
			}
		}
		from := fmt.Sprintf("from pid %d", cmd.Process.Pid)
		expect("^ready$")
		cmd.Process.Signal(syscall.SIGINT)
		expect("^SIGINT 1 " + from + "$")
		cmd.Process.Signal(syscall.SIGUSR1)
		expect("^SIGUSR1 1 " + from + "$")
		cmd.Process.Signal(syscall.SIGINT)
		expect("^SIGINT 2 " + from + "$")
		cmd.Process.Signal(syscall.SIGTERM)
		expect("^SIGTERM " + from + ": 2 SIGINT, 1 SIGUSR1$")
		if err := cmd.Wait(); err != nil {
			t.Errorf("ftpatch: %v\n%s", err, stderr.String())
		}
	})
	t.Run("terminal", func(t *testing.T) {
		ptmx, pts, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer ptmx.Close()
		cmd := exec.Command(tool("ftpatch"), "record", "-d", "t", traced, "signals")
		cmd.Dir = dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
		// A session of its own, the terminal its controlling one, and
		// its process group the terminal's foreground group, as a shell
		// runs a foreground job.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		pts.Close()
		lines := make(chan string, 64)
		go func() {
			sc := bufio.NewScanner(ptmx)
			for sc.Scan() {
				lines <- strings.TrimRight(sc.Text(), "\r")
			}
			close(lines)
		}()
		var seen []string
		expect := func(want string) {
			t.Helper()
			for line := range lines {
				seen = append(seen, line)
				if regexp.MustCompile(want).MatchString(line) {
					return
				}
			}
			t.Fatalf("the terminal showed\n%s\nwant a line matching %q", strings.Join(seen, "\n"), want)
		}
		expect("^ready$")
		ptmx.Write([]byte{3})               // ^C: SIGINT to the foreground group
		expect("SIGINT 1 from the kernel$") // after the terminal's echo, ^C
		cmd.Process.Signal(syscall.SIGTERM)
		expect(fmt.Sprintf("^SIGTERM from pid %d: 1 SIGINT, 0 SIGUSR1$", cmd.Process.Pid))
		if err := cmd.Wait(); err != nil {
			t.Errorf("ftpatch: %v (a ^C must not end it before the program)\n%s", err, strings.Join(seen, "\n"))
		}
		ptmx.Close()
	})
}

// leafCall finds work's call in a replay: "work();", or "work() {" when
// it holds a time off the CPU (record's scheduler events).
var leafCall = regexp.MustCompile(`work\(\)( \{|;)`)

// TestLive: ftpatch live prints the program's output, then the replay of
// its trace, and removes the trace unless --keep; its exit status is the
// program's; a reader that stops reading ends the replay quietly.
func TestLive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	traced, plain := recordedProgs(t, dir)
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	wantOut, _, _ := waitRun(t, dir, nil, plain, "env")
	out, stderr, ws := waitRun(t, dir, env, tool("ftpatch"), "live", traced, "env")
	prog, replay, ok := strings.Cut(out, "# DURATION")
	if ws.ExitStatus() != 0 || !ok || !leafCall.MatchString(replay) || !strings.Contains(replay, "main() {") {
		t.Fatalf("live: %s, output\n%s\nstderr\n%s", describe(ws), out, stderr)
	}
	if strings.Count(prog, "\n") != strings.Count(wantOut, "\n") || !strings.HasSuffix(prog, "work=55\n") {
		t.Errorf("live: the program's output\n%s\nwant as the untraced program's\n%s", prog, wantOut)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("live left %v in TMPDIR", left)
	}
	_, stderr, ws = waitRun(t, dir, env, tool("ftpatch"), "live", "--keep", "--tracer", "function", traced, "exit", "5")
	m := regexp.MustCompile(`ftpatch: the trace is kept in (\S+)`).FindStringSubmatch(stderr)
	if ws.ExitStatus() != 5 || m == nil {
		t.Fatalf("live --keep: %s, stderr %q", describe(ws), stderr)
	}
	if _, err := os.Stat(filepath.Join(image(t, m[1]), "meta")); err != nil {
		t.Errorf("live --keep: %v", err)
	}
	os.RemoveAll(filepath.Dir(m[1]))
	// A reader that stops after the program's line: the replay's writes
	// fail, and ftpatch ends quietly with the program's status.
	cmd := exec.Command(tool("ftpatch"), "live", traced, "exit", "4")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	pipe, errOut := startPiped(t, cmd)
	pipe.Close()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || strings.Contains(errOut.String(), "broken pipe") {
		t.Errorf("live with its output closed: %v, stderr %q", err, errOut.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("live with its output closed left %v in TMPDIR", left)
	}
}
