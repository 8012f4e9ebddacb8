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
