package x86

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// The function scan of a prologue plan decodes every instruction of a
// function. golang.org/x/arch's decoder, which interprets a table,
// takes some 200 ns an instruction; the forms compilers emit most (ALU
// operations, moves, lea, push and pop, branches, SSE moves) are
// measured here from their opcode instead, and anything else goes to
// x/arch. TestScanLengthsObjdump holds both to objdump's lengths, and
// TestFastStep to x/arch's reading, over glibc's whole text.

// A stepKind says what the scan needs of an instruction.
type stepKind uint8

const (
	stepOther  stepKind = iota // no branch, nothing the table tracking reads
	stepRel                    // a relative branch (jmp, jcc, call, loop, jrcxz, xbegin): rel
	stepCall                   // an indirect call (registers change)
	stepIndJmp                 // an indirect jump: a tail call or a jump table
	stepRIPLea                 // lea disp(%rip),%r64: reg, rel (the displacement)
	stepVEX                    // a VEX or EVEX instruction
)

// A step is one instruction, as the scan reads it.
type step struct {
	n    int      // its length
	kind stepKind // what it is
	call bool     // stepRel: a call
	reg  int      // stepRIPLea: the register written (gpr's numbering)
	rel  int64    // stepRel: the branch displacement; stepRIPLea: the displacement
}

// scanStep reads the instruction b starts with for the function scan.
func scanStep(b []byte) (step, error) {
	if s, ok := fastStep(b); ok {
		return s, nil
	}
	if l := vexLen(b); l != 0 {
		if l < 0 || l > len(b) {
			return step{}, fmt.Errorf("VEX or EVEX instruction % x cut short or of no map", b[:min(8, len(b))])
		}
		return step{n: l, kind: stepVEX}, nil
	}
	in, err := Decode(b)
	if err != nil {
		return step{}, err
	}
	return stepOf(in), nil
}

// stepOf reads a step from x/arch's decoding.
func stepOf(in x86asm.Inst) step {
	s := step{n: in.Len}
	switch in.Op {
	case x86asm.JMP, x86asm.CALL, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ, x86asm.XBEGIN:
		if r, ok := in.Args[0].(x86asm.Rel); ok {
			s.kind, s.rel, s.call = stepRel, int64(r), in.Op == x86asm.CALL
		} else if in.Op == x86asm.JMP {
			s.kind = stepIndJmp
		} else if in.Op == x86asm.CALL {
			s.kind = stepCall
		}
	case x86asm.LEA:
		if m, ok := in.Args[1].(x86asm.Mem); ok && m.Base == x86asm.RIP {
			if r, ok := in.Args[0].(x86asm.Reg); ok && r >= x86asm.RAX && r <= x86asm.R15 {
				s.kind, s.reg, s.rel = stepRIPLea, gpr(r), disp(m)
			}
		}
	default:
		if isJcc(in.Op) {
			if r, ok := in.Args[0].(x86asm.Rel); ok {
				s.kind, s.rel = stepRel, int64(r)
			}
		}
	}
	return s
}

// Operand shapes of the one-byte opcode map, for fastStep.
const (
	fNone  = 0      // not handled here: x/arch decodes it
	fModRM = 1 << 0 // a ModRM byte (and SIB, displacement)
	fImm8  = 1 << 1 // an 8-bit immediate
	fImmZ  = 1 << 2 // a 16- or 32-bit immediate (by the operand size)
	fOne   = 1 << 3 // the opcode alone
	fGrp3  = 1 << 4 // f6, f7: an immediate only with reg 0 or 1 (test)
	fImmV  = 1 << 5 // b8+r: 16, 32 or, with REX.W, 64 bits
)

// oneByte gives the shape of each one-byte opcode fastStep measures.
// Prefixes, branches (70-7f, e8, e9, eb, ff) and 0f are handled apart.
var oneByte = func() (t [256]uint8) {
	for op := 0; op < 0x40; op++ { // add, or, adc, sbb, and, sub, xor, cmp
		switch op & 7 {
		case 0, 1, 2, 3:
			t[op] = fModRM
		case 4:
			t[op] = fImm8
		case 5:
			t[op] = fImmZ
		}
	}
	for op := 0x50; op < 0x60; op++ { // push, pop
		t[op] = fOne
	}
	t[0x63] = fModRM                   // movslq
	t[0x68] = fImmZ                    // push imm
	t[0x69] = fModRM | fImmZ           // imul imm
	t[0x6a] = fImm8                    // push imm8
	t[0x6b] = fModRM | fImm8           // imul imm8
	t[0x80] = fModRM | fImm8           // alu r/m8, imm8
	t[0x81] = fModRM | fImmZ           // alu r/m, imm
	t[0x83] = fModRM | fImm8           // alu r/m, imm8
	for op := 0x84; op <= 0x8b; op++ { // test, xchg, mov
		t[op] = fModRM
	}
	t[0x8d] = fModRM                  // lea
	for op := 0x90; op < 0x9a; op++ { // nop, xchg, cltq, cltd
		t[op] = fOne
	}
	t[0xa8] = fImm8                   // test al, imm8
	t[0xa9] = fImmZ                   // test eax, imm
	for op := 0xb0; op < 0xb8; op++ { // mov r8, imm8
		t[op] = fImm8
	}
	for op := 0xb8; op < 0xc0; op++ { // mov r, imm
		t[op] = fImmV
	}
	t[0xc0], t[0xc1] = fModRM|fImm8, fModRM|fImm8 // shifts by imm8
	t[0xc3] = fOne                                // ret
	t[0xc6] = fModRM | fImm8                      // mov r/m8, imm8
	t[0xc7] = fModRM | fImmZ                      // mov r/m, imm (c7 f8 is xbegin: apart)
	t[0xc9] = fOne                                // leave
	t[0xcc] = fOne                                // int3
	for op := 0xd0; op <= 0xd3; op++ {            // shifts by 1, %cl
		t[op] = fModRM
	}
	t[0xf4], t[0xf5] = fOne, fOne // hlt, cmc
	t[0xf6], t[0xf7] = fModRM|fGrp3, fModRM|fGrp3
	for op := 0xf8; op <= 0xfd; op++ { // clc, stc, cli, sti, cld, std
		t[op] = fOne
	}
	t[0xfe] = fModRM // inc, dec r/m8
	// Not in 64-bit mode, or segment and other prefixes: x/arch says.
	for _, op := range []int{0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x26, 0x27, 0x2e, 0x2f, 0x36, 0x37, 0x3e, 0x3f} {
		t[op] = fNone
	}
	return t
}()

// twoByte gives the shape of each 0f opcode fastStep measures (0f 8x,
// the jcc rel32, apart).
var twoByte = func() (t [256]uint8) {
	set := func(lo, hi int, f uint8) {
		for op := lo; op <= hi; op++ {
			t[op] = f
		}
	}
	t[0x0b] = fOne                    // ud2
	set(0x10, 0x17, fModRM)           // SSE moves
	set(0x18, 0x1f, fModRM)           // prefetch, hint NOPs, endbr64 (f3 0f 1e fa)
	set(0x28, 0x2f, fModRM)           // SSE moves, conversions, compares
	set(0x40, 0x4f, fModRM)           // cmovcc
	set(0x50, 0x6f, fModRM)           // SSE
	set(0x70, 0x73, fModRM|fImm8)     // pshufd, shifts by imm8
	set(0x74, 0x76, fModRM)           // pcmpeq
	set(0x7e, 0x7f, fModRM)           // movd, movq, movdqa
	set(0x90, 0x9f, fModRM)           // setcc
	t[0xa3], t[0xab] = fModRM, fModRM // bt, bts
	t[0xa4], t[0xac] = fModRM|fImm8, fModRM|fImm8
	t[0xa5], t[0xad], t[0xaf] = fModRM, fModRM, fModRM // shld, shrd, imul
	set(0xb0, 0xb1, fModRM)                            // cmpxchg
	t[0xb3] = fModRM                                   // btr
	set(0xb6, 0xb8, fModRM)                            // movzx, popcnt
	t[0xba] = fModRM | fImm8                           // bt* imm8
	set(0xbb, 0xbf, fModRM)                            // btc, bsf, bsr, tzcnt, lzcnt, movsx
	set(0xc0, 0xc1, fModRM)                            // xadd
	t[0xc2] = fModRM | fImm8                           // cmpps
	t[0xc3] = fModRM                                   // movnti
	set(0xc4, 0xc6, fModRM|fImm8)                      // pinsrw, pextrw, shufps
	set(0xc8, 0xcf, fOne)                              // bswap
	set(0xd0, 0xfe, fModRM)                            // SSE2
	return t
}()

// fastStep measures the instruction b starts with when it is one of the
// common forms the tables above hold, and says what it is; false sends
// it to x/arch.
func fastStep(b []byte) (step, bool) {
	p, opsize16, rexW := 0, false, false
	for p < len(b) && p < 4 {
		switch b[p] {
		case 0x66:
			opsize16 = true
		case 0xf2, 0xf3, 0x2e, 0x3e, 0x64, 0x65, 0xf0:
		default:
			goto rex
		}
		p++
	}
rex:
	prefixed := p > 0
	if p < len(b) && b[p]&0xf0 == 0x40 {
		rexW = b[p]&8 != 0
		p++
	}
	if p >= len(b) {
		return step{}, false
	}
	op := b[p]
	p++
	var f uint8
	switch op {
	case 0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f, 0xeb: // jcc rel8, jmp rel8
		if prefixed || p >= len(b) {
			return step{}, false
		}
		return step{n: p + 1, kind: stepRel, rel: int64(int8(b[p]))}, true
	case 0xe8, 0xe9: // call rel32, jmp rel32
		if prefixed || p+4 > len(b) {
			return step{}, false
		}
		return step{n: p + 4, kind: stepRel, call: op == 0xe8, rel: int64(int32(binary.LittleEndian.Uint32(b[p:])))}, true
	case 0xff: // inc, dec, call, jmp, push r/m
		if prefixed || p >= len(b) {
			return step{}, false
		}
		reg := b[p] >> 3 & 7
		k := modrmLen(b[p:])
		if k < 0 || reg == 3 || reg == 5 || reg == 7 || p+k > len(b) {
			return step{}, false
		}
		s := step{n: p + k}
		switch reg {
		case 2:
			s.kind = stepCall
		case 4:
			s.kind = stepIndJmp
		}
		return s, true
	case 0x8d: // lea
		if p < len(b) && b[p]&0xc7 == 0x05 && rexW && p+5 <= len(b) { // lea disp32(%rip),%r64
			reg := int(b[p]>>3&7) + int(b[p-2]&4)<<1 // REX.R extends ModRM.reg
			return step{n: p + 5, kind: stepRIPLea, reg: reg, rel: int64(int32(binary.LittleEndian.Uint32(b[p+1:])))}, true
		}
		f = oneByte[op]
	case 0x0f:
		if p >= len(b) {
			return step{}, false
		}
		op2 := b[p]
		p++
		switch {
		case op2&0xf0 == 0x80: // jcc rel32
			if prefixed || p+4 > len(b) {
				return step{}, false
			}
			return step{n: p + 4, kind: stepRel, rel: int64(int32(binary.LittleEndian.Uint32(b[p:])))}, true
		case op2 == 0x38: // three-byte map 0f 38: a ModRM, no immediate
			p++
			f = fModRM
		case op2 == 0x3a: // three-byte map 0f 3a: a ModRM and an imm8
			p++
			f = fModRM | fImm8
		default:
			f = twoByte[op2]
		}
	case 0xc7:
		if p < len(b) && b[p] == 0xf8 { // xbegin rel
			return step{}, false
		}
		f = oneByte[op]
	default:
		f = oneByte[op]
	}
	if f == fNone {
		return step{}, false
	}
	if f&fModRM != 0 {
		if p >= len(b) {
			return step{}, false
		}
		if f&fGrp3 != 0 && b[p]>>3&7 < 2 { // test r/m, imm
			if op == 0xf6 {
				f |= fImm8
			} else {
				f |= fImmZ
			}
		}
		k := modrmLen(b[p:])
		if k < 0 {
			return step{}, false
		}
		p += k
	}
	switch {
	case f&fImm8 != 0:
		p++
	case f&fImmZ != 0 && opsize16:
		p += 2
	case f&fImmZ != 0:
		p += 4
	case f&fImmV != 0 && rexW:
		p += 8
	case f&fImmV != 0 && opsize16:
		p += 2
	case f&fImmV != 0:
		p += 4
	}
	if p > len(b) || p > x86MaxInsn {
		return step{}, false
	}
	return step{n: p}, true
}
