package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/pagertest"
	"ftpatch/internal/pty"
)

// envRunMain, set to 1 in the test binary's environment, makes it run
// ftpatch's main with its arguments instead of the tests: a test runs
// the command as a process of its own, on a terminal and with an
// environment of its choosing.
const envRunMain = "FTPATCH_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// onTerminal runs ftpatch with args in a process of its own, its
// standard output and error a pseudo-terminal (or, with notTTY, its
// output a pipe), with env (and nothing else) as its environment; it
// returns what reached the terminal (its line endings as written), the
// piped output, and the exit status.
func onTerminal(t *testing.T, env []string, notTTY bool, args ...string) (terminal, piped string, code int) {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // until the last holder of the terminal closes it: EIO
		got <- b
	}()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(env, envRunMain+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = slave, slave
	if notTTY {
		cmd.Stdout = &out
	}
	err = cmd.Run()
	slave.Close()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		terminal = strings.ReplaceAll(string(b), "\r\n", "\n")
	case <-time.After(20 * time.Second):
		t.Fatal("the terminal is still open after ftpatch ended: the pager still runs?")
	}
	return terminal, out.String(), cmd.ProcessState.ExitCode()
}

// TestPaged: on a terminal replay, report, graph and info page their
// output (stand-in pagers that record what they get, pagertest): through
// FTPATCH_PAGER rather than PAGER, or by default less -FRX with
// LESS=FRX; not with --no-pager, nor when the output is not a terminal.
// ^C while the pager runs leaves ftpatch waiting for it; a pager the
// user quits at once ends the command with exit status 0 and nothing
// said; warnings still reach the terminal, not the pager.
func TestPaged(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"rec1", "rec2", "less"} {
		pagertest.Recorder(t, bin, name)
	}
	pagertest.Quitter(t, bin, "quitter")
	path := "PATH=" + bin + ":/usr/bin:/bin"
	// What a command prints, as the tests' in-process runs see it.
	output := func(args ...string) string {
		var out bytes.Buffer
		if errOut, err := traceCmd(&out, args...); err != nil {
			t.Fatalf("ftpatch %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
		return out.String()
	}

	for _, args := range [][]string{
		{"replay", "--exe", demoExe, demoGraph},
		{"report", "--exe", demoExe, demoGraph},
		{"graph", "--exe", demoExe, demoGraph},
		{"info", demoGraph},
	} {
		t.Run(args[0], func(t *testing.T) {
			pagertest.Forget(t, bin, "rec1")
			terminal, _, code := onTerminal(t, []string{path, "FTPATCH_PAGER=rec1"}, false, args...)
			run, ran := pagertest.Read(t, bin, "rec1")
			if code != 0 || !ran || run.Input != output(args...) || terminal != "" {
				t.Errorf("exit %d; the pager ran: %v, given %d bytes of the %d of the output; the terminal got %q", code, ran, len(run.Input), len(output(args...)), terminal)
			}
		})
	}

	report := []string{"report", "--exe", demoExe, demoGraph}
	for _, c := range []struct {
		name   string
		env    []string
		args   []string
		notTTY bool
		pager  string // the stand-in that runs, "" for none
		run    pagertest.Run
	}{
		{name: "FTPATCH_PAGER over PAGER", env: []string{path, "PAGER=rec2", "FTPATCH_PAGER=rec1 -S"}, args: report, pager: "rec1", run: pagertest.Run{Args: "[-S]", Less: "FRX"}},
		{name: "PAGER", env: []string{path, "PAGER=rec2"}, args: report, pager: "rec2", run: pagertest.Run{Args: "[]", Less: "FRX"}},
		{name: "less -FRX by default", env: []string{path}, args: report, pager: "less", run: pagertest.Run{Args: "[-FRX]", Less: "FRX"}},
		{name: "LESS as the user has it", env: []string{path, "LESS=S"}, args: report, pager: "less", run: pagertest.Run{Args: "[-FRX]", Less: "S"}},
		{name: "--no-pager", env: []string{path, "FTPATCH_PAGER=rec1"}, args: append([]string{"report", "--no-pager"}, report[1:]...)},
		{name: "not a terminal", env: []string{path, "FTPATCH_PAGER=rec1"}, args: report, notTTY: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range []string{"rec1", "rec2", "less"} {
				pagertest.Forget(t, bin, name)
			}
			terminal, piped, code := onTerminal(t, c.env, c.notTTY, c.args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, terminal)
			}
			want := output(report...)
			for _, name := range []string{"rec1", "rec2", "less"} {
				run, ran := pagertest.Read(t, bin, name)
				switch {
				case name != c.pager && ran:
					t.Errorf("the pager %s ran", name)
				case name == c.pager && !ran:
					t.Errorf("the pager %s did not run", name)
				case name == c.pager:
					if c.run.Input = want; run != c.run {
						t.Errorf("%s ran with arguments %s, LESS=%s and %d bytes of input; want %s, LESS=%s and the output's %d bytes",
							name, run.Args, run.Less, len(run.Input), c.run.Args, c.run.Less, len(want))
					}
				}
			}
			got := terminal
			if c.notTTY {
				got = piped
			}
			if c.pager != "" {
				want = ""
			}
			if got != want {
				t.Errorf("the terminal (or the pipe) got\n%s\nwant\n%s", got, want)
			}
		})
	}

	// ^C while the pager runs is the pager's (less stops reading): ftpatch
	// goes on until the pager ends, not leaving it on the terminal.
	t.Run("^C while paging", func(t *testing.T) {
		slow := filepath.Join(bin, "slow")
		if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep 1\nexec rec1 \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		pagertest.Forget(t, bin, "rec1")
		cmd := exec.Command(os.Args[0], report...)
		cmd.Env = []string{path, "PAGER=slow", envRunMain + "=1"}
		master, slave, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer master.Close()
		go io.Copy(io.Discard, master)
		cmd.Stdout, cmd.Stderr = slave, slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		time.Sleep(300 * time.Millisecond) // the output written, the pager asleep
		cmd.Process.Signal(os.Interrupt)
		err = cmd.Wait()
		run, ran := pagertest.Read(t, bin, "rec1")
		if err != nil || !ran || run.Input != output(report...) {
			t.Errorf("ftpatch ended %v; the pager ran: %v, given %d bytes of %d: want ftpatch to wait for the pager, exit 0", err, ran, len(run.Input), len(output(report...)))
		}
	})

	// Quit at once: replay of 30,000 calls (a few MB, more than a pipe
	// holds) stops with exit status 0 and says nothing.
	words := []uint64{3<<62 | 1<<58, 200} // TIME: the clock at 200
	for range 30000 {
		words = append(words, 1<<62|1<<47|0x10, 2<<62|1) // a call of 0x10 and its return, a tick each
	}
	deep := craftTrace(t, "function_graph", "dropped 2\n", map[string][]uint64{"7-1.trace": words})
	t.Run("quit at once", func(t *testing.T) {
		start := time.Now()
		terminal, _, code := onTerminal(t, []string{path, "PAGER=quitter"}, false, "replay", deep)
		// The warning of the dropped calls, said before the output, and
		// nothing else.
		if code != 0 || strings.Count(terminal, "\n") != 1 || !strings.Contains(terminal, "2 calls dropped") {
			t.Errorf("exit %d, the terminal got %q: want exit 0 and only the warning", code, terminal)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("replay took %v after its pager quit", d)
		}
	})
	t.Run("warnings on the terminal", func(t *testing.T) {
		pagertest.Forget(t, bin, "rec1")
		terminal, _, code := onTerminal(t, []string{path, "PAGER=rec1"}, false, "report", deep)
		run, ran := pagertest.Read(t, bin, "rec1")
		if code != 0 || !ran || !strings.Contains(run.Input, "30000 calls in 1 thread") || strings.Contains(run.Input, "ftpatch: warning") {
			t.Errorf("exit %d; the pager ran: %v, given %q: want the report without the warning", code, ran, run.Input)
		}
		if !strings.HasPrefix(terminal, "ftpatch: warning: "+deep+": events lost: 2 calls dropped") || strings.Count(terminal, "\n") != 1 {
			t.Errorf("the terminal got %q: want the warning, and only it", terminal)
		}
	})
}
