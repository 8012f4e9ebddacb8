// Package attach reaches ftpatch's runtime in a process ftpatch did not
// start: it finds the runtime among the objects the process has mapped
// (the program that links it, or libftrt.so preloaded), and asks it,
// through a thread held with ptrace (package tracee), to start its
// control server, which `ftpatch ctl` then talks to as if the process had
// been started with FTRACE_CTL=1.
//
// What it leaves in the process: the control server's thread, which
// blocks every signal and runs nothing traced, its socket (in the
// abstract namespace: no file), and the pages of its connections' slots,
// as FTRACE_CTL=1 would have; nothing else. A failure at any step lets
// the process go as it was, its threads' registers and signals
// included, with the error.
package attach

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"ftpatch/control"
	"ftpatch/elfx"
	"ftpatch/runtime/abi"
	"ftpatch/tracee"
)

// ErrNoRuntime: the process has no ftpatch runtime, linked or preloaded.
var ErrNoRuntime = errors.New("no ftpatch runtime in the process (linked or preloaded)")

// ErrRefused: the runtime refused to start its control server.
var ErrRefused = errors.New("the runtime refuses ftpatch ctl")

// Entry returns the address of the runtime's attach entry in process
// pid, read from the word the section abi.AttachSection holds in the
// object that has it (the program, or libftrt.so), and that object's
// path.
func Entry(pid int) (uint64, string, error) {
	var entry uint64
	var path string
	var rerr error
	err := tracee.Objects(pid, func(f *elfx.File, p string, bias uint64) bool {
		i := slices.IndexFunc(f.Sections, func(s *elfx.Section) bool {
			return s.Name == abi.AttachSection && s.Flags&elf.SHF_ALLOC != 0 && s.Size >= 8
		})
		if i < 0 {
			return true
		}
		path = p
		mem, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "mem"))
		if err != nil {
			rerr = fmt.Errorf("process %d: %w", pid, err)
			return false
		}
		defer mem.Close()
		var b [8]byte
		if _, err := mem.ReadAt(b[:], int64(bias+uint64(f.Sections[i].Addr))); err != nil {
			rerr = fmt.Errorf("process %d: reading the runtime's attach entry in %s: %w", pid, p, err)
			return false
		}
		if entry = binary.LittleEndian.Uint64(b[:]); entry == 0 {
			rerr = fmt.Errorf("process %d: %s: the runtime's attach entry is not relocated yet", pid, p)
		}
		return false
	})
	switch {
	case err != nil:
		return 0, "", err
	case rerr != nil:
		return 0, "", rerr
	case path == "":
		return 0, "", fmt.Errorf("process %d: %w", pid, ErrNoRuntime)
	}
	return entry, path, nil
}

// ErrNoSites: the process has no runtime, and nothing a runtime loaded
// into it could trace: no object it has mapped has a site table.
var ErrNoSites = errors.New("no ftpatch runtime, and no sites to trace: built without tracing flags")

// siteSections are the sections that list sites: the compiler's
// (recordmcount's or gcc's __mcount_loc, -fpatchable-function-entry's)
// and ftpatch instrument's.
var siteSections = []string{abi.TableSection, "__patchable_function_entries", abi.PrologueSection}

// Sited says whether one of the objects process pid has mapped lists
// sites, which the runtime, loaded into it, would trace.
func Sited(pid int) (bool, error) {
	found := false
	err := tracee.Objects(pid, func(f *elfx.File, _ string, _ uint64) bool {
		found = slices.ContainsFunc(f.Sections, func(s *elfx.Section) bool {
			return slices.Contains(siteSections, s.Name) && s.Size > 0
		})
		return !found
	})
	return found, err
}

// Inject loads the runtime's shared object lib (libftrt.so, of the
// process's architecture) into process pid, which has no runtime: a
// thread stopped where the C library holds no lock calls dlopen, the
// others running meanwhile. The runtime's initialiser then runs there as
// it does preloaded: it finds the sites of the program and of its shared
// objects, leaves them as they are (no FTRACE in the process's
// environment), and waits to be asked (Control). It returns the longest
// time the process was stopped whole (its threads run during the dlopen).
func Inject(pid int, lib string) (time.Duration, error) {
	p, err := tracee.Seize(pid)
	if err != nil {
		return 0, err
	}
	tid, err := p.SafeThread()
	if err == nil {
		_, err = p.Dlopen(tid, lib, true)
	}
	_, rerr := p.Release()
	if err = errors.Join(err, rerr); err != nil {
		return p.Pause, fmt.Errorf("loading the runtime into process %d: %w", pid, err)
	}
	return p.Pause, nil
}

// Control makes process pid listen for ftpatch ctl, if it does not
// already: it holds the process, makes a thread stopped where the C
// library holds no lock call the runtime's attach entry (the others
// running meanwhile), lets it go, and waits for the socket to appear.
// It returns the longest time the process was stopped whole.
func Control(pid int) (time.Duration, error) {
	if listening(pid) {
		return 0, nil
	}
	entry, path, err := Entry(pid)
	if err != nil {
		return 0, err
	}
	p, err := tracee.Seize(pid)
	if err != nil {
		return 0, err
	}
	tid, err := p.SafeThread()
	var ret uint64
	if err == nil {
		ret, err = p.Call(tid, entry, tracee.CallOptions{OthersRun: true, Last: true})
	}
	_, rerr := p.Release()
	held := p.Pause
	if err = errors.Join(err, rerr); err != nil {
		return held, fmt.Errorf("starting the control server of process %d (%s): %w", pid, path, err)
	}
	if r := int64(ret); r == -int64(syscall.ECANCELED) {
		return held, fmt.Errorf("process %d: %w: it was started with %s=0, which says it is not to be controlled", pid, ErrRefused, abi.EnvCtl)
	} else if r < 0 {
		return held, fmt.Errorf("process %d (%s): the control server cannot start: %w", pid, path, syscall.Errno(-r))
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if listening(pid) {
			return held, nil
		}
	}
	return held, fmt.Errorf("process %d: %w: its control server started and no socket appeared in 5 s", pid, control.ErrNotListening)
}

// listening says whether process pid listens for ftpatch ctl: a socket
// named as its control socket is, whose listener is the process.
func listening(pid int) bool {
	names, err := control.Names(pid)
	if err != nil {
		return false
	}
	for _, n := range names {
		if c, err := control.Dial(pid, n, time.Now().Add(time.Second)); err == nil {
			c.Close()
			return true
		}
	}
	return false
}
