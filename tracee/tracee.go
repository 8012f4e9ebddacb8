// Package tracee holds a running process still through ptrace, every one
// of its threads, makes one of them call a function of the process's
// (dlopen, the runtime's attach entry), and lets the process go exactly
// as it was: each thread's registers, vector state included, and each
// signal that arrived while it was held, delivered as it would have been.
//
// It is the first step of attaching to a process ftpatch did not start
// (ftpatch record -p). What it changes in the process while it holds it
// is the stack below a thread's red zone, for the duration of a call (a
// return address and the call's string arguments, as a signal frame
// would), and nothing else.
//
// How a thread is held. Each thread is seized (PTRACE_SEIZE, which
// changes nothing the process can see: no SIGSTOP, unlike
// PTRACE_ATTACH) and interrupted (PTRACE_INTERRUPT): it stops where it
// is, or, in a system call, as the call returns -ERESTART* to be
// restarted when it resumes (a read on a pipe, a nanosleep: the program
// never sees EINTR; the kernel restarts the call, a nanosleep for what
// remains). Threads created while the process is held are seized by the
// kernel (PTRACE_O_TRACECLONE) and held too. Releasing detaches each
// thread with the signal it stopped for, if it stopped for one
// (signal-delivery-stop), so that the signal reaches the program as if
// no one had looked.
//
// ptrace requests are served by the thread that seized the tracee: every
// request here runs on one locked OS thread (a goroutine of the
// Process's own, which runs closures sent to it).
package tracee

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrExited: the process exited (or was killed) while it was held, or
// before it could be seized.
var ErrExited = errors.New("the process exited")

// ErrPermission: the kernel refused to let this process trace the other
// (its message names the rule that refused).
var ErrPermission = errors.New("the kernel refuses to let ftpatch trace the process")

// ErrStopped: the process is stopped (SIGSTOP, SIGTSTP, ^Z): holding it
// would resume it, since a thread held is let run to make a call.
var ErrStopped = errors.New("the process is stopped (SIGSTOP or ^Z): continue it first (kill -CONT)")

// ErrUnsupported: what was asked is not done on this architecture.
var ErrUnsupported = errors.New("not supported on this architecture")

// A Thread is one held thread of the process.
type Thread struct {
	Tid int
	// Sig is the signal the thread stopped for (a signal-delivery-stop)
	// and will be given when released: 0 for the interrupt's own stop.
	Sig unix.Signal
	// New says the thread was created while the process was held.
	New bool
	// info is Sig's siginfo, given back with it; inSignal says the
	// thread's last stop is a signal-delivery-stop (of Sig, or of a
	// call's end), where a detach can deliver a signal.
	info     unix.Siginfo
	inSignal bool
}

// A Process is a process whose threads are held.
type Process struct {
	Pid     int
	threads map[int]*Thread
	ops     chan func()
	done    chan struct{}
	// chld hears SIGCHLD, which the kernel sends the tracer when a
	// tracee stops: how a call's wait learns that one did.
	chld chan os.Signal
	// Held is when the first thread was stopped: how long the process
	// was held is the time from it to Release's return.
	Held time.Time
	// Pause is the longest time every thread was held at once (a call
	// with OthersRun lets them run between two pauses), known once the
	// process is released; paused is when the current pause began.
	Pause  time.Duration
	paused time.Time
	// grouped says a thread reported a group-stop while being held: the
	// process was stopped meanwhile (SIGSTOP), and is let go stopped.
	grouped bool
}

// pauseEnds ends the current pause (the threads run, or are released).
func (p *Process) pauseEnds() {
	if !p.paused.IsZero() {
		p.Pause = max(p.Pause, time.Since(p.paused))
		p.paused = time.Time{}
	}
}

// options are the ptrace options every thread is seized with: new
// threads are seized (and held) as they are made. No PTRACE_O_EXITKILL:
// should ftpatch die, the kernel detaches, and the process runs on.
const options = unix.PTRACE_O_TRACECLONE

// Seize holds every thread of process pid. On any failure, the threads
// already held are let go as they were, and the error says why
// (ErrPermission with the rule, ErrExited).
func Seize(pid int) (*Process, error) {
	if procState(pid) == 'T' {
		return nil, fmt.Errorf("process %d: %w", pid, ErrStopped)
	}
	return seize(pid)
}

// seize is Seize without its first look at the process's state: one
// stopped since is told by its threads' group-stops.
func seize(pid int) (*Process, error) {
	p := &Process{Pid: pid, threads: map[int]*Thread{}, ops: make(chan func()), done: make(chan struct{}), chld: make(chan os.Signal, 1)}
	signal.Notify(p.chld, unix.SIGCHLD)
	go p.serve()
	var err error
	p.do(func() { err = p.seizeAll() })
	if err != nil {
		p.do(func() { p.releaseAll() })
		p.stop()
		return nil, err
	}
	return p, nil
}

// serve runs the closures sent to p.ops on one locked OS thread, the
// tracer of every thread of the process.
func (p *Process) serve() {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	// Ahead of the process's threads where the kernel allows it (root,
	// CAP_SYS_NICE): released one by one, the first would otherwise
	// take the processor from the tracer before it lets the last go,
	// and stretch the pause on a busy machine. Refused, it runs as is.
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -10)
	defer close(p.done)
	for f := range p.ops {
		f()
	}
}

// do runs f on the tracer thread and waits for it.
func (p *Process) do(f func()) {
	ch := make(chan struct{})
	p.ops <- func() { f(); close(ch) }
	<-ch
}

func (p *Process) stop() {
	signal.Stop(p.chld)
	close(p.ops)
	<-p.done
}

// tids lists the process's threads now.
func tids(pid int) ([]int, error) {
	ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("process %d: %w", pid, ErrExited)
		}
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// seizeAll seizes and interrupts every thread, listing them again until
// a listing finds none new (a thread created between the listing and the
// seizing of its creator is found by the next listing, or seized by the
// kernel: TRACECLONE).
func (p *Process) seizeAll() error {
	for {
		list, err := tids(p.Pid)
		if err != nil {
			return err
		}
		// Seize and interrupt every new thread, then wait for each:
		// the waits overlap, as each thread stops when it next runs.
		var fresh []int
		for _, tid := range list {
			if _, ok := p.threads[tid]; ok {
				continue
			}
			if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, options, 0, 0); e != 0 {
				if e == unix.ESRCH {
					continue // the thread ended
				}
				if e == unix.EPERM {
					return permission(p.Pid, e)
				}
				return fmt.Errorf("process %d: seizing thread %d: %w", p.Pid, tid, e)
			}
			if p.Held.IsZero() {
				p.Held = time.Now()
				p.paused = p.Held
			}
			p.threads[tid] = &Thread{Tid: tid}
			if err := unix.PtraceInterrupt(tid); err != nil && err != unix.ESRCH {
				return fmt.Errorf("process %d: interrupting thread %d: %w", p.Pid, tid, err)
			}
			fresh = append(fresh, tid)
		}
		for _, tid := range fresh {
			if err := p.waitStopped(tid); err != nil {
				return err
			}
		}
		if len(fresh) == 0 {
			if len(p.threads) == 0 {
				return fmt.Errorf("process %d: %w", p.Pid, ErrExited)
			}
			if p.grouped {
				return fmt.Errorf("process %d: %w", p.Pid, ErrStopped)
			}
			return nil
		}
	}
}

// waitStopped waits until thread tid is stopped, noting the signal it
// stopped for and the threads it made meanwhile (each waited for in
// turn). A thread that ended is forgotten.
func (p *Process) waitStopped(tid int) error {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(tid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.ECHILD {
				delete(p.threads, tid)
				return nil
			}
			return fmt.Errorf("process %d: waiting for thread %d: %w", p.Pid, tid, err)
		}
		if got != tid {
			continue
		}
		if ws.Exited() || ws.Signaled() {
			delete(p.threads, tid)
			if tid == p.Pid {
				return fmt.Errorf("process %d: %w", p.Pid, ErrExited)
			}
			return nil
		}
		if !ws.Stopped() {
			continue
		}
		t := p.threads[tid]
		switch ev := uint32(ws) >> 16 & 0xff; {
		case ev == unix.PTRACE_EVENT_CLONE:
			// A thread made just now: held from its first instruction
			// (it starts with a stop of its own); this one is held at
			// the event's stop.
			if t != nil {
				t.inSignal = false
			}
			msg, err := unix.PtraceGetEventMsg(tid)
			if err == nil && msg != 0 {
				child := int(msg)
				if _, ok := p.threads[child]; !ok {
					p.threads[child] = &Thread{Tid: child, New: true}
					if err := p.waitStopped(child); err != nil {
						return err
					}
				}
			}
			return nil
		case ev != 0:
			// The interrupt's stop, a group-stop, another event's. A
			// group-stop's signal is the one that stopped the process
			// (the interrupt's is SIGTRAP).
			if t != nil {
				t.inSignal = false
			}
			if ev == unix.PTRACE_EVENT_STOP && ws.StopSignal() != unix.SIGTRAP {
				p.grouped = true
			}
			return nil
		default:
			// A signal-delivery-stop: held, the signal given back at
			// release with its siginfo.
			if t != nil {
				t.Sig, t.inSignal = ws.StopSignal(), true
				getSiginfo(tid, &t.info)
			}
			return nil
		}
	}
}

// Threads returns the held threads' ids, in order.
func (p *Process) Threads() []int {
	var out []int
	p.do(func() {
		for tid := range p.threads {
			out = append(out, tid)
		}
	})
	slices.Sort(out)
	return out
}

// Thread returns what is known of held thread tid, nil if it is not held.
func (p *Process) Thread(tid int) *Thread {
	var t *Thread
	p.do(func() {
		if x := p.threads[tid]; x != nil {
			c := *x
			t = &c
		}
	})
	return t
}

// Release lets every thread go, each with the signal it stopped for,
// and ends the Process. It returns how long the process was held: from
// the first thread's stop to the last one's release, as the tracer
// thread saw them.
func (p *Process) Release() (time.Duration, error) {
	var err error
	var held time.Duration
	p.do(func() {
		err = p.releaseAll()
		held = time.Since(p.Held)
		p.pauseEnds()
	})
	p.stop()
	return held, err
}

func (p *Process) releaseAll() error {
	var errs []error
	// The leader last: a dying one's end is told its tracer only once
	// the other threads' are taken.
	order := make([]int, 0, len(p.threads))
	for tid := range p.threads {
		if tid != p.Pid {
			order = append(order, tid)
		}
	}
	if p.threads[p.Pid] != nil {
		order = append(order, p.Pid)
	}
	for _, tid := range order {
		if err := p.detach(tid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// procState is the process's state letter in /proc/PID/stat (R, S, D, T,
// t, Z...), 0 if it cannot be read.
func procState(pid int) byte {
	st, err := ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.State
}

// parent returns the process's parent's pid (0 if unknown).
func (p *Process) parent() int {
	st, _ := ReadStat(p.Pid)
	return st.PPid
}

// detach lets held thread tid go, with the signal it stopped for, and
// forgets it.
func (p *Process) detach(tid int) error {
	t := p.threads[tid]
	delete(p.threads, tid)
	if t == nil {
		return nil
	}
	var errs []error
	sig := 0
	if t.Sig != 0 && t.inSignal {
		// Detached from a signal-delivery-stop, the thread gets the
		// signal given, with the siginfo set here: its own.
		setSiginfo(tid, &t.info)
		sig = int(t.Sig)
	}
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(tid), 0, uintptr(sig), 0, 0)
	if e == unix.ESRCH {
		// Not stopped, though held: the thread is dying (the process
		// exits, or was killed), and waits for its tracer to take its
		// end before the process's parent can. The leader's end, taken
		// by a tracer that is not the process's parent, goes on to the
		// parent; taken by its parent, it would be the parent's no
		// more: left for the parent.
		if tid != p.Pid || p.parent() != os.Getpid() {
			reap(tid)
		}
	} else if e != 0 {
		errs = append(errs, fmt.Errorf("thread %d: %w", tid, e))
	}
	if t.Sig != 0 && !t.inSignal {
		// Stopped since at an event, where a detach gives no signal:
		// sent again, to the thread it was meant for.
		if err := unix.Tgkill(p.Pid, tid, t.Sig); err != nil && err != unix.ESRCH {
			errs = append(errs, fmt.Errorf("thread %d: giving back %v: %w", tid, t.Sig, err))
		}
	}
	return errors.Join(errs...)
}

// reap takes a dying thread's end, waiting a second at most.
func reap(tid int) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var ws unix.WaitStatus
		got, err := unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil)
		if err != nil && err != unix.EINTR || got == tid && (ws.Exited() || ws.Signaled()) {
			return
		}
	}
}

// getSiginfo and setSiginfo read and write the siginfo of the signal a
// thread is stopped for.
func getSiginfo(tid int, si *unix.Siginfo) {
	unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(tid), 0, uintptr(unsafe.Pointer(si)), 0, 0)
}

func setSiginfo(tid int, si *unix.Siginfo) {
	unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SETSIGINFO, uintptr(tid), 0, uintptr(unsafe.Pointer(si)), 0, 0)
}

// permission explains a refused PTRACE_SEIZE: the Yama rule in force,
// or the other user's process.
func permission(pid int, e error) error {
	why := []string{}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		switch strings.TrimSpace(string(b)) {
		case "1":
			why = append(why, "kernel.yama.ptrace_scope is 1: only a process's ancestors may trace it, unless it allows one (prctl PR_SET_PTRACER) or ftpatch runs with CAP_SYS_PTRACE")
		case "2":
			why = append(why, "kernel.yama.ptrace_scope is 2: only a process with CAP_SYS_PTRACE may trace")
		case "3":
			why = append(why, "kernel.yama.ptrace_scope is 3: no process may trace another until the next boot")
		}
	}
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "TracerPid:"); ok && strings.TrimSpace(v) != "0" {
				why = append(why, "process "+strings.TrimSpace(v)+" traces it already (a debugger, strace, or another ftpatch record -p)")
			}
		}
	}
	if st, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
		if s, ok := st.Sys().(*syscall.Stat_t); ok && int(s.Uid) != os.Getuid() {
			why = append(why, fmt.Sprintf("it belongs to user %d: tracing another user's process takes CAP_SYS_PTRACE", s.Uid))
		}
	}
	if len(why) == 0 {
		why = append(why, "the process is not dumpable (setuid, or prctl PR_SET_DUMPABLE 0) or another tracer holds it; tracing it takes CAP_SYS_PTRACE")
	}
	return fmt.Errorf("process %d: %w (%v): %s", pid, ErrPermission, e, strings.Join(why, "; "))
}
