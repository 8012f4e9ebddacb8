package tracee

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoSafeThread: no thread of the process came to a point where a
// call that takes the C library's locks can be made.
var ErrNoSafeThread = errors.New("no thread stopped where a call may take the C library's locks")

// libraryCode says whether a mapped path is the C library's or the
// loader's: code that may hold their locks (malloc's arenas, the
// loader's, the thread stacks') while it runs.
func libraryCode(path string) bool {
	b := filepath.Base(path)
	for _, p := range []string{"libc.so", "libc-", "ld-linux", "ld64.so", "ld-", "libpthread", "libdl"} {
		if strings.HasPrefix(b, p) {
			return true
		}
	}
	return false
}

// SafeThread returns a held thread on which a call that takes the C
// library's locks (malloc, pthread_create, dlopen) may be made without
// waiting on a lock the thread itself holds: one stopped outside the C
// library and the loader, which hold their locks only while their own
// code runs, else one blocked in a system call that waits for input, a
// child, a signal or time (never futex: a lock's wait); in a static
// program, whose C library is its own code, only the latter. The leader
// first, whose allocations are in the main heap (another thread's first
// may map an arena of its own). When none is, the process runs a
// millisecond and is held again, up to 100 times.
func (p *Process) SafeThread() (int, error) {
	var tid int
	var err error
	p.do(func() { tid, err = p.safeThread() })
	return tid, err
}

func (p *Process) safeThread() (int, error) {
	for try := 0; try < 100; try++ {
		maps, err := Maps(p.Pid)
		if err != nil {
			return 0, err
		}
		// A static program has the C library inside it, where no
		// mapping tells its code from the program's: only a thread
		// waiting in a system call is taken there.
		static := !slices.ContainsFunc(maps, func(m Mapping) bool { return libraryCode(m.Path) })
		inLibrary := func(pc uint64) bool {
			if static {
				return true
			}
			for _, m := range maps {
				if pc >= m.Start && pc < m.End {
					return libraryCode(m.Path)
				}
			}
			return false
		}
		for _, tid := range p.order() {
			r, err := getRegs(tid)
			if err != nil {
				continue
			}
			if nr, in := r.syscall(); in && waits[nr] || !in && !inLibrary(r.pc()) {
				return tid, nil
			}
		}
		if err := p.breathe(time.Millisecond); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("process %d: %w (100 tries, a millisecond apart)", p.Pid, ErrNoSafeThread)
}

// order lists the held threads, the process's leader first.
func (p *Process) order() []int {
	out := []int{}
	if p.threads[p.Pid] != nil {
		out = append(out, p.Pid)
	}
	for tid := range p.threads {
		if tid != p.Pid {
			out = append(out, tid)
		}
	}
	return out
}

// breathe lets every held thread run for d, then holds them again; a
// signal that arrives meanwhile waits for the release, as while held.
func (p *Process) breathe(d time.Duration) error {
	p.pauseEnds()
	defer func() { p.paused = time.Now() }()
	for tid, t := range p.threads {
		sig := unix.Signal(0)
		if t.inSignal {
			sig, t.Sig, t.inSignal = t.Sig, 0, false // delivered now
		}
		unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_CONT, uintptr(tid), 0, uintptr(sig), 0, 0)
	}
	time.Sleep(d)
	var running []int
	for tid := range p.threads {
		if err := unix.PtraceInterrupt(tid); err == nil {
			running = append(running, tid)
		}
	}
	for _, tid := range running {
		if err := p.waitStopped(tid); err != nil {
			return err
		}
	}
	return nil
}
