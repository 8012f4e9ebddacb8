package outfile_test

import (
	"debug/elf"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"ftpatch/elfx"
	"ftpatch/infile"
	"ftpatch/outfile"
)

// TestWriteFile: the file appears whole with the mode asked for, nothing
// else is left in the directory, and a failed write leaves what was there
// untouched.
func TestWriteFile(t *testing.T) {
	t.Run("new", func(t *testing.T) {
		for _, mode := range []fs.FileMode{0o640, 0o755, 0o600} {
			dir := t.TempDir()
			p := filepath.Join(dir, "out.o")
			if err := outfile.WriteFile(p, mode, []byte("new")); err != nil {
				t.Fatal(err)
			}
			checkOnly(t, dir, "out.o", "new", mode)
		}
	})
	t.Run("replace", func(t *testing.T) {
		dir := t.TempDir()
		p := writeFile(t, dir, "out.o", "old contents, longer than the new")
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := outfile.WriteFile(p, 0o644, []byte("ne"), nil, []byte("w")); err != nil {
			t.Fatal(err)
		}
		checkOnly(t, dir, "out.o", "new", 0o644)
	})
	t.Run("missing-directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := outfile.WriteFile(filepath.Join(dir, "no-such-dir", "out.o"), 0o644, []byte("new")); err == nil {
			t.Error("writing into a missing directory succeeded")
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("left %d entries behind", len(ents))
		}
	})
	t.Run("parent-is-a-file", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "x.o", "old")
		if err := outfile.WriteFile(filepath.Join(dir, "x.o", "out.o"), 0o644, []byte("new")); err == nil {
			t.Error("writing under a regular file succeeded")
		}
		checkOnly(t, dir, "x.o", "old", 0o644)
	})
	t.Run("target-is-a-directory", func(t *testing.T) {
		// The rename fails after the temporary file is written: the
		// temporary must go, and the directory stay as it was.
		dir := t.TempDir()
		target := filepath.Join(dir, "out.o")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, target, "inside", "kept")
		if err := outfile.WriteFile(target, 0o644, []byte("new")); err == nil {
			t.Error("writing over a directory succeeded")
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "out.o" || !ents[0].IsDir() {
			t.Errorf("directory now holds %v, want the out.o directory alone", ents)
		}
		checkOnly(t, target, "inside", "kept", 0o644)
	})
}

// TestWriteChecked: the last check runs once, after the new contents are
// written and synced and before the rename: a file changed by then is
// left as the other writer made it (ErrChanged), with no temporary; a
// failing fill leaves the old file too; otherwise the new file is in
// place with the old one's mode.
func TestWriteChecked(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "out.o", "old")
	fill := func(w io.Writer) error {
		for _, s := range []string{"n", "e", "w"} { // pieces, as a patcher writes them
			if _, err := io.WriteString(w, s); err != nil {
				return err
			}
		}
		return nil
	}
	o, err := outfile.Plan(p, "")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	o.BeforeCheck = func() {
		calls++
		if ents, _ := os.ReadDir(dir); len(ents) != 2 {
			t.Errorf("at the check the directory holds %d entries, want the old file and the temporary", len(ents))
		}
		if err := os.WriteFile(p, []byte("theirs"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Write(fill); !errors.Is(err, outfile.ErrChanged) || calls != 1 || !strings.HasPrefix(err.Error(), p+": ") {
		t.Errorf("Write over a file changed meanwhile: %v after %d calls, want ErrChanged naming %s", err, calls, p)
	}
	checkOnly(t, dir, "out.o", "theirs", 0o644)

	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	errFill := errors.New("fill failed")
	if o, err = outfile.Plan(p, ""); err != nil {
		t.Fatal(err)
	}
	if err := o.Write(func(w io.Writer) error { return errFill }); err != errFill {
		t.Errorf("a failing fill: %v, want its own error", err)
	}
	checkOnly(t, dir, "out.o", "theirs", 0o751)
	if o, err = outfile.Plan(p, ""); err != nil {
		t.Fatal(err)
	}
	if err := o.Write(fill); err != nil {
		t.Fatal(err)
	}
	checkOnly(t, dir, "out.o", "new", 0o751)
}

// TestPendingReplace: an output started with the input's bytes and
// finished with an editor's chunks is exactly the edited file, with the
// old file's mode; a shorter result is not padded with the rest of the
// input; Abort and a failed Finish leave the old file and no temporary.
func TestPendingReplace(t *testing.T) {
	plan := func(t *testing.T, p string) *outfile.Output {
		t.Helper()
		o, err := outfile.Plan(p, "")
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	t.Run("finish-with-chunks", func(t *testing.T) {
		dir := t.TempDir()
		src, err := os.ReadFile("../elfx/testdata/funcs-x86_64-pg-mfentry.o")
		if err != nil {
			t.Fatal(err)
		}
		p := writeFile(t, dir, "x.o", string(src))
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
		f, err := elfx.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ed, _ := f.Edit()
		ed.AddSection(elfx.Section{Name: ".added", Type: elf.SHT_PROGBITS, Align: 8}, []byte("added"))
		want := ed.Bytes()
		pend, err := plan(t, p).Start(f.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := pend.Finish(ed.Chunks()...); err != nil {
			t.Fatal(err)
		}
		checkOnly(t, dir, "x.o", string(want), 0o640)
	})
	t.Run("finish-shorter", func(t *testing.T) {
		dir := t.TempDir()
		p := writeFile(t, dir, "x.o", "old")
		pend, err := plan(t, p).Start([]byte("a long speculative prefix"))
		if err != nil {
			t.Fatal(err)
		}
		if err := pend.Finish([]byte("short")); err != nil {
			t.Fatal(err)
		}
		checkOnly(t, dir, "x.o", "short", 0o644)
	})
	t.Run("abort", func(t *testing.T) {
		dir := t.TempDir()
		p := writeFile(t, dir, "x.o", "old")
		pend, err := plan(t, p).Start([]byte("new bytes"))
		if err != nil {
			t.Fatal(err)
		}
		pend.Abort()
		checkOnly(t, dir, "x.o", "old", 0o644)
	})
	t.Run("finish-fails", func(t *testing.T) {
		dir := t.TempDir()
		p := writeFile(t, dir, "x.o", "old")
		o := plan(t, p)
		o.BeforeCheck = func() {
			if err := os.WriteFile(p, []byte("theirs"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		pend, err := o.Start([]byte("new"))
		if err != nil {
			t.Fatal(err)
		}
		if err := pend.Finish([]byte("new")); !errors.Is(err, outfile.ErrChanged) {
			t.Errorf("Finish over a file changed meanwhile: %v, want ErrChanged", err)
		}
		checkOnly(t, dir, "x.o", "theirs", 0o644)
	})
}

// TestPlanRefused: what Plan refuses before any work, each with an error
// naming the file: an output that is a directory, a FIFO or a device, an
// output in a missing directory, an input that is not a regular file, a
// file with other hard links, a dangling output link.
func TestPlanRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string) (in, out string)
		named string // the name the error starts with: "in" or "out"
		is    error
		want  string
	}{
		{"out a directory", func(t *testing.T, dir string) (string, string) {
			out := filepath.Join(dir, "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			return writeFile(t, dir, "in", "x"), out
		}, "out", infile.ErrNotRegular, "not a regular file (a directory)"},
		{"out a FIFO", func(t *testing.T, dir string) (string, string) {
			out := filepath.Join(dir, "out")
			if err := syscall.Mkfifo(out, 0o644); err != nil {
				t.Fatal(err)
			}
			return writeFile(t, dir, "in", "x"), out
		}, "out", infile.ErrNotRegular, "not a regular file (a FIFO)"},
		{"out /dev/null", func(t *testing.T, dir string) (string, string) {
			return writeFile(t, dir, "in", "x"), "/dev/null"
		}, "out", infile.ErrNotRegular, "not a regular file (a character device)"},
		{"in place a device", func(t *testing.T, dir string) (string, string) {
			return "/dev/zero", ""
		}, "in", infile.ErrNotRegular, "not a regular file (a character device)"},
		{"in place a link to a device", func(t *testing.T, dir string) (string, string) {
			l := filepath.Join(dir, "zero")
			if err := os.Symlink("/dev/zero", l); err != nil {
				t.Fatal(err)
			}
			return l, ""
		}, "in", infile.ErrNotRegular, "not a regular file (a character device)"},
		{"out in a missing directory", func(t *testing.T, dir string) (string, string) {
			return writeFile(t, dir, "in", "x"), filepath.Join(dir, "nosuch", "out")
		}, "out", fs.ErrNotExist, "directory DIR/nosuch: no such file or directory"},
		{"in place with hard links", func(t *testing.T, dir string) (string, string) {
			in := writeFile(t, dir, "in", "x")
			if err := os.Link(in, filepath.Join(dir, "other")); err != nil {
				t.Fatal(err)
			}
			return in, ""
		}, "in", outfile.ErrLinks, "(2 names for one file)"},
		{"dangling out link", func(t *testing.T, dir string) (string, string) {
			out := filepath.Join(dir, "out")
			if err := os.Symlink("nowhere/x", out); err != nil {
				t.Fatal(err)
			}
			return writeFile(t, dir, "in", "x"), out
		}, "out", nil, "a symbolic link to nowhere/x, which does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := c.setup(t, dir)
			ents, _ := os.ReadDir(dir)
			_, err := outfile.Plan(in, out)
			named := in
			if c.named == "out" {
				named = out
			}
			want := strings.ReplaceAll(c.want, "DIR", dir)
			if err == nil || !strings.HasPrefix(err.Error(), named+": ") || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v\nwant one starting with %q and saying %q", err, named, want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
			if after, _ := os.ReadDir(dir); len(after) != len(ents) {
				t.Errorf("the directory held %d entries, now %d", len(ents), len(after))
			}
		})
	}
}

// writeFile writes contents to dir/name, mode 0644.
func writeFile(t *testing.T, dir, name, contents string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(contents), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// checkOnly checks dir holds exactly one entry, name, with contents and
// mode.
func checkOnly(t *testing.T, dir, name, contents string, mode fs.FileMode) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{name}) {
		t.Errorf("%s holds %v, want %s alone", dir, names, name)
	}
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != contents || st.Mode() != mode {
		t.Errorf("%s: %q mode %v, want %q mode %v", p, b, st.Mode(), contents, mode)
	}
}
