package untouched

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCheck: a file read and left alone is the same; one whose bytes,
// mode or modification time changed, or that was replaced by a copy of
// itself, is not.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(p string) error
		same   bool
	}{
		{"read", func(p string) error { _, err := os.ReadFile(p); return err }, true},
		{"bytes", func(p string) error { return os.WriteFile(p, []byte("other"), 0o644) }, false},
		{"mode", func(p string) error { return os.Chmod(p, 0o600) }, false},
		{"mtime", func(p string) error { return os.Chtimes(p, time.Now(), time.Unix(1, 0)) }, false},
		{"replaced by a copy", func(p string) error {
			if err := os.WriteFile(p+".new", []byte("data"), 0o644); err != nil {
				return err
			}
			return os.Rename(p+".new", p)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
			f := Take(t, p)
			if err := c.change(p); err != nil {
				t.Fatal(err)
			}
			if got := f.Same(t); got != c.same {
				t.Errorf("Same = %v, want %v", got, c.same)
			}
		})
	}
}
