package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"ftpatch/runtime/abi"
)

// Usage is what a process used, as getrusage(2) and wait4(2) count it.
type Usage struct {
	UserUs, SysUs            uint64 // CPU time in user and kernel mode, µs
	MaxRSSKB                 uint64 // the largest resident set, KiB
	MinorFaults, MajorFaults uint64 // page faults served without I/O, and with
	InBlocks, OutBlocks      uint64 // file system blocks read, written
	Voluntary, Involuntary   uint64 // context switches
}

// usageKeys are the keys of Usage's fields: the metadata's and the exit
// file's, abi.h's META_KEY_RU_*.
var usageKeys = []string{abi.MetaKeyRUUtime, abi.MetaKeyRUStime, abi.MetaKeyRUMaxRSS, abi.MetaKeyRUMinflt, abi.MetaKeyRUMajflt,
	abi.MetaKeyRUInblock, abi.MetaKeyRUOublock, abi.MetaKeyRUNvcsw, abi.MetaKeyRUNivcsw}

// field is the field of u that key names, or nil.
func (u *Usage) field(key string) *uint64 {
	switch key {
	case abi.MetaKeyRUUtime:
		return &u.UserUs
	case abi.MetaKeyRUStime:
		return &u.SysUs
	case abi.MetaKeyRUMaxRSS:
		return &u.MaxRSSKB
	case abi.MetaKeyRUMinflt:
		return &u.MinorFaults
	case abi.MetaKeyRUMajflt:
		return &u.MajorFaults
	case abi.MetaKeyRUInblock:
		return &u.InBlocks
	case abi.MetaKeyRUOublock:
		return &u.OutBlocks
	case abi.MetaKeyRUNvcsw:
		return &u.Voluntary
	case abi.MetaKeyRUNivcsw:
		return &u.Involuntary
	}
	return nil
}

// usageKey says whether key is one of Usage's.
func usageKey(key string) bool { return (&Usage{}).field(key) != nil }

// UsageOf is a Usage from the rusage wait4 or getrusage filled in.
func UsageOf(ru *syscall.Rusage) Usage {
	us := func(tv syscall.Timeval) uint64 { return uint64(tv.Sec)*1e6 + uint64(tv.Usec) }
	return Usage{
		UserUs: us(ru.Utime), SysUs: us(ru.Stime), MaxRSSKB: uint64(ru.Maxrss),
		MinorFaults: uint64(ru.Minflt), MajorFaults: uint64(ru.Majflt),
		InBlocks: uint64(ru.Inblock), OutBlocks: uint64(ru.Oublock),
		Voluntary: uint64(ru.Nvcsw), Involuntary: uint64(ru.Nivcsw),
	}
}

// ExitFile is the file `ftpatch record` writes into the trace directory
// once the program has ended: how it ended and what it used, as its
// parent saw them (wait4), "key value" lines as the metadata's:
//
//	exit_code N      it exited with status N (0-255); or
//	signal N         a signal killed it,
//	core_dumped 1    and the kernel dumped its core;
//	ru_utime_us N    and the keys of Usage, as the metadata's
//	...
//
// The runtime cannot see a program killed by SIGKILL, nor what its end
// used after its last metadata: this can. Written whole or not at all
// (a temporary file renamed into place), and never over a file there.
const ExitFile = "exit"

// exitKeyCore is the exit file's key that says the kernel dumped core.
const exitKeyCore = "core_dumped"

// maxExitFile bounds the exit file: a few short lines.
const maxExitFile = 4 << 10

// An ExitStatus is how a program ended, as its parent saw it.
type ExitStatus struct {
	// Signal is the signal that killed it (Core: the kernel dumped its
	// core), or 0 when it exited with status Code.
	Signal int
	Core   bool
	Code   int
	Usage  Usage // what it used: itself and the children it waited for
}

// ErrExitFile: the trace directory's exit file is not what `ftpatch
// record` writes.
var ErrExitFile = errors.New("malformed exit file")

// ReadExitStatus reads the exit file of the trace directory dir (ExitFile):
// nil when there is none (the program was not run by ftpatch record, or
// record could not write it). A file that is not a regular one, or not
// what record writes, is an error naming it.
func ReadExitStatus(dir string) (*ExitStatus, error) {
	path := filepath.Join(dir, ExitFile)
	b, err := readOptional(path, maxExitFile, ErrExitFile)
	if b == nil || err != nil {
		return nil, err
	}
	var e ExitStatus
	exited, signaled := false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		key, val, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseUint(val, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s:%d: %w: want `key number`", path, line, ErrExitFile)
		}
		switch key {
		case abi.MetaKeyExitCode:
			if n > 255 {
				return nil, fmt.Errorf("%s:%d: %w: exit code %d, want 0 to 255", path, line, ErrExitFile, n)
			}
			e.Code, exited = int(n), true
		case abi.MetaKeySignal:
			if n == 0 || n > 64 {
				return nil, fmt.Errorf("%s:%d: %w: signal %d, want 1 to 64", path, line, ErrExitFile, n)
			}
			e.Signal, signaled = int(n), true
		case exitKeyCore:
			e.Core = n != 0
		default:
			if p := e.Usage.field(key); p != nil {
				*p = n
			}
			// Another key: from a newer ftpatch, ignored.
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if exited == signaled {
		return nil, fmt.Errorf("%s: %w: want one of exit_code and signal", path, ErrExitFile)
	}
	return &e, nil
}

// WriteExitStatus writes e into the trace directory dir as its exit file
// (ExitFile), with the metadata's permissions (the trace's, FTRACE_MODE):
// a temporary file made there (O_EXCL|O_NOFOLLOW, through the
// directory's descriptor, which is not followed through a symbolic link
// either), then renamed to its name, never over a file of that name.
func WriteExitStatus(dir string, e ExitStatus) error {
	var b strings.Builder
	if e.Signal != 0 {
		fmt.Fprintf(&b, "%s %d\n", abi.MetaKeySignal, e.Signal)
		if e.Core {
			fmt.Fprintf(&b, "%s 1\n", exitKeyCore)
		}
	} else {
		fmt.Fprintf(&b, "%s %d\n", abi.MetaKeyExitCode, e.Code)
	}
	for _, k := range usageKeys {
		fmt.Fprintf(&b, "%s %d\n", k, *e.Usage.field(k))
	}
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(d)
	mode := uint32(0o600)
	var st unix.Stat_t
	if unix.Fstatat(d, abi.MetaFile, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		mode = st.Mode & 0o644 // as the runtime made the trace's files
	}
	tmp := fmt.Sprintf("%s.%d.tmp", ExitFile, os.Getpid())
	fd, err := unix.Openat(d, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(dir, tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, tmp))
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat2(d, tmp, d, ExitFile, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			// A file system without RENAME_NOREPLACE: a link fails as
			// well on a name that exists.
			if err = unix.Linkat(d, tmp, d, ExitFile, 0); err == nil {
				unix.Unlinkat(d, tmp, 0)
			}
		}
		if err != nil {
			err = &os.LinkError{Op: "rename", Old: filepath.Join(dir, tmp), New: filepath.Join(dir, ExitFile), Err: err}
		}
	}
	if err != nil {
		unix.Unlinkat(d, tmp, 0)
	}
	return err
}
