// Package bounded runs a child process under a time limit and a limit on
// its address space, for the tests that hand a tool input which, without
// the tool's own checks, would make it wait or allocate without end (a
// FIFO no one writes, a device that reads forever, a size field that lies):
// such a run fails its one test instead of stalling the whole run or
// taking the machine's memory.
package bounded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Limits bound a child process.
type Limits struct {
	Time time.Duration // wall time, after which it is killed
	Mem  int           // KiB of address space (ulimit -v)
}

// Command returns a command running argv under l: sh sets the address
// space limit and execs argv[0], and the command is killed when l.Time
// has passed (or when t ends).
func (l Limits) Command(t testing.TB, argv ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), l.Time)
	t.Cleanup(cancel)
	script := fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, l.Mem)
	return exec.CommandContext(ctx, "sh", append([]string{"-c", script}, argv...)...)
}

// Run runs argv in dir under l and returns its stdout, stderr and exit
// status. A command that cannot be run fails t; one that was killed, by
// a limit or any other signal, is an error of t.
func (l Limits) Run(t testing.TB, dir string, argv ...string) (string, string, int) {
	t.Helper()
	cmd := l.Command(t, argv...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	if !cmd.ProcessState.Exited() {
		t.Errorf("%s: killed after %v or for lack of memory (%v); stderr:\n%.2000s", strings.Join(argv, " "), l.Time, cmd.ProcessState, e.String())
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}
