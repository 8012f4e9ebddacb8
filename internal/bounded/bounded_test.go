package bounded

import (
	"strings"
	"testing"
	"time"
)

// fake records what Run reports, so a test can see a limit's error
// without failing itself.
type fake struct {
	testing.TB
	errors []string
}

func (f *fake) Helper() {}

func (f *fake) Errorf(format string, args ...any) {
	f.errors = append(f.errors, format)
}

// TestRun: a command within its limits gives its output and exit status
// and no error; one that outlives the time limit, or asks for more
// memory than the address space allows, is killed or fails, the first
// reported as killed.
func TestRun(t *testing.T) {
	l := Limits{Time: 5 * time.Second, Mem: 64 << 10}
	out, errOut, code := l.Run(t, t.TempDir(), "sh", "-c", "echo out; echo err >&2; exit 3")
	if out != "out\n" || errOut != "err\n" || code != 3 {
		t.Errorf("within limits: %q, %q, exit %d", out, errOut, code)
	}

	f := &fake{TB: t}
	Limits{Time: 200 * time.Millisecond, Mem: 64 << 10}.Run(f, "", "sleep", "10")
	if len(f.errors) != 1 || !strings.Contains(f.errors[0], "killed") {
		t.Errorf("a command past its time: errors %q; want it killed and reported", f.errors)
	}

	// 64 MiB of address space cannot hold a 256 MiB allocation.
	_, _, code = l.Run(t, "", "sh", "-c", `exec dd if=/dev/zero of=/dev/null bs=256M count=1`)
	if code == 0 {
		t.Error("a command past its address space: exit 0")
	}
}
