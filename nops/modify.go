package nops

import (
	"bytes"
	"errors"
	"fmt"
)

// The three ways Modify can fail, after the Linux kernel's
// ftrace_modify_code. Callers branch on them: a site that could not be read
// or held unexpected bytes was left untouched and is skipped; a site that
// could not be written (or did not keep what was written) is in an unknown
// state and must be reported.
var (
	// ErrRead: the old bytes could not be read (the kernel's -EFAULT).
	// Nothing was written.
	ErrRead = errors.New("could not read code")
	// ErrUnexpected: the site did not hold the expected old bytes (the
	// kernel's -EINVAL). Nothing was written. Returned as *MismatchError.
	ErrUnexpected = errors.New("unexpected code at site")
	// ErrWrite: the new bytes could not be written, or reading them back
	// failed or gave something else (the kernel's -EPERM).
	ErrWrite = errors.New("could not write code")
)

// A MismatchError reports that a site held other bytes than the caller
// expected: a different compiler's sequence, a site already patched, or
// an address that is not a site at all. It matches ErrUnexpected with
// errors.Is.
type MismatchError struct {
	Addr uint64 // address of the site
	Want []byte // the expected old bytes
	Got  []byte // the bytes found there, as many as Want
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("site %#x: want % x, found % x", e.Addr, e.Want, e.Got)
}

// Is reports whether target is ErrUnexpected.
func (e *MismatchError) Is(target error) bool { return target == ErrUnexpected }

// Text is code memory addressed by virtual address: a section of an object
// or linked file held as bytes, a file, or a live process's memory. Unlike
// io.ReaderAt it has no partial success: each call moves all of p or fails.
type Text interface {
	// ReadAt fills p with the bytes at addr.
	ReadAt(p []byte, addr uint64) error
	// WriteAt stores p at addr.
	WriteAt(p []byte, addr uint64) error
}

// Bytes is a Text over a byte slice whose first byte has address Base, such
// as a section's contents read from an ELF file. Accesses outside B are
// errors, never panics. Writes go to B's backing array, so a Bytes value
// (not only a pointer) is a usable Text.
type Bytes struct {
	Base uint64 // address of B[0]
	B    []byte
}

// ReadAt copies len(p) bytes at addr into p.
func (t Bytes) ReadAt(p []byte, addr uint64) error {
	s, err := t.slice(addr, len(p))
	if err != nil {
		return err
	}
	copy(p, s)
	return nil
}

// WriteAt copies p into t.B at addr.
func (t Bytes) WriteAt(p []byte, addr uint64) error {
	s, err := t.slice(addr, len(p))
	if err != nil {
		return err
	}
	copy(s, p)
	return nil
}

// slice returns the n bytes at addr, checking bounds without overflowing.
func (t Bytes) slice(addr uint64, n int) ([]byte, error) {
	size := uint64(len(t.B))
	if addr < t.Base || addr-t.Base > size || uint64(n) > size-(addr-t.Base) {
		return nil, fmt.Errorf("%d bytes at %#x outside text [%#x, %#x)", n, addr, t.Base, t.Base+size)
	}
	off := addr - t.Base
	return t.B[off : off+uint64(n)], nil
}

// Modify changes the code at addr from old to new, in the way of the
// kernel's ftrace_modify_code: read len(old) bytes, compare them with old,
// write new, then read back and compare with new. A site holding anything
// but old is never forced: Modify returns a *MismatchError and writes
// nothing.
//
// Errors: a failed first read wraps ErrRead; a mismatch is a
// *MismatchError (errors.Is ErrUnexpected); a failed write, a failed
// read-back or read-back bytes other than new wrap ErrWrite. old and new
// must have the same, non-zero length; otherwise Modify returns an error
// matching none of these, having touched nothing, as that is a caller's bug
// rather than a property of the site.
func Modify(t Text, addr uint64, old, new []byte) error {
	if len(old) != len(new) || len(old) == 0 {
		return fmt.Errorf("site %#x: cannot replace %d bytes with %d", addr, len(old), len(new))
	}
	got := make([]byte, len(old))
	if err := t.ReadAt(got, addr); err != nil {
		return fmt.Errorf("site %#x: %w: %w", addr, ErrRead, err)
	}
	if !bytes.Equal(got, old) {
		return &MismatchError{Addr: addr, Want: bytes.Clone(old), Got: got}
	}
	if err := t.WriteAt(new, addr); err != nil {
		return fmt.Errorf("site %#x: %w: %w", addr, ErrWrite, err)
	}
	// Read back into a fresh buffer: a Text that ignores the write must
	// not be able to pass by leaving got untouched.
	back := make([]byte, len(new))
	if err := t.ReadAt(back, addr); err != nil {
		return fmt.Errorf("site %#x: %w: read back: %w", addr, ErrWrite, err)
	}
	if !bytes.Equal(back, new) {
		return fmt.Errorf("site %#x: %w: read back % x, want % x", addr, ErrWrite, back, new)
	}
	return nil
}
