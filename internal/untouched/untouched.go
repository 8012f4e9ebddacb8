// Package untouched checks, in tests, that a command left a file or a
// directory tree alone: the bytes and the status (the inode, link count,
// mode, owner, size and times) of each file, as the tools and the
// runtime promise for every input they refuse or only read and every
// place they must not write.
package untouched

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// A Tree is every entry under a directory as TakeTree found it, by path
// relative to the directory: enough to tell that one was created,
// removed, renamed, written or replaced.
type Tree struct {
	root    string
	skip    []string
	entries map[string]entry
}

// An entry is what a Tree keeps of a file: its status (lstat's: a link
// is not followed) and its contents, a regular file's bytes or a link's
// target.
type entry struct {
	st   status
	data string
}

// TakeTree records every entry under root, leaving out the subtrees
// (paths relative to root) named in skip; an error fails t. A file an
// unprivileged test cannot read is recorded as unreadable, by its status
// alone.
func TakeTree(t testing.TB, root string, skip ...string) Tree {
	t.Helper()
	tree := Tree{root, skip, map[string]entry{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, s := range skip {
			if rel == s || strings.HasPrefix(rel, s+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return &os.PathError{Op: "lstat", Path: p, Err: err}
		}
		e := entry{st: status{uint64(st.Dev), st.Ino, uint64(st.Nlink), st.Mode, st.Uid, st.Gid, st.Size, st.Mtim, st.Ctim}}
		switch {
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrPermission) && os.Geteuid() != 0 {
				e.data = "(unreadable)"
				break
			}
			if err != nil {
				return err
			}
			e.data = string(b)
		case d.Type()&fs.ModeSymlink != 0:
			if e.data, err = os.Readlink(p); err != nil {
				return err
			}
		}
		tree.entries[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// Diff says, an entry a line, what was created, removed (or renamed) or
// changed from tr to now; none when they are the same.
func (tr Tree) Diff(now Tree) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(now.entries)) {
		e := now.entries[p]
		if b, ok := tr.entries[p]; !ok {
			out = append(out, fmt.Sprintf("%s was created (mode %o, uid %d)", p, e.st.mode, e.st.uid))
		} else if b != e {
			out = append(out, fmt.Sprintf("%s changed (contents equal %v, status %+v, was %+v)", p, b.data == e.data, e.st, b.st))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(tr.entries)) {
		if _, ok := now.entries[p]; !ok {
			out = append(out, fmt.Sprintf("%s was removed or renamed", p))
		}
	}
	return out
}

// Check fails t, an error for each entry created, removed or changed,
// when the tree is not as tr recorded it; what says after which command.
func (tr Tree) Check(t testing.TB, what string) {
	t.Helper()
	for _, d := range tr.Diff(TakeTree(t, tr.root, tr.skip...)) {
		t.Errorf("%s: %s", what, d)
	}
}
