package untouched

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestTree: a tree read and left alone has no differences; a file
// created, removed, renamed or written, a link retargeted, is one each,
// named; a skipped subtree is not looked at.
func TestTree(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(root string) error
		want   []string
	}{
		{"read", func(root string) error { _, err := os.ReadFile(filepath.Join(root, "a")); return err }, nil},
		{"created", func(root string) error { return os.WriteFile(filepath.Join(root, "d", "new"), nil, 0o600) }, []string{"d/new was created"}},
		{"removed", func(root string) error { return os.Remove(filepath.Join(root, "a")) }, []string{"a was removed"}},
		{"renamed", func(root string) error { return os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")) }, []string{"b was created", "a was removed"}},
		{"written", func(root string) error { return os.WriteFile(filepath.Join(root, "a"), []byte("A"), 0o644) }, []string{"a changed (contents equal false"}},
		{"link", func(root string) error {
			os.Remove(filepath.Join(root, "l"))
			return os.Symlink("elsewhere", filepath.Join(root, "l"))
		}, []string{"l changed (contents equal false"}},
		{"in a skipped subtree", func(root string) error { return os.WriteFile(filepath.Join(root, "skip", "x"), nil, 0o600) }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"d", "skip"} {
				if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("a", filepath.Join(root, "l")); err != nil {
				t.Fatal(err)
			}
			before := TakeTree(t, root, "skip")
			if err := c.change(root); err != nil {
				t.Fatal(err)
			}
			got := before.Diff(TakeTree(t, root, "skip"))
			// A change in a directory changes the directory too: only
			// the entries below root are asked about.
			got = slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, ". ") || strings.HasPrefix(s, "d changed") })
			if len(got) != len(c.want) {
				t.Fatalf("Diff = %q, want %d lines like %q", got, len(c.want), c.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], c.want[i]) {
					t.Errorf("Diff[%d] = %q, want it to start %q", i, got[i], c.want[i])
				}
			}
		})
	}
}
