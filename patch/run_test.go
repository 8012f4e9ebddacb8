package patch

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"ftpatch/internal/untouched"
	"ftpatch/outfile"
)

var (
	runProgOnce sync.Once
	runProg     []byte
)

// progCopy writes a copy of one built test program to dir/name with mode
// perm, building it on first use.
func progCopy(t *testing.T, dir, name string, perm os.FileMode) string {
	t.Helper()
	runProgOnce.Do(func() {
		p := builds[0].make(t, t.TempDir())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		runProg = b
	})
	if runProg == nil {
		t.Fatal("building the test program failed")
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, runProg, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

func enableFib(t *testing.T) Request {
	return Request{Op: Enable, List: list(t, "fib"), Inputs: "list"}
}

// modeOf is the mode of the file at p, links followed.
func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// TestWriteThroughLinks: a symbolic link, as BIN or as an existing OUT,
// is followed: the file it names is replaced and the link stays a link.
// An OUT naming BIN itself is BIN in place. A dangling OUT link is
// refused rather than replaced or written through.
func TestWriteThroughLinks(t *testing.T) {
	dir := t.TempDir()
	prog := progCopy(t, dir, "prog", 0o755)
	in := untouched.Take(t, prog)
	isLink := func(p string) {
		t.Helper()
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link", p)
		}
	}

	target := progCopy(t, dir, "target", 0o700)
	outLink := filepath.Join(dir, "out-link")
	if err := os.Symlink("target", outLink); err != nil {
		t.Fatal(err)
	}
	res, err := Run(Options{Path: prog, Out: outLink, Request: enableFib(t)})
	if err != nil || res.Written != target {
		t.Fatalf("-o a link: %v, wrote %q, want %q", err, res.Written, target)
	}
	isLink(outLink)
	in.Check(t, "the patcher")
	if m := modeOf(t, target); m != 0o700 {
		t.Errorf("-o a link: the file it names has mode %v, want its own 0700", m)
	}

	// OUT names BIN through a link: in place, so a file already as asked
	// is not written, and one that changes is replaced behind the link.
	progLink := filepath.Join(dir, "prog-link")
	if err := os.Symlink(prog, progLink); err != nil {
		t.Fatal(err)
	}
	res, err = Run(Options{Path: prog, Out: progLink, Request: enableFib(t)})
	if err != nil || res.Written != prog {
		t.Fatalf("-o naming the input: %v, wrote %q, want %q", err, res.Written, prog)
	}
	isLink(progLink)
	again := untouched.Take(t, prog)
	if res, err := Run(Options{Path: progLink, Out: prog, Request: enableFib(t)}); err != nil || res.Written != "" {
		t.Errorf("-o naming the input, already as asked: %v, wrote %q", err, res.Written)
	}
	again.Check(t, "the patcher")

	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink("nowhere/prog", dangling); err != nil {
		t.Fatal(err)
	}
	before := untouched.Take(t, prog)
	_, err = Run(Options{Path: prog, Out: dangling, Request: enableFib(t)})
	if err == nil || !strings.HasPrefix(err.Error(), dangling+": a symbolic link to nowhere/prog, which does not exist") {
		t.Errorf("-o a dangling link: %v", err)
	}
	isLink(dangling)
	before.Check(t, "the patcher")
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("-o a dangling link created its target")
	}
}

// TestKeepsMode: in place, and into an existing OUT, the file replaced
// keeps its own mode, setuid and setgid included; a new OUT gets BIN's
// permission bits without setuid or setgid, as a copy would, so ftpatch
// never makes a privileged file that was not one.
func TestKeepsMode(t *testing.T) {
	dir := t.TempDir()
	suid := 0o750 | os.ModeSetuid | os.ModeSetgid
	prog := progCopy(t, dir, "prog", suid)
	if _, err := Run(Options{Path: prog, Request: enableFib(t)}); err != nil {
		t.Fatal(err)
	}
	if m := modeOf(t, prog); m != suid {
		t.Errorf("in place: mode %v, want %v", m, suid)
	}
	out := filepath.Join(dir, "new")
	if _, err := Run(Options{Path: prog, Out: out, Request: enableFib(t)}); err != nil {
		t.Fatal(err)
	}
	if m := modeOf(t, out); m != 0o750 {
		t.Errorf("a new OUT: mode %v, want 0750", m)
	}
	existing := progCopy(t, dir, "existing", 0o711|os.ModeSetuid)
	if _, err := Run(Options{Path: prog, Out: existing, Request: enableFib(t)}); err != nil {
		t.Fatal(err)
	}
	if m := modeOf(t, existing); m != 0o711|os.ModeSetuid {
		t.Errorf("an existing OUT: mode %v, want its own u+s,0711", m)
	}
}

// TestKeepsOwner: as root, the file replaced keeps its owner and group
// (and with them setuid), whoever they are.
func TestKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file another owner needs root")
	}
	dir := t.TempDir()
	prog := progCopy(t, dir, "prog", 0o755)
	if err := os.Chown(prog, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(prog, 0o755|os.ModeSetuid); err != nil { // chown cleared it
		t.Fatal(err)
	}
	if _, err := Run(Options{Path: prog, Request: enableFib(t)}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(prog)
	if err != nil {
		t.Fatal(err)
	}
	sys := fi.Sys().(*syscall.Stat_t)
	if sys.Uid != 1234 || sys.Gid != 5678 || fi.Mode() != 0o755|os.ModeSetuid {
		t.Errorf("in place as root: owner %d:%d mode %v, want 1234:5678 u+s,0755", sys.Uid, sys.Gid, fi.Mode())
	}
}

// TestRefused: what an atomic replacement would lose is refused before
// any work, with an error naming the file, the problem and what to do;
// every file is left as it was and nothing is added to the directory.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		// setup makes the case: OUT ("" in place), and other files
		// that must not change.
		setup    func(t *testing.T, dir, prog string) (out string, keep []string)
		outNamed bool // the error names OUT, not BIN
		is       error
		want     []string // in the message, which starts with the path named
	}{
		{"in place with hard links", func(t *testing.T, dir, prog string) (string, []string) {
			other := filepath.Join(dir, "other-name")
			if err := os.Link(prog, other); err != nil {
				t.Fatal(err)
			}
			return "", []string{other}
		}, false, outfile.ErrLinks, []string{"the file has other hard links (2 names for one file)", "leave the others naming the old contents",
			"write a new file with -o OUT", "cp PROG PROG.new && mv PROG.new PROG"}},
		{"OUT with hard links", func(t *testing.T, dir, prog string) (string, []string) {
			out := progCopy(t, dir, "out", 0o755)
			other := filepath.Join(dir, "other-name")
			if err := os.Link(out, other); err != nil {
				t.Fatal(err)
			}
			return out, []string{out, other}
		}, true, outfile.ErrLinks, []string{"(2 names for one file)", "remove DIR/out first or choose another OUT"}},
		{"OUT a hard link of BIN", func(t *testing.T, dir, prog string) (string, []string) {
			out := filepath.Join(dir, "out")
			if err := os.Link(prog, out); err != nil {
				t.Fatal(err)
			}
			return out, nil
		}, false, outfile.ErrLinks, []string{"(2 names for one file)", "-o OUT"}},
		{"OUT a directory", func(t *testing.T, dir, prog string) (string, []string) {
			out := filepath.Join(dir, "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			return out, nil
		}, true, nil, []string{"not a regular file"}},
		{"OUT a FIFO", func(t *testing.T, dir, prog string) (string, []string) {
			out := filepath.Join(dir, "out")
			if err := syscall.Mkfifo(out, 0o644); err != nil {
				t.Fatal(err)
			}
			return out, nil
		}, true, nil, []string{"not a regular file"}},
		{"OUT in a missing directory", func(t *testing.T, dir, prog string) (string, []string) {
			return filepath.Join(dir, "nosuch", "out"), nil
		}, true, nil, []string{"directory DIR/nosuch: no such file or directory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := progCopy(t, dir, "prog", 0o755)
			out, keep := c.setup(t, dir, prog)
			var snaps []untouched.File
			for _, p := range append([]string{prog}, keep...) {
				snaps = append(snaps, untouched.Take(t, p))
			}
			ents, _ := os.ReadDir(dir)
			_, err := Run(Options{Path: prog, Out: out, Request: enableFib(t)})
			named := prog
			if c.outNamed {
				named = out
			}
			if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.HasPrefix(err.Error(), named+": ") {
				t.Fatalf("error %v\nwant one starting with %q, matching %v", err, named, c.is)
			}
			for _, w := range c.want {
				if w = strings.NewReplacer("DIR", dir, "PROG", prog).Replace(w); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			for _, s := range snaps {
				s.Check(t, "the patcher")
			}
			if after, _ := os.ReadDir(dir); len(after) != len(ents) {
				t.Errorf("the directory held %d entries, now %d", len(ents), len(after))
			}
		})
	}
}

// TestChangedOut: an existing OUT that someone else writes, or an OUT
// someone else creates, while ftpatch works is left as they made it.
func TestChangedOut(t *testing.T) {
	dir := t.TempDir()
	prog := progCopy(t, dir, "prog", 0o755)
	theirs := []byte("their file")
	for _, existed := range []bool{true, false} {
		out := filepath.Join(dir, "out")
		os.Remove(out)
		if existed {
			progCopy(t, dir, "out", 0o755)
		}
		_, err := Run(Options{Path: prog, Out: out, Request: enableFib(t),
			beforeCommit: func() {
				os.Remove(out)
				if err := os.WriteFile(out, theirs, 0o644); err != nil {
					t.Fatal(err)
				}
			}})
		if !errors.Is(err, outfile.ErrChanged) || !strings.HasPrefix(err.Error(), out+": ") {
			t.Errorf("OUT existed %v: %v, want ErrChanged naming %s", existed, err, out)
		}
		if b, _ := os.ReadFile(out); !bytes.Equal(b, theirs) {
			t.Errorf("OUT existed %v: the other writer's file was replaced", existed)
		}
	}
}
