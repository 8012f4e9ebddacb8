package tracee

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// redZone is the x86-64 ABI's: the 128 bytes below the stack pointer a
// function may use without moving it, which a call's frame must skip.
const redZone = 128

// ntX86Xstate is the register set of the whole XSAVE state: x87, SSE,
// AVX, AVX-512's zmm and k registers.
const ntX86Xstate = 0x202

// regs are a thread's general registers.
type regs unix.PtraceRegs

func (r *regs) sp() uint64  { return r.Rsp }
func (r *regs) pc() uint64  { return r.Rip }
func (r *regs) ret() uint64 { return r.Rax }

// state is all a call may change: the general registers and the XSAVE
// state, as the thread had them.
type state struct {
	regs
	xstate []byte
}

// callRegs are the registers that make the thread call fn with args,
// its stack pointer sp (the return address at sp): the arguments in
// rdi, rsi, rdx, rcx, r8, r9; rax 0 (no vector argument, for a variadic
// function); the direction flag clear, as the ABI has it at a call;
// orig_rax -1, so that no system call the thread was in is restarted
// into the call.
func (s *state) callRegs(fn, sp uint64, args []uint64) *regs {
	r := s.regs
	r.Rip, r.Rsp, r.Rax, r.Orig_rax = fn, sp, 0, ^uint64(0)
	dst := []*uint64{&r.Rdi, &r.Rsi, &r.Rdx, &r.Rcx, &r.R8, &r.R9}
	for i, a := range args {
		*dst[i] = a
	}
	r.Eflags &^= 0x400
	return &r
}

func getRegs(tid int) (*regs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return nil, err
	}
	return (*regs)(&r), nil
}

func setRegs(tid int, r *regs) error { return unix.PtraceSetRegs(tid, (*unix.PtraceRegs)(r)) }

func getState(tid int) (*state, error) {
	r, err := getRegs(tid)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 64<<10)
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(tid), ntX86Xstate, uintptr(unsafe.Pointer(&iov)), 0, 0); e != 0 {
		return nil, fmt.Errorf("its XSAVE state: %w", e)
	}
	return &state{regs: *r, xstate: buf[:iov.Len]}, nil
}

func setState(tid int, s *state) error {
	iov := unix.Iovec{Base: &s.xstate[0]}
	iov.SetLen(len(s.xstate))
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SETREGSET, uintptr(tid), ntX86Xstate, uintptr(unsafe.Pointer(&iov)), 0, 0); e != 0 {
		return fmt.Errorf("its XSAVE state: %w", e)
	}
	return setRegs(tid, &s.regs)
}

// syscall returns the system call the thread was stopped in, and
// whether it was in one: orig_rax holds its number, and rax the
// -ERESTART* (-512 to -516) it returns to be restarted at the release.
func (r *regs) syscall() (int, bool) {
	ret := int64(r.Rax)
	return int(r.Orig_rax), int64(r.Orig_rax) >= 0 && ret <= -512 && ret >= -516
}

// waits are the system calls that wait for input, a child, a signal or
// time, in which a thread holds none of the C library's locks (futex is
// not one: a lock's wait).
var waits = map[int]bool{
	unix.SYS_READ: true, unix.SYS_READV: true, unix.SYS_NANOSLEEP: true, unix.SYS_CLOCK_NANOSLEEP: true,
	unix.SYS_POLL: true, unix.SYS_PPOLL: true, unix.SYS_SELECT: true, unix.SYS_PSELECT6: true,
	unix.SYS_EPOLL_WAIT: true, unix.SYS_EPOLL_PWAIT: true, unix.SYS_EPOLL_PWAIT2: true,
	unix.SYS_ACCEPT: true, unix.SYS_ACCEPT4: true, unix.SYS_RECVFROM: true, unix.SYS_RECVMSG: true,
	unix.SYS_WAIT4: true, unix.SYS_WAITID: true, unix.SYS_PAUSE: true, unix.SYS_RT_SIGSUSPEND: true,
	unix.SYS_RT_SIGTIMEDWAIT: true,
}
