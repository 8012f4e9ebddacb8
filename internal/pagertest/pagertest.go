// Package pagertest makes stand-in pagers for the tests of paged output:
// shell scripts that record how they were run and what they were given,
// or that quit at once as a user who quits the pager would.
package pagertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a stand-in pager's script: it records its arguments (each
// in brackets), LESS (or "unset") and its whole input in the file REC.
const recorder = `#!/bin/sh
{ printf 'args:'; printf ' [%s]' "$@"; printf '\nLESS=%s\n' "${LESS-unset}"; cat; } > REC
`

// Recorder writes dir/name, a stand-in pager that records into
// dir/name.rec (Read reads it back).
func Recorder(t testing.TB, dir, name string) {
	t.Helper()
	script := strings.Replace(recorder, "REC", filepath.Join(dir, name+".rec"), 1)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// Quitter writes dir/name, a stand-in pager that exits at once without
// reading anything: a user who quits the pager straight away.
func Quitter(t testing.TB, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A Run is what a Recorder recorded of its run.
type Run struct {
	Args  string // "[-FRX]": each argument in brackets, space-separated; "[]" for none
	Less  string // LESS in its environment, "unset" when it had none
	Input string // all it read
}

// Read returns what the Recorder dir/name recorded, and false when it
// did not run (since Forget).
func Read(t testing.TB, dir, name string) (Run, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".rec"))
	if os.IsNotExist(err) {
		return Run{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	args, rest, _ := strings.Cut(string(b), "\n")
	less, input, _ := strings.Cut(rest, "\n")
	return Run{Args: strings.TrimPrefix(strings.TrimPrefix(args, "args:"), " "), Less: strings.TrimPrefix(less, "LESS="), Input: input}, true
}

// Forget removes what the Recorder dir/name recorded, so Read tells
// whether it runs again.
func Forget(t testing.TB, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name+".rec")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
