package tracee

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// An Arg is one argument of a call: a word, or bytes the call is given
// a pointer to (copied below the thread's red zone for the call).
type Arg struct {
	word  uint64
	bytes []byte
}

// Word is an argument passed as it is.
func Word(v uint64) Arg { return Arg{word: v} }

// Str is a C string argument: s and a NUL, copied to the thread's
// stack, the call given its address.
func Str(s string) Arg { return Arg{bytes: append([]byte(s), 0)} }

// ErrCallTimeout: the called function did not return in time. The
// thread's registers are put back regardless; what the function did
// before is not undone.
var ErrCallTimeout = errors.New("the call did not return in time")

// ErrCallFault: the called function faulted (SIGSEGV, SIGBUS, SIGILL,
// SIGFPE, SIGTRAP in the calling thread). The signal is not delivered:
// the thread's registers are put back, as if the call had not been
// made; what the function did before the fault stays done.
var ErrCallFault = errors.New("the call faulted")

// fault says whether sig is one an instruction raises.
func fault(sig unix.Signal) bool {
	switch sig {
	case unix.SIGSEGV, unix.SIGBUS, unix.SIGILL, unix.SIGFPE, unix.SIGTRAP:
		return true
	}
	return false
}

// ErrNoCall: the thread cannot be given a call (not held, or unknown).
var ErrNoCall = errors.New("the thread cannot make the call")

// CallOptions says how a call runs.
type CallOptions struct {
	// OthersRun lets the process's other threads run while the call
	// does, held again after: a call that takes a lock another thread
	// may hold (dlopen: the loader's; malloc's) would otherwise wait
	// forever. The process is then not held during the call.
	OthersRun bool
	// Timeout bounds the call (10 s if 0).
	Timeout time.Duration
	// Last says the call is the last before Release (with OthersRun):
	// the others, running, are not held again all at once only to be
	// let go: each is stopped and let go at once while the rest run.
	// The calling thread is held until Release, which must come next
	// (or calls on that thread alone).
	Last bool
}

// Call makes held thread tid call the function at fn with args (at most
// six: the integer argument registers), and returns what it returned,
// the thread held again with its registers, vector state included, as
// they were. The function returns to address 0, whose fault the tracer
// takes and the program never sees.
//
// A thread held inside a system call makes the call first; the system
// call is restarted when the thread is released, as after a signal
// handler's return (SA_RESTART) and as the kernel restarts it after any
// stop: the function runs with no system call in progress
// (orig_rax/the syscall number set to none), and the registers put back
// afterwards say again which call to restart.
func (p *Process) Call(tid int, fn uint64, o CallOptions, args ...Arg) (ret uint64, err error) {
	if len(args) > 6 {
		return 0, fmt.Errorf("call of %#x: %d arguments, at most 6", fn, len(args))
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	p.do(func() { ret, err = p.call(tid, fn, o, args) })
	return ret, err
}

func (p *Process) call(tid int, fn uint64, o CallOptions, args []Arg) (uint64, error) {
	t := p.threads[tid]
	if t == nil {
		return 0, fmt.Errorf("thread %d: %w", tid, ErrNoCall)
	}
	saved, err := getState(tid)
	if err != nil {
		return 0, fmt.Errorf("thread %d: its registers: %w", tid, err)
	}
	mem, err := os.OpenFile(filepath.Join("/proc", strconv.Itoa(p.Pid), "mem"), os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("process %d: its memory: %w", p.Pid, err)
	}
	defer mem.Close()
	// The frame: below the red zone, each argument's bytes, then the
	// return address 0, the stack aligned as a call leaves it.
	sp := saved.sp() - redZone
	words := make([]uint64, len(args))
	for i, a := range args {
		if a.bytes == nil {
			words[i] = a.word
			continue
		}
		sp = (sp - uint64(len(a.bytes))) &^ 15
		if _, err := mem.WriteAt(a.bytes, int64(sp)); err != nil {
			return 0, fmt.Errorf("thread %d: writing an argument to its stack: %w", tid, err)
		}
		words[i] = sp
	}
	sp = sp&^15 - 8
	if _, err := mem.WriteAt(make([]byte, 8), int64(sp)); err != nil {
		return 0, fmt.Errorf("thread %d: writing the return address to its stack: %w", tid, err)
	}
	regs := saved.callRegs(fn, sp, words)
	if err := setRegs(tid, regs); err != nil {
		return 0, fmt.Errorf("thread %d: setting up the call: %w", tid, err)
	}
	// The thread's pending signal, if it stopped for one, waits until
	// the release: the call starts from its stop with none.
	ret, callErr := p.run(t, o)
	if err := setState(tid, saved); err != nil {
		return 0, errors.Join(callErr, fmt.Errorf("thread %d: putting its registers back: %w", tid, err))
	}
	return ret, callErr
}

// run resumes t at its call and waits for the call's return, letting
// the others run meanwhile if o says so; every thread is held again
// when it returns.
func (p *Process) run(t *Thread, o CallOptions) (uint64, error) {
	resume := func(tid int, sig unix.Signal) {
		unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_CONT, uintptr(tid), 0, uintptr(sig), 0, 0)
	}
	running := map[int]bool{t.Tid: true}
	if o.OthersRun {
		p.pauseEnds()
		for tid, u := range p.threads {
			if tid == t.Tid {
				continue
			}
			sig := unix.Signal(0)
			if u.inSignal {
				sig, u.Sig, u.inSignal = u.Sig, 0, false // delivered now, as it would have been
			}
			resume(tid, sig)
			running[tid] = true
		}
	}
	resume(t.Tid, 0)
	deadline := time.Now().Add(o.Timeout)
	var ret uint64
	var callErr error
	for done := false; !done; {
		if time.Now().After(deadline) {
			callErr = fmt.Errorf("thread %d: %w (%v)", t.Tid, ErrCallTimeout, o.Timeout)
			break
		}
		idle := true
		for tid := range running {
			var ws unix.WaitStatus
			got, err := unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil)
			if err == unix.EINTR || err == nil && got == 0 {
				continue
			}
			idle = false
			if err != nil || ws.Exited() || ws.Signaled() {
				delete(running, tid)
				delete(p.threads, tid)
				if tid == t.Tid || tid == p.Pid {
					return 0, fmt.Errorf("process %d: %w during the call", p.Pid, ErrExited)
				}
				continue
			}
			if !ws.Stopped() {
				continue
			}
			ev := uint32(ws) >> 16 & 0xff
			switch {
			case ev == unix.PTRACE_EVENT_CLONE:
				if msg, err := unix.PtraceGetEventMsg(tid); err == nil && msg != 0 {
					child := int(msg)
					if _, ok := p.threads[child]; !ok {
						p.threads[child] = &Thread{Tid: child, New: true}
					}
					running[child] = true // its first stop comes, and it is resumed then
				}
				resume(tid, 0)
			case ev != 0:
				resume(tid, 0) // an interrupt left from the hold, a new thread's first stop
			case tid == t.Tid && fault(ws.StopSignal()):
				r, err := getRegs(tid)
				done = true
				t.inSignal = true // the detach may deliver t.Sig from here
				delete(running, tid)
				if err == nil && r.pc() == 0 && ws.StopSignal() == unix.SIGSEGV {
					ret = r.ret()
					break
				}
				// The function's own fault, which the program never
				// sees: it would most likely end it. The thread's
				// registers are put back, the call undone as far as
				// the registers go.
				pc := uint64(0)
				if r != nil {
					pc = r.pc()
				}
				callErr = fmt.Errorf("thread %d: %w: %v at %#x", t.Tid, ErrCallFault, ws.StopSignal(), pc)
			default:
				resume(tid, ws.StopSignal()) // a signal: delivered as it would have been
			}
		}
		if idle {
			// Until a tracee stops (SIGCHLD), or a while, to look again
			// (a notice may come before the stop is seen, or merge
			// with another).
			select {
			case <-p.chld:
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if o.Last && o.OthersRun {
		// Let go as they run: each stopped and let go at once, the
		// others running meanwhile (no pause of the whole process).
		var stopping []int
		for tid := range running {
			if tid != t.Tid && unix.PtraceInterrupt(tid) == nil {
				stopping = append(stopping, tid)
			}
		}
		for _, tid := range stopping {
			err := p.waitStopped(tid)
			if err == nil {
				err = p.detach(tid)
			}
			if err != nil {
				return ret, errors.Join(callErr, err)
			}
		}
		return ret, callErr
	}
	// Hold again every thread still running.
	for tid := range running {
		if err := unix.PtraceInterrupt(tid); err != nil {
			delete(running, tid)
			delete(p.threads, tid)
		}
	}
	for tid := range running {
		if err := p.waitStopped(tid); err != nil {
			return 0, errors.Join(callErr, err)
		}
	}
	if o.OthersRun {
		p.paused = time.Now() // held again, all of them
	}
	return ret, callErr
}
