package elfx

import (
	"fmt"
	"os"
	"syscall"
)

// A Mapped is a file's contents mapped read-only into memory. Reading a
// large object through a mapping costs neither a copy nor a page fault per
// 4 KiB of heap, which is most of recordmcount's time on a big object.
type Mapped struct {
	Data []byte
	mmap bool
}

// Map maps the regular file at path read-only (or reads it, for anything
// that cannot be mapped, such as an empty file or a pipe). Close releases
// the mapping; Data must not be used after it.
//
// The mapping is private and populated at once: if another process
// truncates the file while it is mapped, reading the lost part would fault,
// so callers parse and copy what they need before writing anything back.
func Map(path string) (*Mapped, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size == 0 || size != int64(int(size)) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return &Mapped{Data: data}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		data, err = os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return &Mapped{Data: data}, nil
	}
	return &Mapped{Data: data, mmap: true}, nil
}

// Close unmaps the file.
func (m *Mapped) Close() error {
	if !m.mmap {
		return nil
	}
	m.mmap = false
	return syscall.Munmap(m.Data)
}
