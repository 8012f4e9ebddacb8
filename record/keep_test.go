package record_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"ftpatch/internal/asroot"
	"ftpatch/outfile"
	"ftpatch/record"
)

// TestFileKeeps: recordmcount in place replaces an object by the rules
// ftpatch enable follows (package outfile), on both of its write paths
// (a small object written at the end, a large one started before its
// sites are known): through a symbolic link the file it names is
// rewritten and the link stays; the object keeps its mode, owner (as
// root, any owner) and extended attributes; an existing -o OUT keeps its
// own mode; an object with other hard links is refused, every name left
// as it was, nothing added to the directory. (A write-protected object,
// refused to a user who is not root, is TestRecordmcountAsUser's.)
func TestFileKeeps(t *testing.T) {
	asroot.Need(t, "gives an object another owner")
	small, err := os.ReadFile("../cmd/recordmcount/testdata/good-x86_64-pg-mfentry.o")
	if err != nil {
		t.Fatal(err)
	}
	large, err := os.ReadFile(largeObject(t, t.TempDir(), 20000))
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []struct {
		name string
		data []byte
	}{{"small", small}, {"large", large}} {
		// place writes the object to dir/name with mode perm.
		place := func(t *testing.T, dir, name string, perm os.FileMode) string {
			t.Helper()
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, obj.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, perm); err != nil {
				t.Fatal(err)
			}
			return p
		}
		t.Run(obj.name+"/link", func(t *testing.T) {
			dir := t.TempDir()
			target := place(t, dir, "target.o", 0o644)
			link := filepath.Join(dir, "link.o")
			if err := os.Symlink("target.o", link); err != nil {
				t.Fatal(err)
			}
			if res := record.File(link, "", record.Options{}); res.Err != nil || !res.Changed {
				t.Fatalf("through a link: %v, changed %v", res.Err, res.Changed)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is no longer a symbolic link (%v)", link, err)
			}
			if b, _ := os.ReadFile(target); bytes.Equal(b, obj.data) {
				t.Errorf("%s, which the link names, was not rewritten", target)
			}
		})
		t.Run(obj.name+"/attributes", func(t *testing.T) {
			dir := t.TempDir()
			p := place(t, dir, "x.o", 0o640)
			if err := os.Chown(p, 1234, 5678); err != nil {
				t.Fatal(err)
			}
			if err := unix.Setxattr(p, "user.origin", []byte("the build"), 0); err != nil {
				t.Fatalf("setxattr: %v (the test needs a file system with extended attributes)", err)
			}
			if res := record.File(p, "", record.Options{}); res.Err != nil || !res.Changed {
				t.Fatalf("%v, changed %v", res.Err, res.Changed)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode() != 0o640 || st.Uid != 1234 || st.Gid != 5678 {
				t.Errorf("mode %v owner %d:%d, want -rw-r----- 1234:5678", fi.Mode(), st.Uid, st.Gid)
			}
			v := make([]byte, 64)
			if n, err := unix.Getxattr(p, "user.origin", v); err != nil || string(v[:n]) != "the build" {
				t.Errorf("user.origin: %q, %v; want it kept", v[:max(n, 0)], err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("the directory holds %d entries, want the object alone", len(ents))
			}
		})
		t.Run(obj.name+"/existing-out", func(t *testing.T) {
			dir := t.TempDir()
			in := place(t, dir, "in.o", 0o644)
			out := place(t, dir, "out.o", 0o600)
			if res := record.File(in, out, record.Options{}); res.Err != nil {
				t.Fatal(res.Err)
			}
			if fi, err := os.Stat(out); err != nil || fi.Mode() != 0o600 {
				t.Errorf("-o an existing file: %v, %v; want its own mode -rw-------", fi.Mode(), err)
			}
		})
		for _, c := range []struct {
			name  string
			setup func(t *testing.T, dir, p string) []string // more names that must not change
			is    error
			want  string
		}{
			{"hard-link", func(t *testing.T, dir, p string) []string {
				other := filepath.Join(dir, "other.o")
				if err := os.Link(p, other); err != nil {
					t.Fatal(err)
				}
				return []string{other}
			}, outfile.ErrLinks, "the file has other hard links (2 names for one file)"},
		} {
			t.Run(obj.name+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				p := place(t, dir, "x.o", 0o644)
				names := append([]string{p}, c.setup(t, dir, p)...)
				var before []os.FileInfo
				for _, n := range names {
					fi, err := os.Stat(n)
					if err != nil {
						t.Fatal(err)
					}
					before = append(before, fi)
				}
				ents, _ := os.ReadDir(dir)
				res := record.File(p, "", record.Options{})
				if !errors.Is(res.Err, c.is) || !strings.HasPrefix(res.Err.Error(), p+": ") || !strings.Contains(res.Err.Error(), c.want) {
					t.Errorf("%v; want %v naming %s and saying %q", res.Err, c.is, p, c.want)
				}
				for i, n := range names {
					b, _ := os.ReadFile(n)
					fi, err := os.Stat(n)
					if err != nil || !bytes.Equal(b, obj.data) || !os.SameFile(fi, before[i]) || fi.Mode() != before[i].Mode() || !fi.ModTime().Equal(before[i].ModTime()) {
						t.Errorf("%s changed", n)
					}
				}
				if after, _ := os.ReadDir(dir); len(after) != len(ents) {
					t.Errorf("the directory held %d entries, now %d", len(ents), len(after))
				}
			})
		}
	}
}
