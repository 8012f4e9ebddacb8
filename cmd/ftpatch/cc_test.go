package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ftpatch/internal/bounded"
)

// TestCCHostileArgs: ftpatch cc, run as a process of its own under a
// time and a memory limit, ends at once on what would make it wait or
// grow without end: /dev/zero as a response file is empty, as gcc reads
// it (the command then has no input, and gcc says so); a FIFO no one
// writes and a directory are errors naming them (gcc waits for a writer
// on the first, then fails the link on it); a file of more arguments
// than the bound is refused having read no more of them (split whole,
// 60 MiB of one-letter arguments took a minute and 2 GB).
func TestCCHostileArgs(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is not installed: apt-get install gcc")
	}
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	// 60 MiB, within the bytes' bound, of 31 million arguments, past theirs.
	if err := os.WriteFile(filepath.Join(dir, "many.rsp"), bytes.Repeat([]byte("a "), 30<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	limits := bounded.Limits{Time: 30 * time.Second, Mem: 2 << 20}
	for _, c := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"@/dev/zero"}, "gcc: fatal error: no input files"},
		{[]string{"-c", "@fifo", "f.c"}, "ftpatch: cc: @fifo: bad response file: a FIFO"},
		{[]string{"@sub", "f.c"}, "ftpatch: cc: @sub: bad response file: @-file refers to a directory"},
		{[]string{"@many.rsp"}, "ftpatch: cc: bad response file: more than 1048576 arguments in response files"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd := limits.Command(t, append([]string{os.Args[0], "cc", "gcc"}, c.args...)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), envRunMain+"=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatal(err)
			}
			if !cmd.ProcessState.Exited() {
				t.Fatalf("killed after %v or for lack of memory (%v); stderr:\n%.2000s", limits.Time, cmd.ProcessState, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr:\n%.2000s\nwant exit 1 and %q", code, stderr.String(), c.want)
			}
		})
	}
}

// TestCCSameFile: ftpatch cc refuses a command whose output is its
// source, by any name, and leaves the source as it was: the wrapper
// links objects of its own in the sources' places, so gcc, which
// refuses -o naming an input, would not see it.
func TestCCSameFile(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is not installed: apt-get install gcc")
	}
	dir := t.TempDir()
	const src = "int main(void) { return 0; }\n"
	for _, args := range [][]string{{"f.c", "-o", "f.c"}, {"l.c", "-o", "f.c"}, {"-O2", "h.c", "-o", "./f.c"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			f := filepath.Join(dir, "f.c")
			os.Remove(f)
			if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, "l.c"))
			os.Remove(filepath.Join(dir, "h.c"))
			os.Symlink("f.c", filepath.Join(dir, "l.c"))
			os.Link(f, filepath.Join(dir, "h.c"))
			cmd := exec.Command(os.Args[0], append([]string{"cc", "gcc"}, args...)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), envRunMain+"=1")
			out, err := cmd.CombinedOutput()
			if _, ok := err.(*exec.ExitError); !ok || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "is the same as output file") {
				t.Errorf("%v, output:\n%s\nwant exit 1 saying the input is the same as the output", err, out)
			}
			if b, err := os.ReadFile(f); err != nil || string(b) != src {
				t.Errorf("f.c now holds %.100q (%v)", b, err)
			}
		})
	}
}
