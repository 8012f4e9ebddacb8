package tracee

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// rtldNow is dlopen's RTLD_NOW: every symbol bound at once, so that a
// missing one fails the dlopen rather than a later call.
const rtldNow = 2

// libc says whether a mapped path is the C library, which defines
// dlopen and dlerror (glibc 2.34 and later; libdl before).
func libc(path string) bool {
	b := filepath.Base(path)
	return strings.HasPrefix(b, "libc.so") || strings.HasPrefix(b, "libc-") || strings.HasPrefix(b, "libdl")
}

// Dlopen makes held thread tid load the shared object at path
// (RTLD_NOW) and returns its handle; the other threads run meanwhile
// (the loader's lock, malloc's), and are held again after unless last
// says Release comes next (CallOptions.Last). A refusal is an error with
// dlerror's words; the object is then not loaded.
func (p *Process) Dlopen(tid int, path string, last bool) (uint64, error) {
	dlopen, _, err := Lookup(p.Pid, "dlopen", libc)
	if err != nil {
		return 0, fmt.Errorf("loading %s: %w", path, err)
	}
	h, err := p.Call(tid, dlopen, CallOptions{OthersRun: true, Last: last}, Str(path), Word(rtldNow))
	if err != nil {
		return 0, fmt.Errorf("loading %s: %w", path, err)
	}
	if h != 0 {
		return h, nil
	}
	why := "dlopen returned NULL"
	if dlerror, _, err := Lookup(p.Pid, "dlerror", libc); err == nil {
		if msg, err := p.Call(tid, dlerror, CallOptions{}); err == nil && msg != 0 {
			if s, err := p.ReadString(msg, 4096); err == nil {
				why = s
			}
		}
	}
	return 0, fmt.Errorf("loading %s into process %d: %s", path, p.Pid, why)
}

// ReadString reads the NUL-terminated string at addr in the process,
// at most max bytes of it.
func (p *Process) ReadString(addr uint64, max int) (string, error) {
	mem, err := os.Open(filepath.Join("/proc", strconv.Itoa(p.Pid), "mem"))
	if err != nil {
		return "", err
	}
	defer mem.Close()
	b := make([]byte, max)
	n, err := mem.ReadAt(b, int64(addr))
	if n == 0 && err != nil {
		return "", fmt.Errorf("process %d: reading a string at %#x: %w", p.Pid, addr, err)
	}
	if i := bytes.IndexByte(b[:n], 0); i >= 0 {
		n = i
	}
	return string(b[:n]), nil
}
