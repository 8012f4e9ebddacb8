package nops

import (
	"encoding/binary"
	"fmt"
)

// The arm64 instructions ftpatch reads or writes at patch sites, as 32-bit
// words (stored little-endian; see ARM64Bytes).
const (
	// ARM64NOP fills every `-fpatchable-function-entry` slot while a site
	// is disabled.
	ARM64NOP uint32 = 0xd503201f // nop
	// ARM64MovX9X30 is the first entry slot of an enabled CALL_OPS site:
	// it keeps the caller's return address in x9, because the `bl` that
	// follows overwrites x30.
	ARM64MovX9X30 uint32 = 0xaa1e03e9 // mov x9, x30
	// ARM64MovX0X30 is what gcc -pg emits before `bl _mcount`, passing
	// the return address as the first argument; recognised, never written.
	ARM64MovX0X30 uint32 = 0xaa1e03e0 // mov x0, x30
	// ARM64BTIC is the branch-target landing pad a BTI-enabled function
	// starts with; patch slots then begin after it.
	ARM64BTIC uint32 = 0xd503245f // bti c
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

// ARM64BL returns `bl target` for an instruction at pc: 0x94000000 | imm26,
// imm26 = (target-pc)/4. Both addresses must be 4-byte aligned (else an
// error wrapping ErrAlign) and the target within ±128 MiB (else a
// *RangeError: go through a trampoline in range or the ops literal).
func ARM64BL(pc, target uint64) (uint32, error) {
	return arm64Branch(arm64OpBL, pc, target)
}

// ARM64B returns `b target` for an instruction at pc: 0x14000000 | imm26,
// with the same rules as ARM64BL. It is for trampolines and direct jumps,
// where no return address must be written.
func ARM64B(pc, target uint64) (uint32, error) {
	return arm64Branch(arm64OpB, pc, target)
}

func arm64Branch(op uint32, pc, target uint64) (uint32, error) {
	if pc%4 != 0 || target%4 != 0 {
		return 0, fmt.Errorf("branch from %#x to %#x: %w", pc, target, ErrAlign)
	}
	d := int64(target - pc)
	if d < -arm64BranchMax || d >= arm64BranchMax {
		return 0, &RangeError{From: pc, To: target, Max: arm64BranchMax}
	}
	return op | uint32(d>>2)&arm64Imm26, nil
}

// ARM64BranchTarget decodes insn at pc as an immediate B or BL and returns
// the address it branches to and whether it is BL (writes x30). ok is
// false for any other instruction, including conditional and register
// branches.
func ARM64BranchTarget(pc uint64, insn uint32) (target uint64, link bool, ok bool) {
	switch insn & arm64OpMask {
	case arm64OpB, arm64OpBL:
	default:
		return 0, false, false
	}
	d := int64(int32(insn<<6)>>6) * 4 // sign-extend imm26, in bytes
	return pc + uint64(d), insn&arm64OpMask == arm64OpBL, true
}

// ARM64Bytes returns insns as they lie in memory: each word little-endian,
// which is the only instruction byte order arm64 has.
func ARM64Bytes(insns ...uint32) []byte {
	b := make([]byte, 0, 4*len(insns))
	for _, w := range insns {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}
