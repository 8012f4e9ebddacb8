package views

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestShellQuote: a command line as info writes it is what bash reads
// back, argument for argument, and holds no control character: bare
// words, single quotes, and $'...' for arguments with characters that
// are not printable (a terminal's escape sequences, a newline, a byte
// that is not UTF-8).
func TestShellQuote(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("views: the test reads command lines back with bash: %v", err)
	}
	args := []string{"./prog", "-x", "", "two words", "it's", `back\slash`, "\x1b[2J", "clip\x1b]52;c;eA==\a", "new\nline", "bad\xff", "c1\u009b", "quote'\x1b\\"}
	got := shellQuote(args)
	if strings.ContainsAny(got, "\x1b\a\n\xff\u009b") {
		t.Errorf("a control character in %q", got)
	}
	want := `./prog -x '' 'two words' 'it'\''s' 'back\slash' $'\x1b[2J' $'clip\x1b]52;c;eA==\a' $'new\nline' $'bad\xff' $'c1\u009b' $'quote\'\x1b\\'`
	if got != want {
		t.Errorf("shellQuote:\n got %s\nwant %s", got, want)
	}
	// Each argument back, NUL-terminated; \u in a UTF-8 locale.
	cmd := exec.Command(bash, "-c", "printf '%s\\0' "+got)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	back := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if strings.Join(back, "\x00") != strings.Join(args, "\x00") {
		t.Errorf("bash read back %q, want %q", back, args)
	}
}
