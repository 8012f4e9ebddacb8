package attach

import (
	"errors"
	"os/exec"
	"testing"
)

// TestNoRuntime: a process without ftpatch's runtime is told so, and is
// not held for it (nothing to call).
func TestNoRuntime(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	held, err := Control(cmd.Process.Pid)
	if !errors.Is(err, ErrNoRuntime) || held != 0 {
		t.Errorf("Control of sleep: held %v, %v; want ErrNoRuntime, not held", held, err)
	}
	if sited, err := Sited(cmd.Process.Pid); sited || err != nil {
		t.Errorf("Sited(sleep): %v, %v; want no sites", sited, err)
	}
	if _, _, err := Entry(1 << 30); err == nil {
		t.Errorf("Entry of no process: no error")
	}
}
