package pager_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/pagertest"
	"ftpatch/internal/pty"
	"ftpatch/pager"
)

// TestCommand: the pager is FTPATCH_PAGER when set (even to nothing),
// else PAGER when set, else less -FRX; "" and "cat" mean none.
func TestCommand(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "less -FRX"},
		{[]string{"PAGER=more"}, "more"},
		{[]string{"PAGER=more", "FTPATCH_PAGER=most -s"}, "most -s"},
		{[]string{"FTPATCH_PAGER=most", "PAGER=more"}, "most"},
		{[]string{"FTPATCH_PAGER=", "PAGER=more"}, ""},
		{[]string{"PAGER="}, ""},
		{[]string{"PAGER=cat"}, ""},
		{[]string{"FTPATCH_PAGER=cat", "PAGER=more"}, ""},
		{[]string{"PAGER=more", "PAGER=most"}, "most"}, // the last, as getenv finds it
	} {
		if got := pager.Command(c.env); got != c.want {
			t.Errorf("Command(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}

// standIns writes, in a directory of their own, the stand-in pagers
// rec1, rec2 and less (pagertest.Recorder), quitter (pagertest.Quitter)
// and notexec (not executable); it returns the directory.
func standIns(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"rec1", "rec2", "less"} {
		pagertest.Recorder(t, dir, name)
	}
	pagertest.Quitter(t, dir, "quitter")
	if err := os.WriteFile(filepath.Join(dir, "notexec"), []byte("#!/bin/sh\ncat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPager: output written through a Writer on a terminal (a
// pseudo-terminal) goes to the pager the environment asks for, started
// with its arguments and LESS=FRX unless LESS is set, the whole output its
// input and none of it on the terminal; with no pager, paging off, or an
// output that is not a terminal, the output goes where it was to go; a
// pager that cannot be started is said once on stderr, and the output
// goes to the terminal.
func TestPager(t *testing.T) {
	bin := standIns(t)
	recorders := []string{"rec1", "rec2", "less"}
	path := "PATH=" + bin + ":/usr/bin:/bin"
	output := strings.Repeat("a line of the output\n", 500)
	for _, c := range []struct {
		name    string
		env     []string
		off     bool
		file    bool   // the output is a file, not a terminal
		rec     string // the stand-in that must have run ("": none)
		args    string // what it records of its arguments
		less    string // and of LESS
		warning string // on stderr
	}{
		{name: "FTPATCH_PAGER over PAGER", env: []string{path, "PAGER=rec2 -x", "FTPATCH_PAGER=rec1 -a b"}, rec: "rec1", args: "[-a] [b]", less: "FRX"},
		{name: "PAGER", env: []string{path, "PAGER=rec2 -x"}, rec: "rec2", args: "[-x]", less: "FRX"},
		{name: "less -FRX by default", env: []string{path}, rec: "less", args: "[-FRX]", less: "FRX"},
		{name: "LESS kept", env: []string{path, "LESS=R"}, rec: "less", args: "[-FRX]", less: "R"},
		{name: "by path", env: []string{"PATH=/usr/bin:/bin", "PAGER=" + filepath.Join(bin, "rec2")}, rec: "rec2", args: "[]", less: "FRX"},
		{name: "a shell command line", env: []string{path, `FTPATCH_PAGER=rec1 "two words" $HOME`, "HOME=/home/x"}, rec: "rec1", args: "[two words] [/home/x]", less: "FRX"},
		{name: "cat is none", env: []string{path, "PAGER=cat"}},
		{name: "empty is none", env: []string{path, "FTPATCH_PAGER=", "PAGER=rec2"}},
		{name: "off", env: []string{path, "PAGER=rec2"}, off: true},
		{name: "not a terminal", env: []string{path, "PAGER=rec2"}, file: true},
		{name: "not found", env: []string{path, "PAGER=nosuch -x"}, warning: `ftpatch: warning: the pager "nosuch -x": nosuch: executable file not found in $PATH: writing to the terminal without it`},
		{name: "not executable", env: []string{path, "PAGER=" + filepath.Join(bin, "notexec")}, warning: `ftpatch: warning: the pager "` + filepath.Join(bin, "notexec") + `": ` + filepath.Join(bin, "notexec") + `: permission denied: writing to the terminal without it`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range recorders {
				pagertest.Forget(t, bin, name)
			}
			var stderr bytes.Buffer
			started := 0
			cfg := pager.Config{Environ: c.env, Stderr: &stderr, Off: c.off, BeforeStart: func() { started++ }}
			var terminal string
			if c.file {
				f, err := os.Create(filepath.Join(t.TempDir(), "out"))
				if err != nil {
					t.Fatal(err)
				}
				write(t, pager.New(f, cfg), output)
				f.Close()
				b, _ := os.ReadFile(f.Name())
				terminal = string(b)
			} else {
				terminal = onTerminal(t, func(tty *os.File) { write(t, pager.New(tty, cfg), output) })
			}
			if c.rec == "" {
				if terminal != output {
					t.Errorf("the output went elsewhere: %d bytes of %d", len(terminal), len(output))
				}
				for _, name := range recorders {
					if _, ran := pagertest.Read(t, bin, name); ran {
						t.Errorf("the pager %s ran", name)
					}
				}
				if wantStarts := map[bool]int{true: 1, false: 0}[c.warning != ""]; started != wantStarts {
					t.Errorf("BeforeStart ran %d times, want %d", started, wantStarts)
				}
			} else {
				run, ran := pagertest.Read(t, bin, c.rec)
				if !ran {
					t.Fatalf("the pager %s did not run", c.rec)
				}
				if want := (pagertest.Run{Args: c.args, Less: c.less, Input: output}); run != want {
					t.Errorf("the pager ran with arguments %s, LESS=%s and %d bytes of input, want %s, LESS=%s and the output's %d bytes",
						run.Args, run.Less, len(run.Input), want.Args, want.Less, len(want.Input))
				}
				if terminal != "" {
					t.Errorf("the terminal got %q besides the pager", terminal)
				}
				if started != 1 {
					t.Errorf("BeforeStart ran %d times, want once", started)
				}
			}
			if got := strings.TrimSuffix(stderr.String(), "\n"); got != c.warning {
				t.Errorf("stderr %q, want %q", got, c.warning)
			}
		})
	}
}

// write writes the output through w a line at a time, and closes it;
// none of it may fail.
func write(t *testing.T, w *pager.Writer, output string) {
	t.Helper()
	var err error
	for line := range strings.Lines(output) {
		if _, err = io.WriteString(w, line); err != nil {
			break
		}
	}
	if err := w.Close(err); err != nil {
		t.Errorf("writing the output: %v", err)
	}
}

// onTerminal runs fn with a pseudo-terminal as its output, and returns
// what reached the terminal (its line endings as written).
func onTerminal(t *testing.T, fn func(tty *os.File)) string {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // until the last of the terminal is closed: EIO
		got <- b
	}()
	fn(slave)
	slave.Close()
	select {
	case b := <-got:
		return strings.ReplaceAll(string(b), "\r\n", "\n")
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal is still open: the pager is still running?")
	}
	return ""
}

// TestPagerQuits: a pager that ends before reading the output (the user
// quit it at once) makes the writes fail with ErrQuit, so the command
// stops, and Close makes that no error.
func TestPagerQuits(t *testing.T) {
	bin := standIns(t)
	cfg := pager.Config{Environ: []string{"PATH=" + bin, "PAGER=quitter"}, Stderr: io.Discard}
	var writeErr, closeErr error
	onTerminal(t, func(tty *os.File) {
		w := pager.New(tty, cfg)
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 1 << 10 { // 64 MiB: more than any pipe holds
			if _, writeErr = w.Write(chunk); writeErr != nil {
				break
			}
		}
		closeErr = w.Close(writeErr)
	})
	if !errors.Is(writeErr, pager.ErrQuit) {
		t.Errorf("writing to a pager that quit: %v, want ErrQuit", writeErr)
	}
	if closeErr != nil {
		t.Errorf("Close: %v, want nil", closeErr)
	}
	other := errors.New("disk full")
	if err := pager.New(io.Discard, cfg).Close(other); err != other {
		t.Errorf("Close(%v) = %v: another error is passed on", other, err)
	}
}

// TestCloseWaits: Close returns only once the pager has ended, so the
// command's exit leaves the terminal to the shell only after it.
func TestCloseWaits(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	script := "#!/bin/sh\ncat >/dev/null\nsleep 0.3\n: > " + done + "\n"
	if err := os.WriteFile(filepath.Join(dir, "slow"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	onTerminal(t, func(tty *os.File) {
		w := pager.New(tty, pager.Config{Environ: []string{"PATH=" + dir + ":/usr/bin:/bin", "PAGER=slow"}, Stderr: io.Discard})
		io.WriteString(w, "output\n")
		if err := w.Close(nil); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(done); err != nil {
			t.Errorf("Close returned before the pager ended: %v", err)
		}
	})
}
