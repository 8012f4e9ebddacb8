package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun: testfmt passes only when every package passed and the command
// exited 0: a failed test, a build failure, a panic or a timeout in the
// stream fails it, and so does the command's own failure with a passing
// stream; with no command it reads the stream from stdin. The command's
// stderr comes through.
func TestRun(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatal("sh is not installed")
	}
	stream := func(name string) string {
		p, err := filepath.Abs(filepath.Join("..", "..", "testfmt", "testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name   string
		argv   []string
		stdin  string // a file, when argv is empty
		ok     bool
		stderr string
	}{
		{"pass", []string{"sh", "-c", `cat "$0"`, stream("pass")}, "", true, ""},
		{"failed test", []string{"sh", "-c", `cat "$0"; exit 1`, stream("fail")}, "", false, ""},
		{"build failure", []string{"sh", "-c", `cat "$0"; exit 1`, stream("buildfail")}, "", false, ""},
		{"panic", []string{"sh", "-c", `cat "$0"; exit 1`, stream("panics")}, "", false, ""},
		{"timeout", []string{"sh", "-c", `cat "$0"; exit 1`, stream("timeout")}, "", false, ""},
		{"go test failed", []string{"sh", "-c", `cat "$0"; echo 'go: no such package' >&2; exit 1`, stream("pass")}, "", false, "go: no such package\n"},
		{"stdin pass", nil, stream("pass"), true, ""},
		{"stdin fail", nil, stream("fail"), false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdin := strings.NewReader("")
			if c.stdin != "" {
				b, err := os.ReadFile(c.stdin)
				if err != nil {
					t.Fatal(err)
				}
				stdin = strings.NewReader(string(b))
			}
			var stdout, stderr strings.Builder
			ok, err := run(c.argv, stdin, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.ok || stderr.String() != c.stderr {
				t.Errorf("ok %v, stderr %q; want %v, %q\nstdout:\n%s", ok, stderr.String(), c.ok, c.stderr, stdout.String())
			}
		})
	}
}

// TestRunNoCommand: a command that cannot be started is an error.
func TestRunNoCommand(t *testing.T) {
	var stdout, stderr strings.Builder
	if _, err := run([]string{"/nonexistent/go"}, strings.NewReader(""), &stdout, &stderr); err == nil {
		t.Error("running a command that does not exist: no error")
	}
}
