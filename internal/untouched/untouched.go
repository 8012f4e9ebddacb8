// Package untouched checks, in tests, that a command left a file alone:
// its bytes and its status (the inode, link count, mode, owner, size and
// times), as the tools promise for every input they refuse or only read.
package untouched

import (
	"bytes"
	"os"
	"syscall"
	"testing"
)

// A File is a file as Take found it, symbolic links followed.
type File struct {
	Path string
	Data []byte
	st   status
}

// status is what of a file's status a command that leaves it alone
// leaves alone.
type status struct {
	dev, ino, nlink uint64
	mode, uid, gid  uint32
	size            int64
	mtime, ctime    syscall.Timespec
}

func stat(path string) (status, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return status{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return status{uint64(st.Dev), st.Ino, uint64(st.Nlink), st.Mode, st.Uid, st.Gid, st.Size, st.Mtim, st.Ctim}, nil
}

// Take records the file at path; an error fails t.
func Take(t testing.TB, path string) File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return File{path, b, st}
}

// Same reports whether the file is as Take found it.
func (f File) Same(t testing.TB) bool {
	t.Helper()
	now := Take(t, f.Path)
	return bytes.Equal(now.Data, f.Data) && now.st == f.st
}

// Check fails t, saying what changed, when the file is not as Take
// found it; what says after which command.
func (f File) Check(t testing.TB, what string) {
	t.Helper()
	now := Take(t, f.Path)
	if !bytes.Equal(now.Data, f.Data) || now.st != f.st {
		t.Errorf("%s: %s changed (bytes equal %v, status %+v, was %+v)", what, f.Path, bytes.Equal(now.Data, f.Data), now.st, f.st)
	}
}
