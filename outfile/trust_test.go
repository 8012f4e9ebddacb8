package outfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/asroot"
	"ftpatch/outfile"
)

// TestTrusted: a path is trusted when every directory on it and the file
// are root's or the caller's and writable by no one else, a sticky
// directory (/tmp) excepted, whose names others cannot take away; another
// user's directory or file, a directory its group or others can write
// (without the sticky bit), a file they can write even in a sticky
// directory, and a link another user planted in a sticky directory are
// not. The path is given back with its links followed, so that what was
// checked is what is used.
func TestTrusted(t *testing.T) {
	asroot.Need(t, "makes directories owned by another user")
	const nobody = asroot.Nobody
	base := asroot.PublicDir(t, "ftpatch-trusted-")
	mine := asroot.Dir(t, base, "mine", 0o755, 0)
	writeFile(t, mine, "file", "x")
	group := asroot.Dir(t, base, "group", 0o775, 0)
	open := asroot.Dir(t, base, "open", 0o777, 0)
	theirs := asroot.Dir(t, base, "theirs", 0o755, nobody)
	shared := asroot.Dir(t, base, "shared", 0o777|os.ModeSticky, 0)
	kept := asroot.Dir(t, shared, "kept", 0o700, 0)
	taken := asroot.Dir(t, shared, "taken", 0o700, nobody)
	for _, d := range []string{group, open, theirs, kept, taken} {
		writeFile(t, d, "file", "x")
	}
	if err := os.Chmod(filepath.Join(kept, "file"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mine, "wide", "x")
	if err := os.Chmod(filepath.Join(mine, "wide"), 0o664); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mine, "theirs", "x")
	if err := os.Chown(filepath.Join(mine, "theirs"), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	writeFile(t, shared, "sharedfile", "x")
	if err := os.Chmod(filepath.Join(shared, "sharedfile"), 0o666); err != nil {
		t.Fatal(err)
	}
	asroot.Link(t, mine, "link", filepath.Join(kept, "file"), 0)
	asroot.Link(t, shared, "planted", filepath.Join(mine, "file"), nobody)
	asroot.Link(t, mine, "toopen", open, 0)
	for _, c := range []struct {
		path string
		want string // the path given back; "" for an error
		bad  string // the file or directory the error names
		why  string // in the error
	}{
		{path: filepath.Join(mine, "file"), want: filepath.Join(mine, "file")},
		{path: mine, want: mine},
		{path: shared, want: shared},
		{path: filepath.Join(kept, "file"), want: filepath.Join(kept, "file")},
		{path: filepath.Join(mine, "link"), want: filepath.Join(kept, "file")},
		{path: filepath.Join(mine, "..", "mine", "file"), want: filepath.Join(mine, "file")},
		{path: filepath.Join(group, "file"), bad: group, why: "writable by its group (drwxrwxr-x)"},
		{path: filepath.Join(open, "file"), bad: open, why: "writable by its group and others (drwxrwxrwx)"},
		{path: filepath.Join(mine, "toopen", "file"), bad: open, why: "writable by its group and others"},
		{path: filepath.Join(theirs, "file"), bad: theirs, why: "owned by uid 65534"},
		{path: filepath.Join(taken, "file"), bad: taken, why: "owned by uid 65534"},
		{path: filepath.Join(mine, "wide"), bad: filepath.Join(mine, "wide"), why: "writable by its group (-rw-rw-r--)"},
		{path: filepath.Join(mine, "theirs"), bad: filepath.Join(mine, "theirs"), why: "owned by uid 65534"},
		{path: filepath.Join(shared, "sharedfile"), bad: filepath.Join(shared, "sharedfile"), why: "writable by its group and others"},
		{path: filepath.Join(shared, "planted"), bad: filepath.Join(shared, "planted"), why: "a symbolic link of uid 65534 in " + shared},
	} {
		got, err := outfile.Trusted(c.path)
		switch {
		case c.want != "":
			if err != nil || got != c.want {
				t.Errorf("Trusted(%s) = %q, %v; want %q", c.path, got, err, c.want)
			}
		case c.bad != "":
			var te *outfile.TrustError
			if !errors.As(err, &te) || te.Path != c.bad || !strings.Contains(te.Why, c.why) || !errors.Is(err, outfile.ErrUntrusted) {
				t.Errorf("Trusted(%s) = %q, %v; want a *TrustError naming %s: %s", c.path, got, err, c.bad, c.why)
			}
		default:
			if err == nil || !strings.Contains(err.Error(), c.why) {
				t.Errorf("Trusted(%s) = %q, %v; want an error saying %q", c.path, got, err, c.why)
			}
		}
	}
}

// TestCheckOwned: a private store's files and directories are the
// caller's own (not even root's, for another caller), writable by no one
// else, and not links.
func TestCheckOwned(t *testing.T) {
	asroot.Need(t, "makes files owned by another user")
	dir := t.TempDir()
	writeFile(t, dir, "mine", "x")
	writeFile(t, dir, "wide", "x")
	os.Chmod(filepath.Join(dir, "wide"), 0o646)
	writeFile(t, dir, "theirs", "x")
	os.Chown(filepath.Join(dir, "theirs"), asroot.Nobody, asroot.Nobody)
	asroot.Link(t, dir, "link", "mine", 0)
	for name, why := range map[string]string{
		"mine": "", "wide": "writable by others (-rw-r--rw-)", "theirs": "owned by uid 65534", "link": "a symbolic link",
	} {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		err = outfile.CheckOwned(p, fi)
		if why == "" && err != nil || why != "" && (err == nil || !strings.Contains(err.Error(), why) || !errors.Is(err, outfile.ErrUntrusted)) {
			t.Errorf("CheckOwned(%s) = %v; want %q", name, err, why)
		}
	}
}
