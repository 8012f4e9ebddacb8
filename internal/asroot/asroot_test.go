package asroot

import (
	"os"
	"syscall"
	"testing"
)

// TestDirLink: Dir makes a directory with exactly the mode asked for
// (sticky bit included, whatever the umask) and owner; Link makes a link
// owned by the user given, pointing where it was told.
func TestDirLink(t *testing.T) {
	Need(t, "gives a directory and a link to another user")
	base := t.TempDir()
	d := Dir(t, base, "shared", 0o777|os.ModeSticky, Nobody)
	fi, err := os.Stat(d)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != os.ModeDir|os.ModeSticky|0o777 || fi.Sys().(*syscall.Stat_t).Uid != Nobody {
		t.Errorf("Dir: mode %v, uid %d; want drwxrwxrwt, uid %d", fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid, Nobody)
	}
	l := Link(t, d, "planted", "/etc/passwd", Nobody)
	li, err := os.Lstat(l)
	if err != nil {
		t.Fatal(err)
	}
	to, err := os.Readlink(l)
	if err != nil || to != "/etc/passwd" || li.Sys().(*syscall.Stat_t).Uid != Nobody {
		t.Errorf("Link: -> %q (%v), uid %d; want -> /etc/passwd, uid %d", to, err, li.Sys().(*syscall.Stat_t).Uid, Nobody)
	}
}
