package arm64

import (
	"debug/elf"
	"encoding/binary"

	"fmt"
	"golang.org/x/arch/arm64/arm64asm"
)

// What a patch site holds and what surrounds it, read back: bti, NOP
// and BL words, the PLT stubs a call goes through, and the instructions
// of a -pg prologue. sites, record and patch ask these functions; none
// of them matches arm64 words itself.

// BTIJC is the landing pad for both calls and jumps; a function may
// start with it as with BTIC.
const BTIJC uint32 = 0xd50324df // bti jc

// Word returns the instruction word at b[off:], little-endian.
func Word(b []byte, off uint64) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// DecodeWord decodes one instruction word.
func DecodeWord(w uint32) (arm64asm.Inst, error) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], w)
	return Decode(b[:])
}

// IsNop reports whether w decodes as a NOP.
func IsNop(w uint32) bool {
	in, err := DecodeWord(w)
	return err == nil && in.Op == arm64asm.NOP
}

// IsBTI reports whether w is a function's landing pad, `bti c` or `bti
// jc`.
func IsBTI(w uint32) bool { return w == BTIC || w == BTIJC }

// IsBL reports whether w decodes as `bl`.
func IsBL(w uint32) bool {
	in, err := DecodeWord(w)
	return err == nil && in.Op == arm64asm.BL
}

// IsBLWord reports by its opcode bits alone whether w is `bl`: the quick
// test of a scan, which IsBL confirms.
func IsBLWord(w uint32) bool { return w&arm64OpMask == arm64OpBL }

// Entry is where an entry site starts in text: the function start, or
// just after its bti (-mbranch-protection).
func Entry(text []byte, start uint64) uint64 {
	if start+4 <= uint64(len(text)) && IsBTI(Word(text, start)) {
		return start + 4
	}
	return start
}

// PLTSlot decodes the PLT stub at b (address pc) and returns the pointer
// slot it loads its target from: `[bti c] adrp x16, page; ldr x17, [x16,
// #off]` (then `add`, `br x17`).
func PLTSlot(b []byte, pc uint64) (uint64, bool) {
	if len(b) >= 4 && IsBTI(Word(b, 0)) {
		b, pc = b[4:], pc+4
	}
	if len(b) < 8 {
		return 0, false
	}
	adrp, ldr := Word(b, 0), Word(b, 4)
	// ldr x17, [x16, #imm12*8]: 1111100101 imm12 Rn=16 Rt=17.
	if !isAdrpX16(adrp) || ldr&0xffc003ff != 0xf9400211 {
		return 0, false
	}
	return adrpPage(adrp, pc) + uint64(ldr>>10&0xfff)*8, true
}

// isAdrpX16 reports whether w is `adrp x16, ...`: 1 immlo:2 10000
// immhi:19 Rd=16.
func isAdrpX16(w uint32) bool { return w&0x9f00001f == 0x90000010 }

// adrpPage is the page the adrp w at pc names: pc's page plus its
// immhi:immlo, sign-extended, in 4 KiB pages.
func adrpPage(w uint32, pc uint64) uint64 {
	pages := int64(w>>29&3|(w>>5&0x7ffff)<<2) << 43 >> 31
	return pc&^0xfff + uint64(pages)
}

// Veneer decodes a veneer at b (address pc), a stub that takes a branch
// beyond bl's reach the rest of the way through x16, and returns where
// it leads: the linkers' (ld, lld) `adrp x16, T; add x16, x16,
// #:lo12:T; br x16`, or the runtime's `ldr x16, .+8; br x16; .quad T`
// (runtime/src/arch/arm64/insn.h reads the same two).
func Veneer(b []byte, pc uint64) (uint64, bool) {
	if len(b) < 12 {
		return 0, false
	}
	w0, w1, w2 := Word(b, 0), Word(b, 4), Word(b, 8)
	if w0 == LdrX16Lit8 && w1 == BrX16 && len(b) >= 16 {
		return binary.LittleEndian.Uint64(b[8:]), true
	}
	// add x16, x16, #imm12 (lsl 0 or 12): 1001000100 sh imm12 Rn=16 Rd=16.
	if !isAdrpX16(w0) || w1&0xff8003ff != 0x91000210 || w2 != BrX16 {
		return 0, false
	}
	lo := uint64(w1 >> 10 & 0xfff)
	if w1>>22&1 != 0 {
		lo <<= 12
	}
	return adrpPage(w0, pc) + lo, true
}

// A CallRelocKind says what an object's relocation against a hook
// makes of the branch it fills.
type CallRelocKind uint8

// The kinds of CallReloc.
const (
	NotCall  CallRelocKind = iota // no branch: no site
	BLCall                        // R_AARCH64_CALL26: `bl`, a site
	TailCall                      // R_AARCH64_JUMP26: `b`, a tail call, which traces nothing of its own
)

// CallReloc says what an object's relocation of type t against a hook
// fills.
func CallReloc(t uint32) CallRelocKind {
	switch elf.R_AARCH64(t) {
	case elf.R_AARCH64_CALL26:
		return BLCall
	case elf.R_AARCH64_JUMP26:
		return TailCall
	}
	return NotCall
}

// RelocName names relocation type t, for messages.
func RelocName(t uint32) string { return elf.R_AARCH64(t).String() }

// LiteralSize is the size of the pre-function literal: the two NOP
// slots -fpatchable-function-entry=4,2 leaves just before a function,
// which the runtime fills with a per-function ops pointer (the kernel's
// CALL_OPS), so that the site's `bl` can reach a common trampoline that
// loads the function's tracer from it.
const LiteralSize = 8

// LiteralAt reports whether the pre-function area at address (or
// section offset) at, in a section aligned to align, can hold the
// literal: 8 bytes, 8-byte aligned wherever the section is loaded, so
// that one store replaces the pointer.
func LiteralAt(at uint64, size int, align uint64) bool {
	return size == LiteralSize && at%LiteralSize == 0 && align >= LiteralSize
}

// SiteCall returns what an enabled site of n bytes at site holds, to
// call target: a -pg site (4 bytes) `bl target`; a patchable entry (8
// bytes, two NOPs disabled) `mov x9, x30; bl target`, x9 keeping the
// caller's return address that the bl overwrites in x30. BL says what it
// refuses.
func SiteCall(site, target uint64, n int) ([]byte, error) {
	switch n {
	case 4:
		w, err := BL(site, target)
		if err != nil {
			return nil, err
		}
		return Bytes(w), nil
	case 8:
		w, err := BL(site+4, target)
		if err != nil {
			return nil, err
		}
		return Bytes(MovX9X30, w), nil
	}
	return nil, fmt.Errorf("site 0x%x: %d bytes, want 4 or 8", site, n)
}

// PrologueSiteCall returns the 8 bytes that enable a site made from a
// function's prologue (at a trampoline's start, site): `mov x17, x30;
// bl target`, x17 keeping the caller's return address, so that x9, which
// callers of a function built without tracing flags may keep a value in
// across the call, is left alone (x17, IP1, is any call's to clobber).
func PrologueSiteCall(site, target uint64) ([]byte, error) {
	w, err := BL(site+4, target)
	if err != nil {
		return nil, err
	}
	return Bytes(MovX17X30, w), nil
}

// SiteNop returns what disables an n-byte site: one NOP word for a -pg
// site (4 bytes), two for a patchable entry (8), one per instruction.
func SiteNop(n int) ([]byte, error) {
	switch n {
	case 4:
		return Bytes(NOP), nil
	case 8:
		return Bytes(NOP, NOP), nil
	}
	return nil, fmt.Errorf("no NOP for a %d-byte site", n)
}

// arm64 instructions the scan of a -pg prologue knows, as mask and value.
const (
	stpFPLR    = 0xa9007bfd // stp x29, x30, [sp, #imm] (signed offset)
	stpFPLRPre = 0xa9807bfd // stp x29, x30, [sp, #imm]! (pre-index)
	stpMask    = 0xffc07fff // all but imm7
	addFPSP    = 0x910003fd // add x29, sp, #imm (mov x29, sp)
	addMask    = 0xff8003ff // all but sh and imm12
)

// prologueEnds are the encodings that end the scan of a prologue: every
// branch, return and trap (mask, value).
var prologueEnds = [...][2]uint32{
	{0xfc000000, 0x14000000}, // b
	{0xff000010, 0x54000000}, // b.cond
	{0x7e000000, 0x34000000}, // cbz, cbnz
	{0x7e000000, 0x36000000}, // tbz, tbnz
	{0xfe000000, 0xd6000000}, // br, blr, ret, eret (unconditional branch, register)
	{0xff000000, 0xd4000000}, // svc, hvc, brk, hlt (exception generation)
	{0xffff0000, 0x00000000}, // udf
}

// EndsPrologue reports whether w is a branch, return or trap, which
// ends the scan of a -pg prologue: no mcount call comes after it.
func EndsPrologue(w uint32) bool {
	for _, b := range prologueEnds {
		if w&b[0] == b[1] {
			return true
		}
	}
	return false
}

// MayWriteX0 reports whether w may write x0. Data processing
// instructions and loads name their destination in bits 4:0 (a load pair
// its second in bits 14:10), stores their source there; so an instruction
// may write x0 unless it is a store or names another register there. It
// errs towards yes (a write to v0 or a compare with x0's field), which
// only costs a NOP its proof.
func MayWriteX0(w uint32) bool {
	switch {
	case IsStore(w):
		return false
	case w&0x3a400000 == 0x28400000: // load pair: Rt and Rt2
		return w&31 == 0 || w>>10&31 == 0
	}
	return w&31 == 0
}

// IsStore reports whether w stores registers to memory with an
// immediate offset: stp (any register class and addressing), str with an
// unsigned offset, stur and str pre- or post-indexed.
func IsStore(w uint32) bool {
	return w&0x3a400000 == 0x28000000 || // load/store pair, L=0
		w&0x3b400000 == 0x39000000 || // str (unsigned offset), opc<0>=0
		w&0x3b600000 == 0x38000000 // stur, str pre/post-index, opc<0>=0
}

// McountNopFound reports whether the -pg site at offset off of code,
// once a NOP, is still told from code by what comes before it, as
// decoding a file without a site table tells it (sites' arm64Func):
// gcc's `mov x0, x30` before it, with nothing between that may write
// x0. clang puts none there.
func McountNopFound(code []byte, off uint64) bool {
	for i := 1; i <= 32 && off >= uint64(4*i); i++ {
		w := Word(code, off-uint64(4*i))
		switch {
		case w == MovX0X30:
			return true
		case MayWriteX0(w), EndsPrologue(w), StoresFrameRecord(w):
			return false
		}
	}
	return false
}

// StoresFrameRecord reports whether w is `stp x29, x30, [sp, #imm]` with
// a signed offset or pre-indexed: a prologue storing the frame record.
func StoresFrameRecord(w uint32) bool {
	return w&stpMask == stpFPLR || w&stpMask == stpFPLRPre
}

// SetsFramePointer reports whether w is `add x29, sp, #imm` (`mov x29,
// sp` for imm 0): a prologue setting the frame pointer.
func SetsFramePointer(w uint32) bool { return w&addMask == addFPSP }
