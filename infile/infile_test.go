package infile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ftpatch/infile"
)

// TestReadFile: a regular file (through a symbolic link too) is read
// whole; anything else is refused at once with a *NotRegularError naming
// the path and what it is, without waiting on a FIFO no one writes or
// reading a device without end; a missing file is the system's error.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"link": "file", "zero": "/dev/zero"} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path string
		want string // the contents, or what the error says
		err  error
	}{
		{file, "contents", nil},
		{filepath.Join(dir, "link"), "contents", nil},
		{"/dev/zero", "not a regular file (a character device)", infile.ErrNotRegular},
		{filepath.Join(dir, "zero"), "not a regular file (a character device)", infile.ErrNotRegular},
		{fifo, "not a regular file (a FIFO)", infile.ErrNotRegular},
		{dir, "not a regular file (a directory)", infile.ErrNotRegular},
		{filepath.Join(dir, "missing"), "no such file or directory", os.ErrNotExist},
	} {
		done := make(chan struct{})
		var got []byte
		var err error
		go func() {
			got, err = infile.ReadFile(c.path)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadFile(%s) has not returned after 10s", c.path)
		}
		if c.err == nil {
			if err != nil || string(got) != c.want {
				t.Errorf("ReadFile(%s) = %q, %v; want %q", c.path, got, err, c.want)
			}
			continue
		}
		if !errors.Is(err, c.err) || !strings.HasPrefix(err.Error(), c.path+": ") && !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadFile(%s): %v; want %v naming it and saying %q", c.path, err, c.err, c.want)
		}
	}
}

// TestOpenNoFollow: a regular file opens; a symbolic link, even to a
// regular file, is refused as a *NotRegularError saying it is a link.
func TestOpenNoFollow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("file", link); err != nil {
		t.Fatal(err)
	}
	f, fi, err := infile.OpenNoFollow(file)
	if err != nil || fi.Size() != 8 {
		t.Fatalf("OpenNoFollow(%s): %v", file, err)
	}
	f.Close()
	if _, _, err := infile.OpenNoFollow(link); !errors.Is(err, infile.ErrNotRegular) || !strings.Contains(err.Error(), "a symbolic link") {
		t.Errorf("OpenNoFollow(%s): %v; want it refused as a symbolic link", link, err)
	}
}
