// Package infile opens the files the tools read. A tool given a path may
// be given anything: /dev/zero (endless, so reading it whole exhausts
// memory), a FIFO (whose open blocks until a writer comes), a directory.
// Only regular files are read, every read is bounded by the file's size
// as fstat(2) gave it when it was opened, and nothing blocks.
package infile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular: the path names something other than a regular file (a
// directory, a device, a FIFO, a socket). Returned as a *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// A NotRegularError is a path that names something other than a regular
// file, and what it names.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // its type bits say what it is
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %v (%s): only regular files are read or replaced", e.Path, ErrNotRegular, Kind(e.Mode))
}

// Is makes errors.Is(err, ErrNotRegular) true.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// Kind says what a file of mode m is, for messages: "a directory",
// "a character device"...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "of an unknown type"
}

// Open opens the regular file at path for reading and returns it with
// its status. The open does not block (O_NONBLOCK: a FIFO opens at once,
// and is then refused) and the file is refused unless fstat of the very
// file opened says it is regular, so no other name can be swapped in
// between a check and the open. The caller closes the file.
func Open(path string) (*os.File, fs.FileInfo, error) {
	return open(path, 0)
}

// OpenNoFollow is Open for a file that a program made where a link has
// no business (a trace directory's files): a symbolic link at path is
// refused (a *NotRegularError) rather than followed.
func OpenNoFollow(path string) (*os.File, fs.FileInfo, error) {
	f, fi, err := open(path, syscall.O_NOFOLLOW)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
	}
	return f, fi, err
}

func open(path string, flags int) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|flags, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, fi, nil
}

// ReadFile reads the regular file at path whole (Open says what is
// refused). It reads the size fstat gave and no more, so memory is
// bounded by the file's real size even if it grows meanwhile; a file that
// shrank meanwhile is an error rather than a silently short read.
func ReadFile(path string) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, fi)
}

// ReadAll reads the file f, opened by Open with status fi, whole: the
// size fi gives, and no more.
func ReadAll(f *os.File, fi fs.FileInfo) ([]byte, error) {
	size := fi.Size()
	if size != int64(int(size)) {
		return nil, fmt.Errorf("%s: %d bytes: too large to read", f.Name(), size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the file shrank while it was read (%d bytes when opened)", f.Name(), size)
		}
		return nil, err
	}
	return data, nil
}
