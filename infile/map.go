package infile

import "syscall"

// A Mapped is a file's contents mapped read-only into memory. Reading a
// large object through a mapping costs neither a copy nor a page fault per
// 4 KiB of heap, which is most of recordmcount's time on a big object.
type Mapped struct {
	Data []byte
	mmap bool
}

// mapMin is the size from which Map maps rather than reads.
const mapMin = 1 << 20

// Map maps the regular file at path read-only if it is large, and reads
// it otherwise or when it cannot be mapped. Only a regular file is read
// (see Open), and no more than the size it had when opened. Close
// releases the mapping; Data must not be used after it.
//
// The mapping is private and populated at once: if another process
// truncates the file while it is mapped, reading the lost part would fault,
// so callers parse and copy what they need before writing anything back.
func Map(path string) (*Mapped, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := fi.Size()
	// Small files are read: a mapping costs two system calls and, in a
	// multi-threaded process, a TLB shootdown on every core at unmap.
	if size < mapMin || size != int64(int(size)) {
		data, err := ReadAll(f, fi)
		if err != nil {
			return nil, err
		}
		return &Mapped{Data: data}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		data, err = ReadAll(f, fi)
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
