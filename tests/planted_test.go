package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ftpatch/internal/asroot"
	"ftpatch/internal/untouched"
)

// TestToolsPlantedLinks: ftpatch and recordmcount run by root never
// write through a symbolic link another user planted in a shared sticky
// directory (as /tmp is): root makes a directory of mode 1777, and in it
// links owned by nobody to root-only files (an enabled program, an
// object), as another user could. ftpatch enable -o LINK, enable LINK
// and disable LINK in place, recordmcount LINK and recordmcount -o LINK
// refuse, with exit status 1 and one line naming the link and the
// directory and saying why (the kernel's protected_symlinks rule); the
// root-only file keeps its bytes, inode, mode, owner and mtime. The same
// link owned by root, the caller, or another user's link in a
// world-writable directory without the sticky bit, is followed as the
// README says: the file it names is written, and the link stays.
func TestToolsPlantedLinks(t *testing.T) {
	t.Parallel()
	asroot.Need(t, "plants links as another user and runs the tools as root")
	need(t, x86GCC.tools...)
	work := t.TempDir()
	prog := linkEnabled(t, x86GCC, work, enableBuilds[0])
	// An object as the compiler left it, for recordmcount to record.
	fresh := t.TempDir()
	obj := buildSrc(t, x86GCC, fresh, "-pg -mfentry", true, "other.c")[0]

	// A tree nobody can walk into, holding the shared directory and
	// root's own files.
	base := asroot.PublicDir(t, "ftpatch-planted-")
	shared := asroot.Dir(t, base, "shared", 0o777|os.ModeSticky, 0)
	open := asroot.Dir(t, base, "open", 0o777, 0)
	secret := asroot.Dir(t, base, "root", 0o700, 0)
	// rootOnly copies src into root's private directory, mode 0600.
	rootOnly := func(src, name string) string {
		p := filepath.Join(secret, name)
		run(t, base, "cp", src, p)
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	refused := []struct {
		name string
		src  string // what the root-only file is a copy of
		argv func(link string) []string
	}{
		{"ftpatch enable -o LINK", prog, func(l string) []string { return []string{tool("ftpatch"), "enable", "-o", l, prog, "fib"} }},
		{"ftpatch enable LINK", prog, func(l string) []string { return []string{tool("ftpatch"), "enable", l, "fib"} }},
		{"ftpatch disable LINK", prog, func(l string) []string { return []string{tool("ftpatch"), "disable", l} }},
		{"ftpatch disable -o LINK", prog, func(l string) []string { return []string{tool("ftpatch"), "disable", "-o", l, prog} }},
		{"recordmcount LINK", obj, func(l string) []string { return []string{tool("recordmcount"), l} }},
		{"recordmcount -o LINK", obj, func(l string) []string { return []string{tool("recordmcount"), "-o", l, obj} }},
	}
	for i, c := range refused {
		target := rootOnly(c.src, "target"+string(rune('a'+i)))
		link := asroot.Link(t, shared, "link"+string(rune('a'+i)), target, nobody)
		before := untouched.Take(t, target)
		argv := c.argv(link)
		out, errOut, code, err := runStatus(base, argv...)
		if err != nil {
			t.Fatal(err)
		}
		if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and one line", c.name, code, out, errOut)
		}
		for _, w := range []string{link + ": refusing to follow a symbolic link " + link, "owned by uid 65534", "lies in " + shared,
			"sticky world-writable directory", "protected_symlinks", "runs as uid 0"} {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q does not say %q", c.name, errOut, w)
			}
		}
		before.Check(t, c.name+": the root-only file the link names")
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the link %s was replaced (%v)", c.name, link, err)
		}
	}

	// Followed: root's own link in the shared directory, and nobody's in
	// a directory without the sticky bit.
	for i, where := range []struct {
		name string
		dir  string
		uid  int
	}{{"root's link in the sticky directory", shared, 0}, {"nobody's link in a directory without the sticky bit", open, nobody}} {
		for j, c := range refused {
			if strings.Contains(c.name, "disable") {
				continue // enable covers ftpatch's writing
			}
			n := string(rune('a'+i)) + string(rune('a'+j))
			target := rootOnly(c.src, "followed"+n)
			link := asroot.Link(t, where.dir, "followed"+n, target, where.uid)
			before := untouched.Take(t, target)
			out, errOut, code, err := runStatus(base, c.argv(link)...)
			if err != nil {
				t.Fatal(err)
			}
			if code != 0 {
				t.Errorf("%s, %s: exit %d\n%s%s", where.name, c.name, code, out, errOut)
				continue
			}
			if before.Same(t) {
				t.Errorf("%s, %s: %s, which the link names, was not written", where.name, c.name, target)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s, %s: the link %s was replaced (%v)", where.name, c.name, link, err)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(target, &st); err != nil || st.Mode&0o7777 != 0o600 || st.Uid != 0 {
				t.Errorf("%s, %s: %s is mode %o owner %d, want its own 0600 and root", where.name, c.name, target, st.Mode&0o7777, st.Uid)
			}
		}
	}
}
