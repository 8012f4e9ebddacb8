package outfile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// A temp is a new file's contents on their way to its place: a temporary
// file beside it (so the rename stays within one file system), written,
// given its attributes, synced, checked, renamed. It is the one way every
// output of the tools is made.
type temp struct {
	f    *os.File
	path string // where the rename puts it
}

// newTemp creates the temporary file beside path, with a name no other
// file has (O_CREAT|O_EXCL) so nothing is written through a link.
func newTemp(path string) (*temp, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return nil, err
	}
	return &temp{f: f, path: path}, nil
}

// fillBuffered writes fill's output through a buffer, so fill may write a
// large file as many small pieces without holding it whole.
func (t *temp) fillBuffered(fill func(w io.Writer) error) error {
	bw := bufio.NewWriterSize(t.f, 1<<20)
	if err := fill(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// commit finishes the file: the attributes a (after every write, as
// Attrs.apply needs), fsync, check (if not nil) just before the rename,
// then the rename over t.path. On any error the temporary is removed and
// whatever was at t.path stays.
func (t *temp) commit(a Attrs, check func() error) (err error) {
	defer func() {
		if err != nil {
			t.abort()
		}
	}()
	if err = a.apply(t.f); err != nil {
		return err
	}
	if err = t.f.Sync(); err != nil {
		return err
	}
	if err = t.f.Close(); err != nil {
		return err
	}
	if check != nil {
		if err = check(); err != nil {
			return err
		}
	}
	return os.Rename(t.f.Name(), t.path)
}

// abort removes the temporary.
func (t *temp) abort() {
	t.f.Close()
	os.Remove(t.f.Name())
}

// WriteFile writes chunks to path atomically: to a temporary file in the
// same directory (the chunks one after another), synced, given mode perm,
// then renamed over path, and the directory synced. A reader sees the old
// file or the new one, never a part; on any error the old file is
// untouched and the temporary removed.
//
// path itself is replaced: a symbolic link there becomes the new file, and
// the old file's attributes are not kept. It is for files the tools own
// (a built archive, a test's output); a user's file is replaced through
// Plan, which keeps what it had.
func WriteFile(path string, perm os.FileMode, chunks ...[]byte) error {
	t, err := newTemp(path)
	if err != nil {
		return err
	}
	for _, c := range chunks {
		if _, err := t.f.Write(c); err != nil {
			t.abort()
			return err
		}
	}
	if err := t.commit(NewAttrs(perm), nil); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir makes the renames in directory dir durable. Some file systems
// refuse to sync a directory; that is not an error, since the renames
// themselves are done.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	d.Sync()
	return d.Close()
}

// startWriteback asks the kernel to start writing the first n bytes of f
// to disk now (sync_file_range with SYNC_FILE_RANGE_WRITE), so the fsync
// that follows, once the rest of the file is known, has less to wait for.
// It is only a hint: durability still comes from that fsync, and a kernel
// that refuses the call changes nothing.
func startWriteback(f *os.File, n int64) {
	const syncFileRangeWrite = 2 // SYNC_FILE_RANGE_WRITE
	syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), 0, uintptr(n), syncFileRangeWrite, 0, 0)
}
