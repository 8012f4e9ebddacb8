// Package arm64 holds ftpatch's knowledge of AArch64 instructions: the
// words it writes at patch sites (NOP, BL, B, the CALL_OPS `mov x9,
// x30`), the reach of B and BL, the words it recognises (bti, the -pg
// prologue's `mov x0, x30`, PLT stubs), and Decode, the x/arch decoder
// made safe for concurrent use. Every encoding is checked in its tests
// against golang.org/x/arch and objdump (isa/testdata/insns.txt).
package arm64

import (
	"encoding/binary"
	"fmt"
	"ftpatch/nops"
)

// The arm64 instructions ftpatch reads or writes at patch sites, as 32-bit
// words (stored little-endian; see Bytes).
const (
	// NOP fills every `-fpatchable-function-entry` slot while a site
	// is disabled.
	NOP uint32 = 0xd503201f // nop
	// MovX9X30 is the first entry slot of an enabled CALL_OPS site:
	// it keeps the caller's return address in x9, because the `bl` that
	// follows overwrites x30.
	MovX9X30 uint32 = 0xaa1e03e9 // mov x9, x30
	// MovX17X30 is the first slot of an enabled site made from a
	// function's prologue (the runtime's ftrace_prologue_caller takes
	// the caller's return address from x17): x9 may hold a value the
	// function's callers keep across the call, as the function was
	// compiled without tracing flags (gcc's -fipa-ra); x17 (IP1) never
	// does, as any call may change it.
	MovX17X30 uint32 = 0xaa1e03f1 // mov x17, x30
	// MovX0X30 is what gcc -pg emits before `bl _mcount`, passing
	// the return address as the first argument; recognised, never written.
	MovX0X30 uint32 = 0xaa1e03e0 // mov x0, x30
	// BTIC is the branch-target landing pad a BTI-enabled function
	// starts with; patch slots then begin after it.
	BTIC uint32 = 0xd503245f // bti c
	// LdrX16Lit8 and BrX16 begin a veneer of the runtime's
	// (runtime/src/arch/arm64/veneer.c), which takes a site's bl to a
	// trampoline beyond its reach: x16 gets the target from the
	// 8-byte literal after the two, and the br goes there (x16 is
	// the register a branch may change, and a `br x16` may land on
	// `bti c`). The linkers' veneers end with BrX16 too.
	LdrX16Lit8 uint32 = 0x58000050 // ldr x16, .+8
	BrX16      uint32 = 0xd61f0200 // br x16
)

// arm64BranchMax is the reach of B and BL: a signed 26-bit count of words.
const arm64BranchMax = 1 << 27 // bytes: ±128 MiB

// The opcodes of B and BL; the low 26 bits hold the word displacement.
const (
	arm64OpB    uint32 = 0x14000000 // b
	arm64OpBL   uint32 = 0x94000000 // bl
	arm64OpMask uint32 = 0xfc000000
	arm64Imm26  uint32 = 1<<26 - 1 // mask of the displacement field
)

// BL returns `bl target` for an instruction at pc: 0x94000000 | imm26,
// imm26 = (target-pc)/4. Both addresses must be 4-byte aligned (else an
// error wrapping nops.ErrAlign) and the target within ±128 MiB (else a
// *nops.RangeError: go through a trampoline in range or the ops literal).
func BL(pc, target uint64) (uint32, error) {
	return arm64Branch(arm64OpBL, pc, target)
}

// B returns `b target` for an instruction at pc: 0x14000000 | imm26,
// with the same rules as BL. It is for trampolines and direct jumps,
// where no return address must be written.
func B(pc, target uint64) (uint32, error) {
	return arm64Branch(arm64OpB, pc, target)
}

func arm64Branch(op uint32, pc, target uint64) (uint32, error) {
	if pc%4 != 0 || target%4 != 0 {
		return 0, fmt.Errorf("branch from %#x to %#x: %w", pc, target, nops.ErrAlign)
	}
	d := int64(target - pc)
	if d < -arm64BranchMax || d >= arm64BranchMax {
		return 0, &nops.RangeError{From: pc, To: target, Max: arm64BranchMax}
	}
	return op | uint32(d>>2)&arm64Imm26, nil
}

// BranchTarget decodes insn at pc as an immediate B or BL and returns
// the address it branches to and whether it is BL (writes x30). ok is
// false for any other instruction, including conditional and register
// branches.
func BranchTarget(pc uint64, insn uint32) (target uint64, link bool, ok bool) {
	switch insn & arm64OpMask {
	case arm64OpB, arm64OpBL:
	default:
		return 0, false, false
	}
	d := int64(int32(insn<<6)>>6) * 4 // sign-extend imm26, in bytes
	return pc + uint64(d), insn&arm64OpMask == arm64OpBL, true
}

// Bytes returns insns as they lie in memory: each word little-endian,
// which is the only instruction byte order arm64 has.
func Bytes(insns ...uint32) []byte {
	b := make([]byte, 0, 4*len(insns))
	for _, w := range insns {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}
