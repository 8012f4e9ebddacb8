package x86

import "golang.org/x/arch/x86/x86asm"

// LoopHead reports whether the NOP that ends at head bytes into the
// function fn (at address start) may be a loop's alignment padding: a
// NOP of 5 or 6 bytes pads to an alignment of at least 8, so a NOP whose
// end is not 8-aligned never is; one whose end is, is padding if a jump
// later in the function comes back to head. The rest of the function is
// decoded to find out (for these NOPs only: one in eight of the sites);
// bytes that do not decode count as padding, so that a NOP is taken for
// a site only when it surely is one.
func LoopHead(fn []byte, start uint64, head int) bool {
	if (start+uint64(head))%8 != 0 {
		return false
	}
	for pos := head; pos < len(fn); {
		in, err := Decode(fn[pos:])
		if err != nil || in.Len == 0 {
			return true
		}
		if Class(in) == ClassJcc || in.Op == x86asm.JMP || in.Op == x86asm.LOOP || in.Op == x86asm.LOOPE || in.Op == x86asm.LOOPNE {
			if r, ok := in.Args[0].(x86asm.Rel); ok && int64(pos+in.Len)+int64(r) == int64(head) {
				return true
			}
		}
		pos += in.Len
	}
	return false
}

// An InsnClass sorts the instructions met between the frame setup and an
// mcount call.
type InsnClass uint8

const (
	ClassOther    InsnClass = iota // computes: may come before a call, not before a NOP
	ClassPrologue                  // saves, stores or copies a register, adjusts %rsp
	ClassJcc                       // a conditional jump
	ClassStop                      // a call elsewhere, a jump, a return, a trap, a NOP not ours
)

// Step decodes the instruction at b and classifies it; for a
// conditional jump it also returns the displacement. Instructions it
// cannot decode stop the scan.
func Step(b []byte) (n int, c InsnClass, rel uint64) {
	if n, ok := Fast(b); ok {
		return n, ClassPrologue, 0
	}
	in, err := Decode(b)
	if err != nil || in.Len == 0 {
		return 1, ClassStop, 0
	}
	c = Class(in)
	if c == ClassJcc {
		r, ok := in.Args[0].(x86asm.Rel)
		if !ok {
			return in.Len, ClassStop, 0
		}
		rel = uint64(int64(r))
	}
	return in.Len, c, rel
}

// Fast recognises by their bytes the instructions gcc and clang put
// most often before an mcount call, sparing the general decoder on the
// scan over every function: push of a register, `sub $imm,%rsp`, a
// register copied to a register or spilled to the frame. Each form is
// checked against x/arch's decoding in the tests.
func Fast(b []byte) (int, bool) {
	rex := len(b) > 0 && b[0]&0xf0 == 0x40
	switch {
	case len(b) >= 1 && b[0]&0xf8 == 0x50: // push %rax..%rdi
		return 1, true
	case len(b) >= 2 && b[0] == 0x41 && b[1]&0xf8 == 0x50: // push %r8..%r15
		return 2, true
	case len(b) >= 4 && b[0] == 0x48 && b[1] == 0x83 && b[2] == 0xec: // sub $imm8,%rsp
		return 4, true
	case len(b) >= 7 && b[0] == 0x48 && b[1] == 0x81 && b[2] == 0xec: // sub $imm32,%rsp
		return 7, true
	case len(b) >= 2 && b[0] == 0x89 && b[1]>>6 == 3: // mov %r32,%r32
		return 2, true
	case len(b) >= 3 && rex && b[1] == 0x89 && b[2]>>6 == 3: // mov %r,%r with REX
		return 3, true
	case len(b) >= 3 && b[0] == 0x89 && b[1]&0xc7 == 0x45: // mov %r32,disp8(%rbp)
		return 3, true
	case len(b) >= 4 && rex && b[0]&1 == 0 && b[1] == 0x89 && b[2]&0xc7 == 0x45: // mov %r,disp8(%rbp) with REX (no REX.B: rm 5 is %rbp)
		return 4, true
	}
	return 0, false
}

// Class classifies a decoded instruction for the scan of a prologue.
func Class(in x86asm.Inst) InsnClass {
	switch in.Op {
	case x86asm.CALL, x86asm.LCALL, x86asm.JMP, x86asm.LJMP, x86asm.RET, x86asm.LRET,
		x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.UD0, x86asm.UD1, x86asm.UD2,
		x86asm.HLT, x86asm.INT, x86asm.SYSCALL, x86asm.SYSENTER, x86asm.SYSEXIT, x86asm.SYSRET,
		x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ,
		x86asm.NOP:
		return ClassStop
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE, x86asm.JL,
		x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS:
		return ClassJcc
	case x86asm.PUSH, x86asm.LEA:
		return ClassPrologue
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD:
		// Registers copied, spilled to the frame, or arguments passed on
		// the stack loaded from the caller's frame.
		if frameOperand(in.Args[0]) && frameOperand(in.Args[1]) {
			return ClassPrologue
		}
	case x86asm.SUB, x86asm.ADD, x86asm.AND:
		if in.Args[0] == x86asm.RSP {
			return ClassPrologue
		}
	case x86asm.MOVAPS, x86asm.MOVAPD, x86asm.MOVDQA, x86asm.MOVUPS, x86asm.MOVUPD, x86asm.MOVDQU,
		x86asm.MOVSD_XMM, x86asm.MOVSS, x86asm.MOVQ, x86asm.MOVD:
		if _, store := in.Args[0].(x86asm.Mem); store && frameOperand(in.Args[0]) {
			return ClassPrologue
		}
	case x86asm.TEST:
		if in.Args[0] == x86asm.AL && in.Args[1] == x86asm.AL { // varargs: were vector registers passed?
			return ClassPrologue
		}
	}
	return ClassOther
}

// frameOperand reports whether a is a register, an immediate or a memory
// operand in the stack frame (based on %rbp or %rsp).
func frameOperand(a x86asm.Arg) bool {
	switch a := a.(type) {
	case x86asm.Reg, x86asm.Imm:
		return true
	case x86asm.Mem:
		return a.Segment == 0 && (a.Base == x86asm.RBP || a.Base == x86asm.RSP)
	}
	return false
}
