package arm64

import (
	"encoding/binary"
	"fmt"

	"ftpatch/isa/move"
	"ftpatch/nops"

	"golang.org/x/arch/arm64/arm64asm"
)

// A prologue site on arm64 moves one instruction: the first of the
// function, or the one after its `bti c`/`bti jc`, which stays where
// indirect calls land. That word becomes `b tramp`; the trampoline is
//
//	tramp+0:  nop; nop           the site (TrampolineSite bytes), enabled as
//	                             `mov x9, x30; bl caller` like a
//	                             -fpatchable-function-entry=2 site
//	tramp+8:  the moved word     rewritten for tramp+8 (one to three words)
//	          b resume           unless the moved word never falls through
//
// A moved `paciasp`/`pacibsp` is copied: the site then runs before it, so
// that tracers see the return address unsigned, as at a patchable entry
// under -mbranch-protection=pac-ret.

// TrampolineSite is the length of the site at a trampoline's start: two
// NOP slots.
const TrampolineSite = 8

// TrampolineMax bounds a trampoline's length: the site, a literal load
// from an address not aligned to its size (adrp; add; ldr), the jump
// back.
const TrampolineMax = TrampolineSite + 4*4

// The hints a prologue site knows by name (HINT #imm, bits 11:5).
const (
	PACIASP uint32 = 0xd503233f // paciasp: sign x30 with key A and sp
	PACIBSP uint32 = 0xd503237f // pacibsp: sign x30 with key B and sp
)

// hintNames names the hints arm64asm prints as `hint #n`, for Insn.Text.
var hintNames = map[uint32]string{
	NOP: "nop", BTIC: "bti c", BTIJC: "bti jc", 0xd503241f: "bti", 0xd503249f: "bti j",
	PACIASP: "paciasp", PACIBSP: "pacibsp", 0xd50323bf: "autiasp", 0xd50323ff: "autibsp",
	0xd503231f: "paciaz", 0xd503235f: "pacibz", 0xd50320ff: "xpaclri",
}

// Text returns w's disassembly in GNU syntax (objdump's), naming the
// pointer-authentication and BTI hints and the classes of Unknown; ""
// if it does not decode.
func Text(w uint32) string {
	if s, ok := hintNames[w]; ok {
		return s
	}
	in, err := DecodeWord(w)
	if err != nil {
		if c := Unknown(w); c != "" {
			return fmt.Sprintf(".inst 0x%08x // %s", w, c)
		}
		return ""
	}
	return arm64asm.GNUSyntax(in)
}

// unknownClasses are encodings arm64asm does not decode that compilers
// and the C library emit, as mask, value and name. None is a branch or
// PC-relative, so a function holding them can be scanned and they can
// be moved as they are.
var unknownClasses = [...]struct {
	mask, val uint32
	name      string
}{
	{0x3f200c00, 0x38200000, "lse atomic"}, // ldadd, ldclr, ldeor, ldset, ld[su]max/min, swp, ldapr (Armv8.1, 8.3)
	{0x3fa07c00, 0x08a07c00, "lse cas"},    // cas, casa, casl, casal (b, h, w, x)
	{0xbfa07c00, 0x08207c00, "lse casp"},   // casp and its orderings
	{0xff200000, 0xd9200000, "mte"},        // ldg, stg, stzg, st2g, stz2g, ldgm, stgm (Armv8.5 memory tagging)
	{0xffe0f800, 0x9ac01000, "mte"},        // irg, gmi
	{0xbfc0c000, 0x91800000, "mte"},        // addg, subg
	{0x1e000000, 0x04000000, "sve"},        // the SVE encoding space (op0 = 0010)
	{0xfff80000, 0xd5080000, "sys"},        // sys: dc, ic, at, tlbi by their operation
}

// Unknown names the class of w if it is one of the instructions compilers
// and libraries use that arm64asm does not decode (LSE atomics, MTE tag
// accesses, SVE, cache maintenance); "" otherwise.
func Unknown(w uint32) string {
	for _, c := range unknownClasses {
		if w&c.mask == c.val {
			return c.name
		}
	}
	return ""
}

// A kind sorts a word by what moving it takes.
type kind uint8

const (
	kCopy  kind = iota // not PC-relative: copied
	kAuth              // paciasp, pacibsp: copied, Authorize
	kB                 // b imm26
	kBL                // bl imm26
	kBCond             // b.cond imm19
	kCB                // cbz, cbnz imm19
	kTB                // tbz, tbnz imm14
	kADR               // adr xd, imm21
	kADRP              // adrp xd, imm21 pages
	kLit               // ldr (literal) to a w, x, s, d or q register, ldrsw (literal), prfm (literal)
)

// kindOf sorts w by its encoding (the A64 classes whose operands are
// PC-relative); words outside them are copied.
func kindOf(w uint32) kind {
	switch {
	case w == PACIASP || w == PACIBSP:
		return kAuth
	case w&0xfc000000 == 0x14000000:
		return kB
	case w&0xfc000000 == 0x94000000:
		return kBL
	case w&0xff000010 == 0x54000000:
		return kBCond
	case w&0x7e000000 == 0x34000000:
		return kCB
	case w&0x7e000000 == 0x36000000:
		return kTB
	case w&0x9f000000 == 0x10000000:
		return kADR
	case w&0x9f000000 == 0x90000000:
		return kADRP
	case w&0x3b000000 == 0x18000000:
		return kLit
	}
	return kCopy
}

// how is what package move calls a kind.
func (k kind) how() move.How {
	switch k {
	case kAuth:
		return move.Authorize
	case kB, kBL:
		return move.Branch
	case kBCond, kCB, kTB:
		return move.CondJump
	case kADR, kADRP, kLit:
		return move.PCRel
	}
	return move.Copy
}

// sext sign-extends the low n bits of v.
func sext(v uint32, n uint) int64 { return int64(v<<(32-n)) << 32 >> (64 - n) }

// target returns the address w, at pc, names: a branch's destination,
// adr's address, adrp's page, a literal's address; false for a word
// that names none.
func target(w uint32, pc uint64) (uint64, bool) {
	switch kindOf(w) {
	case kB, kBL:
		return pc + uint64(sext(w, 26)*4), true
	case kBCond, kCB, kLit:
		return pc + uint64(sext(w>>5, 19)*4), true
	case kTB:
		return pc + uint64(sext(w>>5, 14)*4), true
	case kADR:
		return pc + uint64(sext(w>>29&3|w>>3&^3, 21)), true
	case kADRP:
		return pc&^0xfff + uint64(sext(w>>29&3|w>>3&^3, 21)<<12), true
	}
	return 0, false
}

// isDirectBranch reports whether w is a branch to an immediate target:
// b, bl, b.cond, cbz/cbnz, tbz/tbnz.
func isDirectBranch(w uint32) bool {
	switch kindOf(w) {
	case kB, kBL, kBCond, kCB, kTB:
		return true
	}
	return false
}

// PlanPrologue plans a prologue site for the function at addr whose bytes
// are code[:size]: after a `bti c`/`bti jc`, which stays, one word is
// moved (Len 4). It decodes every word of the function, and refuses
// (wrapping package move's reasons) a function shorter than that word
// (ErrTooShort), a moved word it cannot rewrite (ErrUnmovable), a word
// that does not decode (ErrUndecodable: data among the code would hide
// branches), a direct branch to the function's start or to the moved
// word (ErrBranchInto), and a switch's jump table that reaches either or
// that it cannot read (ErrJumpTable; read, if not nil, reads the file's
// memory: without it every jump table is refused).
//
// A function that starts with paciasp (no bti) has it moved: its callers
// then land on the `b` that replaces it, which a page guarded by BTI
// refuses to indirect calls (paciasp is a landing pad, b is not); the
// caller plans such functions only where BTI is not enforced.
func PlanPrologue(code []byte, addr uint64, size int, read func(addr uint64, n int) []byte) (move.Plan, error) {
	if addr%4 != 0 {
		return move.Plan{}, fmt.Errorf("function at %#x: not 4-byte aligned: %w", addr, move.ErrUndecodable)
	}
	if size < 0 || size > len(code) {
		return move.Plan{}, fmt.Errorf("function at %#x: size %d, %d bytes given", addr, size, len(code))
	}
	p := move.Plan{Func: addr, Patch: addr, Len: 4}
	if size >= 4 && IsBTI(Word(code, 0)) {
		p.Patch += 4
	}
	off := p.Patch - addr
	if uint64(size) < off+4 {
		return move.Plan{}, fmt.Errorf("function at %#x: %d bytes: %w", addr, size, move.ErrTooShort)
	}
	w := Word(code, off)
	text := Text(w)
	if text == "" {
		return move.Plan{}, fmt.Errorf("%#x: %08x does not decode: %w", p.Patch, w, move.ErrUnmovable)
	}
	n := size / 4
	words := make([]uint32, n)
	for i := range words {
		words[i] = Word(code, uint64(4*i))
		if _, err := DecodeWord(words[i]); err != nil && Unknown(words[i]) == "" {
			return move.Plan{}, fmt.Errorf("%#x: %08x: %w", addr+uint64(4*i), words[i], move.ErrUndecodable)
		}
	}
	// A direct branch to the function's start or to the moved word: the
	// first would enter the site again (a loop counted as a call), the
	// second would land in the middle of the moved code. A bl to the
	// start is a recursive call, which the site counts as it should.
	for i, v := range words {
		pc := addr + uint64(4*i)
		if !isDirectBranch(v) {
			continue
		}
		if t, _ := target(v, pc); t >= addr && t < p.Resume() && !(kindOf(v) == kBL && t == addr) {
			return move.Plan{}, fmt.Errorf("%s at %#x to %#x: %w", Text(v), pc, t, move.ErrBranchInto)
		}
	}
	// An adr of the moved word after a bti: a label's address taken,
	// for a computed goto (an adr of the function's start is a pointer
	// to it, for calls, which land on the bti).
	for i, v := range words {
		pc := addr + uint64(4*i)
		if t, _ := target(v, pc); kindOf(v) == kADR && t > addr && t < p.Resume() {
			return move.Plan{}, fmt.Errorf("%s at %#x takes %#x: %w", Text(v), pc, t, move.ErrBranchInto)
		}
	}
	if err := checkJumpTables(words, addr, &p, read); err != nil {
		return move.Plan{}, err
	}
	p.Orig = append([]byte(nil), code[off:off+4]...)
	p.Insns = []move.Insn{{Off: 0, Len: 4, How: kindOf(w).how()}}
	return p, nil
}

// PrologueJump returns the word written at p.Patch: `b t`. A trampoline
// beyond ±128 MiB is a *nops.RangeError.
func PrologueJump(p *move.Plan, t uint64) ([]byte, error) {
	if p.Len != 4 {
		return nil, fmt.Errorf("plan at %#x: %d bytes moved, want 4", p.Patch, p.Len)
	}
	b, err := B(p.Patch, t)
	if err != nil {
		return nil, err
	}
	return Bytes(b), nil
}

// Trampoline returns the trampoline of p at address t: two NOPs (the
// site), the moved word rewritten for t+TrampolineSite, and `b resume`
// where the moved word may fall through. Every PC-relative operand is
// made again relative to the trampoline (never an absolute literal: a
// PIE's or a shared object's trampoline moves with its code); an operand
// out of reach from t (±128 MiB for branches, ±4 GiB for adrp) is a
// *nops.RangeError.
func Trampoline(p *move.Plan, t uint64) ([]byte, error) {
	if p.Len != 4 || len(p.Orig) != 4 {
		return nil, fmt.Errorf("plan at %#x: %d bytes moved, want 4", p.Patch, p.Len)
	}
	if t%4 != 0 {
		return nil, fmt.Errorf("trampoline at %#x: %w", t, nops.ErrAlign)
	}
	pc := t + TrampolineSite
	moved, goesOn, err := relocate(Word(p.Orig, 0), p.Patch, pc)
	if err != nil {
		return nil, fmt.Errorf("plan at %#x, trampoline at %#x: %w", p.Patch, t, err)
	}
	words := append([]uint32{NOP, NOP}, moved...)
	if goesOn {
		back, err := B(t+uint64(4*len(words)), p.Resume())
		if err != nil {
			return nil, fmt.Errorf("plan at %#x, trampoline at %#x: %w", p.Patch, t, err)
		}
		words = append(words, back)
	}
	return Bytes(words...), nil
}

// relocate returns the words that do at pc what w does at from, and
// whether they may fall through (to the jump back to from+4).
func relocate(w uint32, from, pc uint64) (out []uint32, goesOn bool, err error) {
	dest, _ := target(w, from)
	switch kindOf(w) {
	case kB:
		b, err := B(pc, dest)
		return []uint32{b}, false, err
	case kBL:
		// The call returns where the original would: to from+4, in
		// the function, whose unwind table (FDE) covers it, so
		// backtraces and C++ exceptions see the caller they expect.
		out, err := setX(30, pc, from+4)
		if err != nil {
			return nil, false, err
		}
		b, err := B(pc+uint64(4*len(out)), dest)
		return append(out, b), false, err
	case kBCond:
		if w&0xe == 0xe { // b.al, b.nv: always taken
			b, err := B(pc, dest)
			return []uint32{b}, false, err
		}
		// b.!cond .+8; b dest (the inverted condition skips to the
		// jump back).
		b, err := B(pc+4, dest)
		return []uint32{w&^(0x7ffff<<5) ^ 1 | 2<<5, b}, true, err
	case kCB:
		b, err := B(pc+4, dest) // cbnz/cbz .+8; b dest
		return []uint32{w&^(0x7ffff<<5) ^ 1<<24 | 2<<5, b}, true, err
	case kTB:
		b, err := B(pc+4, dest) // tbnz/tbz .+8; b dest
		return []uint32{w&^(0x3fff<<5) ^ 1<<24 | 2<<5, b}, true, err
	case kADR:
		rd := w & 31
		if rd == 31 { // adr xzr: writes nothing
			return []uint32{NOP}, true, nil
		}
		out, err := adrp(pc, rd, dest)
		return append(out, addImm(rd, rd, dest&0xfff)), true, err
	case kADRP:
		rd := w & 31
		if rd == 31 {
			return []uint32{NOP}, true, nil
		}
		out, err := adrp(pc, rd, dest)
		return out, true, err
	case kLit:
		return literal(w, dest, pc)
	}
	return []uint32{w}, true, nil
}

// literals are the loads from a literal (opc:V, bits 31:30 and 26) and
// what loads the same register from [xt, #imm12 * size].
var literals = [8]struct {
	size uint64 // bytes loaded
	ldr  uint32 // the unsigned-offset form, Rt, Rn and imm12 zero; 0: none
	fp   bool   // into an FP/SIMD register
}{
	0: {4, 0xb9400000, false}, // ldr wt, [xn, #imm]
	2: {8, 0xf9400000, false}, // ldr xt, [xn, #imm]
	4: {4, 0xb9800000, false}, // ldrsw xt, [xn, #imm]
	6: {0, 0, false},          // prfm: dropped
	1: {4, 0xbd400000, true},  // ldr st, [xn, #imm]
	3: {8, 0xfd400000, true},  // ldr dt, [xn, #imm]
	5: {16, 0x3dc00000, true}, // ldr qt, [xn, #imm]
	7: {0, 0xffffffff, false}, // unallocated
}

// literal rewrites the literal load w (of the word at addr) for pc:
// `adrp xt, addr; ldr rt, [xt, #:lo12:addr]`, with an `add xt, xt,
// #:lo12:addr` and no offset when the address is not a multiple of the
// size the offset is scaled by. xt is the destination itself for a
// general register, x16 (IP0, which veneers may clobber between a call
// and the function: dead at the function's first word) for an FP/SIMD
// register or xzr. A prefetch is dropped: a NOP.
func literal(w uint32, addr, pc uint64) ([]uint32, bool, error) {
	l := literals[w>>30&3<<1|w>>26&1]
	switch l.ldr {
	case 0:
		return []uint32{NOP}, true, nil
	case 0xffffffff:
		return nil, false, fmt.Errorf("%08x: unallocated literal load: %w", w, move.ErrUnmovable)
	}
	rt := w & 31
	xt := rt
	if l.fp || rt == 31 {
		xt = 16
	}
	out, err := adrp(pc, xt, addr)
	if lo := addr & 0xfff; lo%l.size == 0 {
		out = append(out, l.ldr|uint32(lo/l.size)<<10|xt<<5|rt)
	} else {
		out = append(out, addImm(xt, xt, lo), l.ldr|xt<<5|rt)
	}
	return out, true, err
}

// adrpMax is adrp's reach: a signed 21-bit count of 4 KiB pages.
const adrpMax = 1 << 32

// adrp returns `adrp xd, page` at pc for the page of addr; a page beyond
// ±4 GiB is a *nops.RangeError.
func adrp(pc uint64, rd uint32, addr uint64) ([]uint32, error) {
	d := int64(addr&^0xfff - pc&^0xfff)
	if d < -adrpMax || d >= adrpMax {
		return nil, &nops.RangeError{From: pc, To: addr, Max: adrpMax}
	}
	pages := uint32(d>>12) & (1<<21 - 1)
	return []uint32{0x90000000 | pages&3<<29 | pages>>2<<5 | rd}, nil
}

// addImm returns `add xd, xn, #imm` (imm < 4096).
func addImm(rd, rn uint32, imm uint64) uint32 {
	return 0x91000000 | uint32(imm&0xfff)<<10 | rn<<5 | rd
}

// setX returns what sets xd to v at pc: `adr` within ±1 MiB, else `adrp;
// add` (position-independent either way); beyond ±4 GiB, a
// *nops.RangeError.
func setX(rd uint32, pc, v uint64) ([]uint32, error) {
	if d := int64(v - pc); d >= -1<<20 && d < 1<<20 {
		u := uint32(d) & (1<<21 - 1)
		return []uint32{0x10000000 | u&3<<29 | u>>2<<5 | rd}, nil
	}
	out, err := adrp(pc, rd, v)
	if err != nil {
		return nil, err
	}
	return append(out, addImm(rd, rd, v&0xfff)), nil
}

// The words a jump table's dispatch is made of (gcc's and clang's):
//
//	adrp xT, table; add xT, xT, :lo12:table
//	ldrb/ldrh/ldr/ldrsw wE, [xT, wI, uxtw #s]  (or [xT, xI, lsl #s])
//	adr xB, base                               (or base = table)
//	add xD, xB, wE, sxtb/sxth/sxtw #2          (or xE, lsl #n)
//	br xD
//
// and, before them, `cmp wI, #last` with a b.hi past the table.
const (
	brMask, brWord     = 0xfffffc1f, 0xd61f0000 // br xn
	addExtMask, addExt = 0xffe00000, 0x8b200000 // add xd, xn, wm/xm, extend #amount
	addShMask, addSh   = 0xffe00000, 0x8b000000 // add xd, xn, xm, lsl #amount
	ldrRegMask, ldrReg = 0x3f200c00, 0x38200800 // ldr* (register offset), any size
	cmpImmMask, cmpImm = 0x7f80001f, 0x7100001f // cmp wn/xn, #imm (subs zr)
	movRegMask, movReg = 0x7fe0ffe0, 0x2a0003e0 // mov wd/xd, wm/xm (orr rd, zr, rm)
	addImmMask         = 0xff800000             // add xd, xn, #imm (64-bit)
	callMask, callWord = 0xfefff000, 0xd63f0000 // blr, blraa(z), blrab(z)
)

// defWindow bounds the backward search for a register's definition, and
// cmpWindow the one for the bounds check of a table's index.
const defWindow, cmpWindow = 32, 64

// checkJumpTables finds each `br` fed by a jump table and refuses the
// function (ErrJumpTable) if a table entry leads to the function's start
// or the moved word, or if the table cannot be found and read. A `br`
// not fed by an `add` of two registers is a tail call through a pointer,
// which leaves the function.
func checkJumpTables(words []uint32, addr uint64, p *move.Plan, read func(uint64, int) []byte) error {
	for i, w := range words {
		if w&brMask != brWord {
			continue
		}
		pc := addr + uint64(4*i)
		j := def(words, i, w>>5&31)
		if j < 0 || (words[j]&addExtMask != addExt && (words[j]&addShMask != addSh || words[j]>>22&3 != 0)) {
			continue
		}
		targets, err := tableTargets(words, addr, j, read)
		if err != nil {
			return fmt.Errorf("br at %#x: %v: %w", pc, err, move.ErrJumpTable)
		}
		for _, t := range targets {
			if t >= addr && t < p.Resume() {
				return fmt.Errorf("br at %#x: a table entry leads to %#x: %w", pc, t, move.ErrJumpTable)
			}
		}
	}
	return nil
}

// tableTargets returns every address the dispatch whose final add is
// words[j] may branch to.
func tableTargets(words []uint32, addr uint64, j int, read func(uint64, int) []byte) ([]uint64, error) {
	add := words[j]
	base, ok := constAt(words, addr, j, add>>5&31, 4)
	if !ok {
		return nil, fmt.Errorf("no base address")
	}
	// The add's extend of its entry register (option, bits 15:13, and
	// amount, 12:10) or, shifted, lsl #imm6 of the whole x register.
	ext, amount := uint32(3), add>>10&63 // uxtx: the whole register
	if add&addExtMask == addExt {
		ext, amount = add>>13&7, add>>10&7
	}
	k := def(words, j, add>>16&31)
	if k < 0 || words[k]&ldrRegMask != ldrReg {
		return nil, fmt.Errorf("no table load")
	}
	ld := words[k]
	size, opc := uint64(1)<<(ld>>30), ld>>22&3 // opc: 1 ldr, 2 ldrs to x, 3 ldrs to w
	if opc == 0 || (opc >= 2 && size > 4) || (opc == 3 && size == 4) {
		return nil, fmt.Errorf("table read by %08x, not a load", ld)
	}
	table, ok := constAt(words, addr, k, ld>>5&31, 4)
	if !ok {
		return nil, fmt.Errorf("no table address")
	}
	last, ok := bound(words, k, ld>>16&31)
	if !ok {
		return nil, fmt.Errorf("no bound on the table's index")
	}
	if read == nil {
		return nil, fmt.Errorf("table at %#x not readable", table)
	}
	b := read(table, int((last+1)*size))
	if uint64(len(b)) < (last+1)*size {
		return nil, fmt.Errorf("table at %#x: %d entries not readable", table, last+1)
	}
	out := make([]uint64, 0, last+1)
	for e := uint64(0); e <= last; e++ {
		var v uint64
		switch size {
		case 1:
			v = uint64(b[e])
		case 2:
			v = uint64(binary.LittleEndian.Uint16(b[2*e:]))
		case 4:
			v = uint64(binary.LittleEndian.Uint32(b[4*e:]))
		case 8:
			v = binary.LittleEndian.Uint64(b[8*e:])
		}
		switch opc {
		case 2:
			v = uint64(sext(uint32(v), uint(8*size)))
		case 3:
			v = uint64(uint32(sext(uint32(v), uint(8*size))))
		}
		out = append(out, base+extend(v, ext)<<amount)
	}
	return out, nil
}

// extend applies an add's extend option (uxtb..uxtx, sxtb..sxtx) to v.
func extend(v uint64, option uint32) uint64 {
	bits := uint(8) << (option & 3)
	if bits == 64 {
		return v
	}
	v &= 1<<bits - 1
	if option&4 != 0 {
		return uint64(int64(v<<(64-bits)) >> (64 - bits))
	}
	return v
}

// def returns the index of the last word before words[i] that may write
// register r, within defWindow; -1 if none, or if a call comes first that
// may change it.
func def(words []uint32, i int, r uint32) int {
	for j := i - 1; j >= 0 && j >= i-defWindow; j-- {
		w := words[j]
		if (IsBLWord(w) || w&callMask == callWord) && (r <= 18 || r == 30) {
			return -1
		}
		if mayWrite(w, r) {
			return j
		}
	}
	return -1
}

// mayWrite reports whether w may write general register r (0-30), erring
// towards yes: every instruction naming r in bits 4:0 except a store,
// the second register of a load pair, the base of a load or store with
// writeback, the status register of a store-exclusive and cas.
func mayWrite(w uint32, r uint32) bool {
	switch {
	case w&0x3a000000 == 0x28000000 && w>>23&1 == 1 && w>>5&31 == r: // pair, pre/post-index
		return true
	case w&0x3b200400 == 0x38000400 && w>>5&31 == r: // single, pre/post-index
		return true
	case w&0x3f000000 == 0x08000000 && w>>16&31 == r: // exclusive, cas: Rs
		return true
	case IsStore(w):
		return false
	case w&0x3a400000 == 0x28400000: // load pair: Rt and Rt2
		return w&31 == r || w>>10&31 == r
	}
	return w&31 == r
}

// constAt evaluates register r just before words[i] when it is a
// constant the code makes position-independently (adr, adrp, add #imm,
// mov): false otherwise.
func constAt(words []uint32, addr uint64, i int, r uint32, depth int) (uint64, bool) {
	j := def(words, i, r)
	if j < 0 || depth == 0 {
		return 0, false
	}
	w, pc := words[j], addr+uint64(4*j)
	switch {
	case kindOf(w) == kADR || kindOf(w) == kADRP:
		return target(w, pc)
	case w&addImmMask == 0x91000000 && w&31 == r:
		v, ok := constAt(words, addr, j, w>>5&31, depth-1)
		return v + uint64(w>>10&0xfff)<<(12*(w>>22&1)), ok
	case w&movRegMask == movReg && w>>31 == 1 && w&31 == r: // mov x
		return constAt(words, addr, j, w>>16&31, depth-1)
	}
	return 0, false
}

// bound finds the bounds check of a table's index register r, used by
// the load words[k]: `cmp wr, #last` and the conditional branch past
// the table, and returns last. It looks back from the load, then from
// every branch to the straight run of code the load ends (compilers put
// the dispatch out of line, after the check's b.ls).
func bound(words []uint32, k int, r uint32) (uint64, bool) {
	if last, ok := boundFrom(words, k, r); ok {
		return last, true
	}
	start := k
	for start > 0 && !noFallThrough(words[start-1]) {
		start--
	}
	for j, w := range words {
		if !isDirectBranch(w) || kindOf(w) == kBL {
			continue
		}
		t, _ := target(w, uint64(4*j)) // relative to the function
		if t >= uint64(4*start) && t <= uint64(4*k) {
			if last, ok := boundFrom(words, j, r); ok {
				return last, true
			}
		}
	}
	return 0, false
}

// noFallThrough reports whether w never goes on to the next word: b,
// br, ret (and their pointer-authenticating forms).
func noFallThrough(w uint32) bool {
	return kindOf(w) == kB || w&0xfe1f0000 == 0xd61f0000 && w>>21&3 != 1 // br, ret (not blr)
}

// boundFrom looks back from words[k] for `cmp wr, #last` (or of a
// register r was copied from, or copied to it after the compare).
func boundFrom(words []uint32, k int, r uint32) (uint64, bool) {
	var seen [32]int64 // cmp #imm + 1 of each register, after the current word
	for j := k - 1; j >= 0 && j >= k-cmpWindow; j-- {
		w := words[j]
		switch {
		case w&cmpImmMask == cmpImm:
			imm := int64(w>>10&0xfff) << (12 * (w >> 22 & 1))
			if w>>5&31 == r {
				return uint64(imm), true
			}
			seen[w>>5&31] = imm + 1
		case w&movRegMask == movReg && w&31 == r:
			r = w >> 16 & 31 // mov wr, ws: ws before it, or its compare after it
			if seen[r] != 0 {
				return uint64(seen[r] - 1), true
			}
		}
	}
	return 0, false
}
