package runtime

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"ftpatch/arch"
	"ftpatch/internal/asroot"
	"ftpatch/outfile"
)

// fakeCC writes a compiler that builds in no time: it answers --version,
// and for a compile writes a few bytes to -o's file (ar takes anything)
// and appends the directory it wrote in, one line a compile, to the log
// it returns, so a test counts the builds (one work directory each).
func fakeCC(t *testing.T) (cc []string, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	script := `#!/bin/sh
case "$1" in --version) echo "fakecc 1.0"; exit 0;; esac
out=
while [ $# -gt 0 ]; do
	case "$1" in -o) out=$2; shift;; esac
	shift
done
echo "object $out" > "$out"
dirname "$out" >> ` + log + "\n"
	cc = []string{filepath.Join(dir, "fakecc")}
	if err := os.WriteFile(cc[0], []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cc, log
}

// builds counts the builds fakeCC's log records.
func builds(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	dirs := strings.Fields(string(b))
	slices.Sort(dirs)
	return len(slices.Compact(dirs))
}

// TestCacheEntry: the first use builds an entry, private, with the
// digests of what was built; later uses take it as it is. An entry that
// is not as built, or that another user could have changed (its owner,
// its mode, a link in it), is not used: it is built again in its place,
// once, and the note says why.
func TestCacheEntry(t *testing.T) {
	asroot.Need(t, "gives a cache entry's files to another user")
	cc, log := fakeCC(t)
	cache := t.TempDir()
	var notes bytes.Buffer
	o := Options{CC: cc, Arch: arch.X86_64, Cache: cache, Notes: &notes}
	ctx := context.Background()
	first, err := Cached(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	entry := filepath.Dir(first.Archive)
	if filepath.Dir(entry) != filepath.Join(cache, "ftpatch", "runtime") || first.Include != IncludeDir(entry) || first.Scratch != "" {
		t.Fatalf("Cached = %+v, want an entry under %s/ftpatch/runtime", first, cache)
	}
	for _, d := range []string{filepath.Join(cache, "ftpatch"), filepath.Dir(entry), entry} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a directory of mode 0700", d, fi.Mode(), err)
		}
	}
	sums, err := os.ReadFile(filepath.Join(entry, sumsFile))
	if err != nil || strings.Count(string(sums), "\n") != len(entryFiles) {
		t.Fatalf("%s: %q, %v", sumsFile, sums, err)
	}
	if again, err := Cached(ctx, o); err != nil || again != first || builds(t, log) != 1 || notes.Len() != 0 {
		t.Fatalf("a second use: %+v, %v, %d builds, notes %q; want the entry as it is", again, err, builds(t, log), notes.String())
	}
	archive, header := first.Archive, filepath.Join(first.Include, Header)
	n := 1
	for _, c := range []struct {
		name   string
		spoil  func() error
		reason string // in the note
	}{
		{"archive changed", func() error { return appendTo(archive, "\nextra constructor") }, errDigest.Error()},
		{"header changed, digests to match", func() error {
			if err := appendTo(header, "\n#define extra 1\n"); err != nil {
				return err
			}
			return rewriteSums(entry)
		}, errDigest.Error()},
		{"no digests (an older ftpatch's entry)", func() error { return os.Remove(filepath.Join(entry, sumsFile)) }, "no such file"},
		{"archive writable by others", func() error { return os.Chmod(archive, 0o666) }, "writable by its group and others"},
		{"archive another user's", func() error { return os.Chown(archive, asroot.Nobody, asroot.Nobody) }, "owned by uid 65534"},
		{"entry another user's", func() error { return os.Chown(entry, asroot.Nobody, asroot.Nobody) }, "owned by uid 65534"},
		{"include directory writable by its group", func() error { return os.Chmod(first.Include, 0o775) }, "writable by its group"},
		{"archive a link to the same bytes", func() error {
			other := filepath.Join(t.TempDir(), LibName)
			b, err := os.ReadFile(archive)
			if err == nil {
				err = os.WriteFile(other, b, 0o644)
			}
			if err == nil {
				err = os.Remove(archive)
			}
			if err == nil {
				err = os.Symlink(other, archive)
			}
			return err
		}, "not a regular file"},
		{"entry a link to a good copy", func() error {
			copyDir := filepath.Join(t.TempDir(), "copy")
			if err := os.Rename(entry, copyDir); err != nil {
				return err
			}
			return os.Symlink(copyDir, entry)
		}, "a symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			notes.Reset()
			if err := c.spoil(); err != nil {
				t.Fatal(err)
			}
			l, err := Cached(ctx, o)
			n++
			if err != nil || l != first || builds(t, log) != n {
				t.Fatalf("Cached = %+v, %v, %d builds; want the entry built again (build %d) in its place", l, err, builds(t, log), n)
			}
			if got := notes.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "not using the cached runtime in "+entry) || !strings.Contains(got, c.reason) {
				t.Errorf("note %q; want one line naming the entry and saying %q", got, c.reason)
			}
			if _, err := verify(entry); err != nil {
				t.Errorf("the entry built again: %v", err)
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(entry), "*.*-*")); len(left) != 0 {
				t.Errorf("left behind: %q", left)
			}
		})
	}
}

// appendTo appends text to the file path.
func appendTo(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// rewriteSums writes the entry's SHA256SUMS anew from its files as they
// are: what someone who can write the entry could do.
func rewriteSums(entry string) error {
	var b strings.Builder
	for _, name := range entryFiles {
		sum, err := digest(filepath.Join(entry, name), openOwned)
		if err != nil {
			return err
		}
		b.WriteString(hex.EncodeToString(sum[:]) + "  " + name + "\n")
	}
	return os.WriteFile(filepath.Join(entry, sumsFile), []byte(b.String()), 0o644)
}

// TestCacheUntrusted: a cache another user could change (the cache
// directory, or one above it, theirs or writable by others without the
// sticky bit; ftpatch's own directories in it theirs, or a link) is not
// used at all: the runtime is built for the one use into a private
// directory under the temporary directory, and one note says why. A
// sticky directory on the way, or as the cache itself, is fine; ftpatch's
// own directories, the user's but writable by the group, are narrowed.
func TestCacheUntrusted(t *testing.T) {
	asroot.Need(t, "makes directories owned by another user")
	const nobody = asroot.Nobody
	cc, log := fakeCC(t)
	base := asroot.PublicDir(t, "ftpatch-cache-")
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		cache   func() string // makes the cache directory, returns its path
		reason  string        // in the note; "" for a cache that is used
		narrows string        // a directory the note says was narrowed
	}{
		{"writable by others", func() string { return asroot.Dir(t, base, "open", 0o777, 0) }, "writable by its group and others", ""},
		{"writable by its group", func() string { return asroot.Dir(t, base, "group", 0o770, 0) }, "writable by its group", ""},
		{"another user's", func() string { return asroot.Dir(t, base, "theirs", 0o755, nobody) }, "owned by uid 65534", ""},
		{"under a directory others can write", func() string {
			return filepath.Join(asroot.Dir(t, asroot.Dir(t, base, "above", 0o777, 0), "cache", 0o700, 0), "sub")
		}, "writable by its group and others", ""},
		{"their ftpatch directory in it", func() string {
			d := asroot.Dir(t, base, "mine1", 0o700, 0)
			asroot.Dir(t, d, "ftpatch", 0o755, nobody)
			return d
		}, "owned by uid 65534", ""},
		{"ftpatch's directory a link", func() string {
			d := asroot.Dir(t, base, "mine2", 0o700, 0)
			os.Symlink(t.TempDir(), filepath.Join(d, "ftpatch"))
			return d
		}, "a symbolic link", ""},
		{"their link in a sticky directory", func() string {
			d := asroot.Dir(t, base, "sticky1", 0o777|os.ModeSticky, 0)
			return asroot.Link(t, d, "cache", t.TempDir(), nobody)
		}, "which protected_symlinks would not follow", ""},
		{"a sticky directory itself", func() string { return asroot.Dir(t, base, "sticky2", 0o777|os.ModeSticky, 0) }, "", ""},
		{"in a sticky directory", func() string {
			return asroot.Dir(t, asroot.Dir(t, base, "sticky3", 0o777|os.ModeSticky, 0), "cache", 0o700, 0)
		}, "", ""},
		{"ftpatch's directories writable by the group", func() string {
			d := asroot.Dir(t, base, "mine3", 0o700, 0)
			asroot.Dir(t, asroot.Dir(t, d, "ftpatch", 0o775, 0), "runtime", 0o777, 0)
			return d
		}, "", "made it drwx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var notes bytes.Buffer
			cache := c.cache()
			before := builds(t, log)
			l, err := Cached(ctx, Options{CC: cc, Cache: cache, Notes: &notes})
			if err != nil {
				t.Fatal(err)
			}
			if builds(t, log) != before+1 {
				t.Errorf("%d builds, want 1", builds(t, log)-before)
			}
			if c.reason == "" {
				if l.Scratch != "" || !strings.HasSuffix(filepath.Dir(filepath.Dir(l.Archive)), "/ftpatch/runtime") {
					t.Errorf("Cached = %+v, want the cache's entry", l)
				}
				if c.narrows == "" && notes.Len() != 0 || !strings.Contains(notes.String(), c.narrows) {
					t.Errorf("notes %q", notes.String())
				}
				return
			}
			defer os.RemoveAll(l.Scratch)
			if l.Scratch == "" || filepath.Dir(l.Archive) != l.Scratch || !strings.HasPrefix(l.Scratch, filepath.Join(os.TempDir(), "ftpatch-runtime-")) {
				t.Fatalf("Cached = %+v, want a runtime built into a private directory of the temporary directory", l)
			}
			if _, err := verify(l.Scratch); err != nil {
				t.Errorf("the runtime built for one use: %v", err)
			}
			got := notes.String()
			if strings.Count(got, "\n") != 1 || !strings.Contains(got, "not using the runtime cache in "+cache) || !strings.Contains(got, c.reason) || !strings.Contains(got, l.Scratch) {
				t.Errorf("note %q; want one line naming the cache, why (%s) and where the runtime was built", got, c.reason)
			}
		})
	}
}

// TestCacheConcurrent: builds that start together on an empty cache (as
// make -j starts compiles) build the entry once, and all of them get it.
func TestCacheConcurrent(t *testing.T) {
	cc, log := fakeCC(t)
	o := Options{CC: cc, Cache: t.TempDir()}
	const n = 6
	libs := make([]Lib, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { libs[i], errs[i] = Cached(context.Background(), o) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || libs[i] != libs[0] {
			t.Errorf("build %d: %+v, %v; want %+v", i, libs[i], errs[i], libs[0])
		}
	}
	if b := builds(t, log); b != 1 {
		t.Errorf("%d builds, want 1", b)
	}
	if _, err := verify(filepath.Dir(libs[0].Archive)); err != nil {
		t.Error(err)
	}
}

// TestInstalledTrust: an installed runtime another user could have
// changed (a file of theirs or one others can write, a directory on the
// way others can write) is not taken.
func TestInstalledTrust(t *testing.T) {
	asroot.Need(t, "gives an installed runtime's files to another user")
	for _, c := range []struct {
		name   string
		spoil  func(prefix string) error
		reason string
	}{
		{"archive another user's", func(p string) error {
			return os.Chown(filepath.Join(InstallDir(p, arch.X86_64), LibName), asroot.Nobody, asroot.Nobody)
		}, "owned by uid 65534"},
		{"module stub writable by others", func(p string) error {
			return os.Chmod(filepath.Join(InstallDir(p, arch.X86_64), ModuleLibName), 0o666)
		}, "writable by its group and others"},
		{"header's directory writable by its group", func(p string) error { return os.Chmod(InstallInclude(p), 0o775) }, "writable by its group"},
		{"prefix writable by others", func(p string) error { return os.Chmod(p, 0o777) }, "writable by its group and others"},
		{"digests writable by others", func(p string) error {
			return os.Chmod(filepath.Join(InstallDir(p, arch.X86_64), sumsFile), 0o666)
		}, "writable by its group and others"},
		{"version file another user's", func(p string) error {
			return os.Chown(filepath.Join(InstallDir(p, arch.X86_64), VersionFile), asroot.Nobody, asroot.Nobody)
		}, "owned by uid 65534"},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := t.TempDir()
			layout(t, prefix, arch.X86_64, Version())
			if err := c.spoil(prefix); err != nil {
				t.Fatal(err)
			}
			_, err := Installed(prefix, arch.X86_64)
			if !errors.Is(err, outfile.ErrUntrusted) || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("Installed: %v; want it refused: %s", err, c.reason)
			}
		})
	}
}
