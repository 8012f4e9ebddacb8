package outfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ftpatch/internal/asroot"
	"ftpatch/outfile"
)

// TestResolve: where no link is protected, Resolve agrees with
// filepath.EvalSymlinks (absolute and relative links, chains, "..", a
// link to a directory in the middle); a missing last component gives the
// path a new file would have, with ErrNotExist; a loop, a file used as a
// directory and a missing directory are errors.
func TestResolve(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "file", "x")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub"), "inner", "y")
	for name, to := range map[string]string{
		"rel":      "file",
		"abs":      filepath.Join(dir, "file"),
		"chain":    "rel",
		"subdir":   "sub",
		"up":       "sub/../file",
		"back":     "../" + filepath.Base(dir) + "/file",
		"loop1":    "loop2",
		"loop2":    "loop1",
		"dangling": "sub/none",
		"sub/out":  "../file",
	} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path string
		want string // "" for EvalSymlinks's answer
		err  error
	}{
		{path: "file"}, {path: "rel"}, {path: "abs"}, {path: "chain"}, {path: "up"}, {path: "back"},
		{path: "subdir/inner"}, {path: "subdir/../rel"}, {path: "sub/out"}, {path: "subdir/out"},
		{path: "./subdir//inner/"},
		{path: "new", want: "new", err: fs.ErrNotExist},
		{path: "subdir/new", want: "sub/new", err: fs.ErrNotExist},
		{path: "dangling", want: "sub/none", err: fs.ErrNotExist},
		{path: "loop1", err: syscall.ELOOP},
		{path: "file/x", err: syscall.ENOTDIR},
		{path: "nosuch/x", err: fs.ErrNotExist},
	} {
		p := filepath.Join(dir, c.path)
		got, err := outfile.Resolve(p)
		want := c.want
		if want == "" && c.err == nil {
			if want, err = filepath.EvalSymlinks(p); err != nil {
				t.Fatal(err)
			}
		} else if want != "" {
			want = filepath.Join(dir, want)
		}
		if got != want || !errors.Is(err, c.err) {
			t.Errorf("Resolve(%s) = %q, %v; want %q, %v", c.path, got, err, want, c.err)
		}
	}
	// A relative path resolves against the working directory, and stays
	// relative.
	t.Chdir(dir)
	if got, err := outfile.Resolve("chain"); got != "file" || err != nil {
		t.Errorf(`Resolve("chain") in its directory = %q, %v; want "file"`, got, err)
	}
}

// TestProtectedLinks: Resolve and Plan follow a link only where the
// kernel's protected_symlinks rule would. Root (as CI runs) makes a
// sticky world-writable directory, as /tmp is, and links in it owned by
// another user (nobody), by root and by the directory's owner, and a
// world-writable directory without the sticky bit: another user's link in
// the sticky directory is refused, as the last component or in the
// middle of a path, with an error naming the link, the directory and
// why; the others are followed.
func TestProtectedLinks(t *testing.T) {
	asroot.Need(t, "makes links owned by another user")
	const nobody = asroot.Nobody
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := writeFile(t, base, "target", "root's own")
	if err := os.Chmod(target, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	shared := asroot.Dir(t, base, "shared", 0o777|os.ModeSticky, 0)
	theirs := asroot.Dir(t, base, "theirs", 0o777|os.ModeSticky, nobody)
	open := asroot.Dir(t, base, "open", 0o777, 0)
	planted := asroot.Link(t, shared, "planted", target, nobody)
	plantedDir := asroot.Link(t, shared, "planted-dir", filepath.Join(base, "real"), nobody)
	mine := asroot.Link(t, shared, "mine", target, 0)
	owners := asroot.Link(t, theirs, "owners", target, nobody)
	unsticky := asroot.Link(t, open, "planted", target, nobody)

	for _, c := range []struct {
		path    string
		refused string // the link refused, or "" when followed
		want    string
	}{
		{planted, planted, ""},
		{filepath.Join(plantedDir, "new"), plantedDir, ""},
		{mine, "", target},
		{owners, "", target},
		{unsticky, "", target},
	} {
		got, err := outfile.Resolve(c.path)
		if c.refused == "" {
			if err != nil || got != c.want {
				t.Errorf("Resolve(%s) = %q, %v; want %s", c.path, got, err, c.want)
			}
			continue
		}
		var le *outfile.LinkError
		if !errors.As(err, &le) || !errors.Is(err, outfile.ErrProtectedLink) || le.Link != c.refused || le.Dir != shared {
			t.Errorf("Resolve(%s) = %q, %v; want the link %s in %s refused", c.path, got, err, c.refused, shared)
			continue
		}
		for _, w := range []string{c.refused, shared, "owned by uid 65534", "sticky world-writable", "protected_symlinks", "runs as uid 0"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Resolve(%s): error %q does not say %q", c.path, err, w)
			}
		}
	}

	// Plan refuses the planted link as an output and in place, naming it,
	// and follows root's own.
	in := writeFile(t, base, "in", "input")
	for _, args := range [][2]string{{in, planted}, {planted, ""}, {in, filepath.Join(plantedDir, "new")}} {
		named := args[1]
		if named == "" {
			named = args[0]
		}
		if _, err := outfile.Plan(args[0], args[1]); !errors.Is(err, outfile.ErrProtectedLink) || !strings.HasPrefix(err.Error(), named+": ") {
			t.Errorf("Plan(%q, %q): %v, want the planted link refused, naming %s", args[0], args[1], err, named)
		}
	}
	if o, err := outfile.Plan(in, mine); err != nil || o.Path != target || o.InPlace {
		t.Errorf("Plan(in, root's link): %+v, %v; want its target %s", o, err, target)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "root's own" {
		t.Errorf("the target changed: %q, %v", b, err)
	}
}
