// Package asroot holds what the tests that must run as root share (CI
// runs the tests as root): the check that they do, and the directories
// and symbolic links other users would make, made by root on their
// behalf, for the tests of the tools' link and ownership rules.
package asroot

import (
	"os"
	"path/filepath"
	"testing"
)

// Nobody is the uid (and gid) of the unprivileged user the tests make
// files for.
const Nobody = 65534

// Need fails t unless it runs as root; why says what the test does that
// needs it ("makes links owned by another user").
func Need(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test %s: run it as root (CI does)", why)
	}
}

// PublicDir makes a new directory that every user can walk into (mode
// 0755) in the system's temporary directory, named from pattern as
// os.MkdirTemp names it, and removes it at the end of the test: another
// user cannot reach what lies under t.TempDir, whose parent is private.
func PublicDir(t testing.TB, pattern string) string {
	t.Helper()
	base, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

// Dir makes the directory dir/name with mode (set after creation, so the
// umask does not narrow it, and sticky and other bits stay), owned by
// uid, and returns its path.
func Dir(t testing.TB, dir, name string, mode os.FileMode, uid int) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
	return d
}

// Link makes the symbolic link dir/name -> to, owned by uid (lchown: the
// link itself, as if that user had planted it), and returns its path.
func Link(t testing.TB, dir, name, to string, uid int) string {
	t.Helper()
	l := filepath.Join(dir, name)
	if err := os.Symlink(to, l); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(l, uid, uid); err != nil {
		t.Fatal(err)
	}
	return l
}
