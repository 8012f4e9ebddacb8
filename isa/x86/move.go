package x86

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"ftpatch/isa/move"
	"ftpatch/nops"

	"golang.org/x/arch/x86/x86asm"
)

// Prologue sites on x86-64: the relocation of a function's first
// instructions into a trampoline (package move says what a plan is).
//
// The jump written at the function is `e9 rel32`, 5 bytes, so the
// whole instructions covering at least 5 bytes after any endbr64 move.
// A function shorter than that may borrow the padding after it (NOPs or
// int3 up to the next function) when its last instruction is an
// unconditional transfer: nothing runs into the padding, so the jump may
// overwrite it.
//
// Before a plan is made the whole function is decoded, so that no
// branch of its own lands in the bytes the jump replaces (or at its
// start: a loop back there would enter the site again) and no jump
// table may do so.

// JumpLen is the length of the jump a prologue site writes: `e9 rel32`.
const JumpLen = 5

// TrampolineSite is the length of the disabled site a trampoline starts
// with: NOP5, enabled as a call like a -fpatchable-function-entry=5 site.
const TrampolineSite = 5

// TrampolineMax bounds a trampoline's length: the site, the moved
// instructions as rewritten, the jump back. The instructions before the
// last cover at most 4 bytes, which grow most as two `jcc rel8` (2 bytes
// each) made `jcc rel32` (6 each): 12; the last is at most 15 bytes,
// which grows most as a call emulated (15 bytes before the call's own
// jump form, callEmuLen): 30; with the site and the jump back, 52.
const TrampolineMax = 64

// PlanPrologue plans a prologue site for the function at addr whose
// bytes are code[:size]; code may go on with the bytes up to the next
// function (its padding). read, if not nil, reads n bytes of the file's
// memory at an address (for jump tables; it may return fewer). A
// refusal wraps one of package move's reasons.
func PlanPrologue(code []byte, addr uint64, size int, read func(addr uint64, n int) []byte) (move.Plan, error) {
	if size < 0 || size > len(code) {
		return move.Plan{}, fmt.Errorf("function 0x%x: size %d beyond its %d bytes", addr, size, len(code))
	}
	fn := code[:size]
	start := 0
	if IsEndbr64(fn) {
		start = len(Endbr64)
	}
	p := move.Plan{Func: addr, Patch: addr + uint64(start)}
	var insns [JumpLen]move.Insn // at most one instruction a byte
	n := 0
	pos := start
	for pos-start < JumpLen && pos < size {
		pc := addr + uint64(pos)
		if l := vexLen(fn[pos:]); l != 0 {
			return move.Plan{}, fmt.Errorf("%w: a VEX or EVEX instruction (% x) at 0x%x", move.ErrUnmovable, fn[pos:min(pos+max(l, 1), size)], pc)
		}
		in, err := Decode(fn[pos:])
		if err != nil {
			return move.Plan{}, fmt.Errorf("%w: at 0x%x: %w", move.ErrUnmovable, pc, err)
		}
		how, err := moveHow(in, fn[pos:pos+in.Len], pc, pos+in.Len-start >= JumpLen)
		if err != nil {
			return move.Plan{}, err
		}
		insns[n] = move.Insn{Off: pos - start, Len: in.Len, How: how}
		n++
		pos += in.Len
	}
	p.Len = pos - start
	if p.Len < JumpLen {
		// The function ends before the jump's bytes: its padding may
		// take the rest, when nothing runs into it.
		if n == 0 || !unconditional(fn[start+insns[n-1].Off:]) {
			return move.Plan{}, fmt.Errorf("%w: %d bytes after the entry, and no return or jump ending them", move.ErrTooShort, p.Len)
		}
		if padding(code[size:]) < JumpLen-p.Len {
			return move.Plan{}, fmt.Errorf("%w: %d bytes after the entry, and %d bytes of padding after the function", move.ErrTooShort, p.Len, padding(code[size:]))
		}
		p.Len = JumpLen
	}
	if err := scan(fn, addr, p.Patch, p.Patch+uint64(p.Len), read); err != nil {
		return move.Plan{}, err
	}
	p.Orig = bytes.Clone(code[start : start+p.Len])
	p.Insns = append([]move.Insn(nil), insns[:n]...)
	return p, nil
}

// moveHow says how the decoded instruction in, bytes b at pc, moves;
// last says whether it is the last moved (a call may only be that: its
// return address is the next instruction, which must be the function's
// own, not the trampoline's).
func moveHow(in x86asm.Inst, b []byte, pc uint64, last bool) (move.How, error) {
	if in.Op == 0 { // endbr64 (Decode names no other instruction without an Op)
		return move.Copy, nil
	}
	if isJcc(in.Op) {
		return move.CondJump, nil
	}
	switch in.Op {
	case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ:
		// No rel32 form: retargeting them would take a sequence whose
		// flags and count semantics differ.
		return 0, fmt.Errorf("%w: %s at 0x%x has only a rel8 form", move.ErrUnmovable, insnText(in, b, pc), pc)
	case x86asm.SYSCALL, x86asm.SYSENTER, x86asm.INT, x86asm.INTO, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ,
		x86asm.SYSRET, x86asm.SYSEXIT:
		// The kernel restarts an interrupted system call by going back
		// to the instruction's address, and a handler sees it: the
		// trampoline's, which no unwinder or debugger knows.
		return 0, fmt.Errorf("%w: %s at 0x%x enters the kernel", move.ErrUnmovable, insnText(in, b, pc), pc)
	case x86asm.LCALL, x86asm.LJMP, x86asm.LRET:
		return 0, fmt.Errorf("%w: far transfer %s at 0x%x", move.ErrUnmovable, insnText(in, b, pc), pc)
	case x86asm.JMP:
		if _, ok := in.Args[0].(x86asm.Rel); ok {
			return move.Branch, nil
		}
	case x86asm.CALL:
		if !last {
			return 0, fmt.Errorf("%w: call %s at 0x%x would return into the trampoline", move.ErrUnmovable, insnText(in, b, pc), pc)
		}
		if usesRSP(in.Args[0]) {
			// The emulation moves %rsp before the jump reads its operand.
			return 0, fmt.Errorf("%w: call through the stack pointer %s at 0x%x", move.ErrUnmovable, insnText(in, b, pc), pc)
		}
		return move.Branch, nil
	}
	for _, a := range in.Args {
		switch a := a.(type) {
		case nil:
			return move.Copy, nil
		case x86asm.Rel:
			// xbegin and the like: a relative operand no rewrite here
			// knows.
			return 0, fmt.Errorf("%w: %s at 0x%x has a relative operand", move.ErrUnmovable, insnText(in, b, pc), pc)
		case x86asm.Mem:
			if a.Base == x86asm.RIP {
				if in.PCRel != 4 || in.PCRelOff <= 0 || in.PCRelOff+4 > in.Len {
					return 0, fmt.Errorf("%w: %s at 0x%x: RIP-relative operand not found", move.ErrUnmovable, insnText(in, b, pc), pc)
				}
				return move.PCRel, nil
			}
		}
	}
	return move.Copy, nil
}

// isJcc reports whether op is a conditional jump on the flags (jcc).
func isJcc(op x86asm.Op) bool {
	switch op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE, x86asm.JL,
		x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS:
		return true
	}
	return false
}

// usesRSP reports whether a is %rsp or a memory operand addressed
// through it.
func usesRSP(a x86asm.Arg) bool {
	switch a := a.(type) {
	case x86asm.Reg:
		return a == x86asm.RSP
	case x86asm.Mem:
		return a.Base == x86asm.RSP || a.Index == x86asm.RSP
	}
	return false
}

// unconditional reports whether the instruction b starts with never
// goes on to the next: a return, a jump, ud2.
func unconditional(b []byte) bool {
	in, err := Decode(b)
	if err != nil {
		return false
	}
	switch in.Op {
	case x86asm.RET, x86asm.JMP, x86asm.UD2:
		return true
	}
	return false
}

// padding returns how many bytes b starts with that are a function's
// padding: NOPs of the forms EntryNop knows, and int3.
func padding(b []byte) int {
	n := 0
	for n < len(b) && n < JumpLen {
		if b[n] == 0xcc { // int3
			n++
			continue
		}
		k := EntryNop(b[n:])
		if k == 0 {
			break
		}
		n += k
	}
	return n
}

// Disasm returns the instruction at the start of b, at pc, in GNU
// syntax as objdump prints it; its bytes in hex if it does not decode.
func Disasm(b []byte, pc uint64) string {
	in, err := Decode(b)
	if err != nil {
		return fmt.Sprintf(".byte % x", b)
	}
	return insnText(in, b, pc)
}

// insnText is an instruction's disassembly, in GNU syntax as objdump
// prints it.
func insnText(in x86asm.Inst, b []byte, pc uint64) string {
	if in.Op == 0 && IsEndbr64(b) {
		return "endbr64"
	}
	return x86asm.GNUSyntax(in, pc, nil)
}

// scan decodes the function fn at addr whole and refuses it when one of
// its branches targets [addr, hi) (a call may target the entry, addr or
// patch: a recursive call is a call) or one of its jump tables may.
func scan(fn []byte, addr, patch, hi uint64, read func(uint64, int) []byte) error {
	var t tables
	for pos := 0; pos < len(fn); {
		pc := addr + uint64(pos)
		s, err := scanStep(fn[pos:])
		if err != nil {
			return fmt.Errorf("%w: at 0x%x (+0x%x): %w", move.ErrUndecodable, pc, pos, err)
		}
		end := pc + uint64(s.n)
		switch s.kind {
		case stepRel:
			to := end + uint64(s.rel)
			if to >= addr && to < hi && !(s.call && (to == addr || to == patch)) {
				in, _ := Decode(fn[pos:])
				return fmt.Errorf("%w: %s at 0x%x targets 0x%x", move.ErrBranchInto, insnText(in, fn[pos:], pc), pc, to)
			}
			if s.call {
				t.set &= calleeSaved
			}
		case stepCall:
			t.set &= calleeSaved
		case stepRIPLea:
			t.lea[s.reg] = end + uint64(s.rel)
			t.set |= 1 << s.reg
		case stepIndJmp:
			if err := t.jump(fn, pos, addr, hi, read); err != nil {
				return err
			}
		}
		t.last[t.n%len(t.last)] = int32(pos)
		t.n++
		pos += s.n
	}
	return nil
}

// calleeSaved are the registers a call leaves as they were (SysV
// psABI): %rbx, %rsp, %rbp, %r12 to %r15, by gpr's numbers. A table's
// base loaded into one of them before a loop with calls survives them.
const calleeSaved = 1<<3 | 1<<4 | 1<<5 | 1<<12 | 1<<13 | 1<<14 | 1<<15

// tables follows, through a function's linear decoding, what the jump
// table reads compilers write need: where the last instructions start,
// and the address the latest `lea disp(%rip)` into each register
// loaded (until a call, in a register a call may change).
//
// The forms (gcc and clang, -O0 to -O3):
//
//	PIC (-fPIC, PIE): entries are 32-bit offsets from the table
//	  lea    tbl(%rip),%rX
//	  movslq (%rX,%rI,4),%rY       (gcc -O0: mov (%rX,%rI,1),%eY; cltq; lea tbl(%rip),%rX)
//	  add    %rX,%rY
//	  [notrack] jmp *%rY
//	non-PIC: entries are 64-bit addresses
//	  [notrack] jmp *tbl(,%rI,8)
//	  mov tbl(,%rI,8),%rY; [notrack] jmp *%rY      (-O0)
//	PIC table of addresses (computed goto), relocated at load
//	  lea tbl(%rip),%rX; mov (%rX,%rI,8),%rY; jmp *%rY, or jmp *(%rX,%rI,8)
type tables struct {
	last [4]int32 // the offsets of the last instructions, last[(n-1)%4] the latest
	n    int
	lea  [16]uint64 // the address each register's latest lea loaded, if set
	set  uint16     // registers whose lea value is known
}

// gpr returns the number (0 for rax to 15 for r15) of the general
// register r is part of, or -1.
func gpr(r x86asm.Reg) int {
	switch {
	case r >= x86asm.AL && r <= x86asm.BL:
		return int(r - x86asm.AL)
	case r >= x86asm.AH && r <= x86asm.BH:
		return int(r - x86asm.AH)
	case r >= x86asm.SPB && r <= x86asm.R15B:
		return int(r-x86asm.SPB) + 4
	case r >= x86asm.AX && r <= x86asm.R15W:
		return int(r - x86asm.AX)
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return int(r - x86asm.EAX)
	case r >= x86asm.RAX && r <= x86asm.R15:
		return int(r - x86asm.RAX)
	}
	return -1
}

// A table is a jump table located: entries of size 4 (offsets from
// base) or 8 (addresses) from base on.
type table struct {
	base uint64
	size int
}

// jump looks at the indirect jump at fn[pos:] of the function fn at
// addr: if it reads a jump table, the table's entries are
// read and the function refused if one reaches [addr, hi), or if the
// table cannot be read. Any other indirect jump (a tail call through a
// register or a pointer) is let be.
func (t *tables) jump(fn []byte, pos int, addr, hi uint64, read func(uint64, int) []byte) error {
	pc, size := addr+uint64(pos), uint64(len(fn))
	in, err := Decode(fn[pos:])
	if err != nil {
		return fmt.Errorf("%w: at 0x%x: %w", move.ErrUndecodable, pc, err)
	}
	tab, known, isTable := t.find(fn, in)
	if !isTable {
		return nil
	}
	what := insnText(in, fn[pos:], pc)
	if !known {
		return fmt.Errorf("%w: %s at 0x%x reads a table not located", move.ErrJumpTable, what, pc)
	}
	if read == nil {
		return fmt.Errorf("%w: %s at 0x%x reads the table at 0x%x, which cannot be read", move.ErrJumpTable, what, pc, tab.base)
	}
	const chunk = 64
	for i := 0; i < math.MaxUint16; i += chunk {
		at := tab.base + uint64(i*tab.size)
		buf := read(at, chunk*tab.size)
		if i == 0 && len(buf) < tab.size {
			return fmt.Errorf("%w: %s at 0x%x reads the table at 0x%x, which cannot be read", move.ErrJumpTable, what, pc, tab.base)
		}
		for j := 0; j+tab.size <= len(buf); j += tab.size {
			var to uint64
			if tab.size == 4 {
				to = tab.base + uint64(int64(int32(binary.LittleEndian.Uint32(buf[j:]))))
			} else {
				to = binary.LittleEndian.Uint64(buf[j:])
			}
			if to < addr || to >= addr+size {
				return nil // past the table's end
			}
			if to < hi {
				return fmt.Errorf("%w: %s at 0x%x: entry %d of the table at 0x%x targets 0x%x", move.ErrJumpTable, what, pc, i+j/tab.size, tab.base, to)
			}
		}
		if len(buf) < chunk*tab.size {
			return nil // the memory read ends: so does the table
		}
	}
	return fmt.Errorf("%w: %s at 0x%x: the table at 0x%x has no end", move.ErrJumpTable, what, pc, tab.base)
}

// find says whether the indirect jump in reads a jump table, and where
// the table is when known.
func (t *tables) find(fn []byte, in x86asm.Inst) (tab table, known, isTable bool) {
	switch a := in.Args[0].(type) {
	case x86asm.Mem:
		return t.addrTable(a)
	case x86asm.Reg:
		f := gpr(a)
		if f < 0 {
			return table{}, false, false
		}
		// The latest instruction that wrote the jump's register says.
		for k := 1; k <= len(t.last) && k <= t.n; k++ {
			w, err := Decode(fn[t.last[(t.n-k)%len(t.last)]:])
			if err != nil {
				return table{}, false, true // what wrote the register is unknown
			}
			if w.Op == x86asm.CALL {
				return table{}, false, false
			}
			r, ok := w.Args[0].(x86asm.Reg)
			if !ok || gpr(r) != f {
				continue
			}
			switch w.Op {
			case x86asm.CMP, x86asm.TEST, x86asm.PUSH, x86asm.BT:
				continue
			case x86asm.ADD:
				// Base plus offset: the base is the other operand, loaded
				// by lea. Any other sum is taken for a table not located.
				if r2, ok := w.Args[1].(x86asm.Reg); ok {
					if g := gpr(r2); g >= 0 && t.set&(1<<g) != 0 {
						return table{t.lea[g], 4}, true, true
					}
				}
				return table{}, false, true
			case x86asm.MOV:
				if m, ok := w.Args[1].(x86asm.Mem); ok {
					return t.addrTable(m)
				}
			}
			return table{}, false, false
		}
	}
	return table{}, false, false
}

// addrTable says whether the memory operand m reads an entry of a
// table of addresses: tbl(,%rI,8) (non-PIC), or (%rB,%rI,8) with %rB
// loaded by lea (a PIC table of addresses, as GNU C's computed gotos
// make: `static void *tbl[] = {&&l1, ...}; goto *tbl[i]`).
// Through a base not known, it is taken for an array of function
// pointers (an indirect tail call).
func (t *tables) addrTable(m x86asm.Mem) (table, bool, bool) {
	if nonPIC(m) {
		return table{uint64(disp(m)), 8}, true, true
	}
	if m.Index == 0 || m.Scale != 8 || m.Segment != 0 {
		return table{}, false, false
	}
	if g := gpr(m.Base); g >= 0 && t.set&(1<<g) != 0 {
		return table{t.lea[g] + uint64(disp(m)), 8}, true, true
	}
	return table{}, false, false
}

// nonPIC reports whether m is the operand of a non-PIC table read:
// tbl(,%rI,8), an absolute address plus an index scaled to 8.
func nonPIC(m x86asm.Mem) bool {
	return m.Base == 0 && m.Index != 0 && m.Scale == 8 && m.Segment == 0
}

// vexLen returns the length of the VEX (c4, c5) or EVEX (62) encoded
// instruction b starts with (behind an address-size or segment prefix),
// 0 when b starts with none, -1 when its bytes run out or name no map.
// None of them is a branch. golang.org/x/arch decodes most AVX
// instructions but takes vzeroupper and vzeroall (no ModRM) one byte too
// long, so the function scan measures them all itself; the lengths are
// checked against objdump over glibc's AVX2 and EVEX string functions.
func vexLen(b []byte) int {
	p := 0
	for p < len(b) && p < 4 && isVexPrefix(b[p]) {
		p++
	}
	if p >= len(b) {
		return 0
	}
	var m byte // the opcode map: 1 is 0f, 2 is 0f 38, 3 is 0f 3a
	switch b[p] {
	case 0xc5: // 2-byte VEX: c5 [R vvvv L pp], map 0f
		m, p = 1, p+2
	case 0xc4: // 3-byte VEX: c4 [RXB mmmmm] [W vvvv L pp]
		if p+1 >= len(b) {
			return -1
		}
		m, p = b[p+1]&0x1f, p+3
	case 0x62: // EVEX: 62 [RXBR' 0 mmm] [W vvvv 1 pp] [z L'L b V' aaa]
		if p+1 >= len(b) {
			return -1
		}
		m, p = b[p+1]&0x07, p+4
	default:
		return 0
	}
	if p >= len(b) {
		return -1
	}
	op := b[p]
	p++
	if m == 1 && op == 0x77 { // vzeroupper, vzeroall: no ModRM
		return p
	}
	var imm int
	switch m {
	case 1:
		switch op {
		case 0x70, 0x71, 0x72, 0x73, 0xc2, 0xc4, 0xc5, 0xc6: // pshufd, shifts by imm, cmpps, pinsrw, pextrw, shufps
			imm = 1
		}
	case 2, 5, 6: // 0f 38 and EVEX's FP16 maps: no immediate
	case 3: // 0f 3a: every one has an imm8
		imm = 1
	default:
		return -1
	}
	k := modrmLen(b[p:])
	if k < 0 {
		return -1
	}
	p += k + imm
	if p > len(b) || p > x86MaxInsn {
		return -1
	}
	return p
}

// isVexPrefix reports whether c may stand before a VEX or EVEX prefix:
// address size, or a segment override (others make it undefined).
func isVexPrefix(c byte) bool {
	switch c {
	case 0x67, 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65:
		return true
	}
	return false
}

// modrmLen returns the bytes a ModRM byte at b[0] takes with its SIB
// byte and displacement, -1 when b runs out.
func modrmLen(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	mod, rm := b[0]>>6, b[0]&7
	n := 1
	if mod == 3 {
		return n
	}
	if rm == 4 { // SIB
		if len(b) < 2 {
			return -1
		}
		if mod == 0 && b[1]&7 == 5 { // no base: disp32
			n += 4
		}
		n++
	}
	switch {
	case mod == 0 && rm == 5: // disp32(%rip)
		n += 4
	case mod == 1:
		n++
	case mod == 2:
		n += 4
	}
	return n
}

// Trampoline returns the trampoline of plan p placed at address t: the
// disabled site (NOP5), the moved instructions rewritten for their new
// addresses, `jmp` back to p.Resume(). An operand t puts out of reach
// is a *nops.RangeError.
func Trampoline(p *move.Plan, t uint64) ([]byte, error) {
	out := make([]byte, 0, TrampolineMax)
	out = append(out, NOP5...) // nopl 0x0(%rax,%rax,1): the site
	for _, mi := range p.Insns {
		if mi.Off < 0 || mi.Len <= 0 || mi.Off+mi.Len > len(p.Orig) {
			return nil, fmt.Errorf("moved instruction at +%d (%d bytes) outside the plan's %d bytes", mi.Off, mi.Len, len(p.Orig))
		}
		b := p.Orig[mi.Off : mi.Off+mi.Len]
		pc := p.Patch + uint64(mi.Off)
		var err error
		out, err = relocate(out, b, pc, t, mi, p.Resume())
		if err != nil {
			return nil, fmt.Errorf("moving %s at 0x%x: %w", Disasm(b, pc), pc, err)
		}
	}
	j, err := Jmp(t+uint64(len(out)), p.Resume())
	if err != nil {
		return nil, err
	}
	return append(out, j...), nil // jmp resume
}

// relocate appends to out, which the trampoline at t holds so far, the
// instruction b (at pc in the function) rewritten as mi.How says.
func relocate(out, b []byte, pc, t uint64, mi move.Insn, resume uint64) ([]byte, error) {
	at := t + uint64(len(out))
	if mi.How == move.Copy {
		return append(out, b...), nil
	}
	in, err := Decode(b)
	if err != nil {
		return nil, err
	}
	if in.Len != len(b) {
		return nil, fmt.Errorf("decodes to %d bytes, the plan says %d", in.Len, len(b))
	}
	target := func() (uint64, bool) {
		r, ok := in.Args[0].(x86asm.Rel)
		return pc + uint64(in.Len) + uint64(int64(r)), ok
	}
	switch mi.How {
	case move.PCRel:
		return rebase(out, b, in, pc, at)
	case move.CondJump:
		to, ok := target()
		if !ok || !isJcc(in.Op) {
			return nil, fmt.Errorf("not a conditional jump")
		}
		cc := jccCond(b)
		if cc < 0 {
			return nil, fmt.Errorf("conditional jump opcode not found")
		}
		// jcc rel32: 0f 80+cc, the rel counting from its end (6 bytes).
		return rel32At(out, []byte{0x0f, 0x80 | byte(cc)}, at, to)
	case move.Branch:
		if in.Op == x86asm.JMP {
			to, ok := target()
			if !ok {
				return nil, fmt.Errorf("not a relative jump")
			}
			return rel32At(out, []byte{0xe9}, at, to) // jmp rel32
		}
		if in.Op == x86asm.CALL {
			return emulateCall(out, b, in, pc, at, resume)
		}
	}
	return nil, fmt.Errorf("no rewrite %v for %v", mi.How, in.Op)
}

// rel32At appends op and the rel32 that reaches to from an instruction
// at at (the rel counting from the instruction's end).
func rel32At(out, op []byte, at, to uint64) ([]byte, error) {
	end := at + uint64(len(op)) + 4
	rel := int64(to - end)
	if rel < math.MinInt32 || rel > math.MaxInt32 {
		return nil, &nops.RangeError{From: at, To: to, Max: 1 << 31}
	}
	out = append(out, op...)
	return binary.LittleEndian.AppendUint32(out, uint32(int32(rel))), nil
}

// rebase appends the instruction b (decoded as in, at pc) with its
// RIP-relative displacement rewritten for address at, so that it names
// the same address. The displacement's place comes from the decoder
// (an immediate may follow it).
func rebase(out, b []byte, in x86asm.Inst, pc, at uint64) ([]byte, error) {
	m, ok := ripMem(in)
	if !ok || in.PCRel != 4 || in.PCRelOff <= 0 || in.PCRelOff+4 > len(b) {
		return nil, fmt.Errorf("no RIP-relative operand")
	}
	abs := pc + uint64(len(b)) + uint64(disp(m))
	rel := int64(abs - (at + uint64(len(b))))
	if rel < math.MinInt32 || rel > math.MaxInt32 {
		return nil, &nops.RangeError{From: at, To: abs, Max: 1 << 31}
	}
	n := len(out)
	out = append(out, b...)
	binary.LittleEndian.PutUint32(out[n+in.PCRelOff:], uint32(int32(rel)))
	return out, nil
}

// disp returns m's displacement, sign-extended: x/arch gives a 32-bit
// displacement zero-extended.
func disp(m x86asm.Mem) int64 { return int64(int32(m.Disp)) }

// ripMem returns in's RIP-relative memory operand.
func ripMem(in x86asm.Inst) (x86asm.Mem, bool) {
	for _, a := range in.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.RIP {
			return m, true
		}
	}
	return x86asm.Mem{}, false
}

// jccCond returns the condition code (0 to 15) of the jcc b holds,
// behind any prefixes (branch hints): 70+cc rel8 or 0f 80+cc rel32.
func jccCond(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch {
		case b[i]&0xf0 == 0x70:
			return int(b[i] & 0x0f)
		case b[i] == 0x0f && i+1 < len(b) && b[i+1]&0xf0 == 0x80:
			return int(b[i+1] & 0x0f)
		case b[i] == 0x2e || b[i] == 0x3e || b[i] == 0xf2 || b[i] == 0x66 || b[i]&0xf0 == 0x40: // hints, bnd, prefixes
			continue
		}
		return -1
	}
	return -1
}

// callEmuLen is the length of a call's emulation before its jump.
const callEmuLen = 15

// emulateCall appends the emulation of the call b (decoded as in, at pc
// in the function; the last moved instruction) at address at: the same
// stack, registers and flags as the call leaves, with the return address
// the function's own next instruction, resume, which the function's FDE
// covers (so unwinders, exceptions and backtraces see the function, not
// the trampoline, as the caller), then a jump to the call's target.
//
//	push %rax                 the return address's slot, at the %rsp-8 the call would use
//	push %rax                 %rax saved below it: the red zone is the callee's at a call anyway
//	lea  resume(%rip),%rax    %rax: the return address
//	mov  %rax,0x8(%rsp)       into its slot
//	pop  %rax                 %rax restored: %rsp is the call's, (%rsp) its return address
//	jmp  target               e9 rel32, or the call's own operand as `jmp *...`
//
// None of these changes the flags, and no register but %rsp differs from
// the call's at the jump; a call through %rsp is refused when planned,
// since the jump reads its operand with %rsp moved. With a CET shadow
// stack the callee's return would not match (no call pushed it there):
// Linux enables those only on request, for programs marked for them.
func emulateCall(out, b []byte, in x86asm.Inst, pc, at, resume uint64) ([]byte, error) {
	start := len(out)
	out = append(out,
		0x50, // push %rax
		0x50, // push %rax
	)
	lea := at + uint64(len(out)-start)
	out = append(out, 0x48, 0x8d, 0x05) // lea disp32(%rip),%rax
	rel := int64(resume - (lea + 7))
	if rel < math.MinInt32 || rel > math.MaxInt32 {
		return nil, &nops.RangeError{From: lea, To: resume, Max: 1 << 31}
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(int32(rel)))
	out = append(out,
		0x48, 0x89, 0x44, 0x24, 0x08, // mov %rax,0x8(%rsp)
		0x58, // pop %rax
	)
	jat := at + uint64(len(out)-start)
	if r, ok := in.Args[0].(x86asm.Rel); ok {
		return rel32At(out, []byte{0xe9}, jat, pc+uint64(in.Len)+uint64(int64(r))) // jmp target
	}
	// call *operand (ff /2) becomes jmp *operand (ff /4): the same bytes
	// with the ModRM's reg field 2 made 4, behind the same prefixes.
	j := bytes.Clone(b)
	i := 0
	for i < len(j) && j[i] != 0xff {
		i++
	}
	if i+1 >= len(j) || j[i+1]>>3&7 != 2 {
		return nil, fmt.Errorf("indirect call opcode ff /2 not found")
	}
	j[i+1] = j[i+1]&^0x38 | 4<<3
	if _, ok := ripMem(in); ok {
		return rebase(out, j, in, pc, jat)
	}
	return append(out, j...), nil
}

// PrologueJump returns the p.Len bytes written at p.Patch: `jmp` to the
// trampoline at t, then int3 to the end of the moved instructions (never
// run: nothing branches into them, which the plan checked).
func PrologueJump(p *move.Plan, t uint64) ([]byte, error) {
	if p.Len < JumpLen {
		return nil, fmt.Errorf("plan of 0x%x: %d bytes, want at least %d", p.Func, p.Len, JumpLen)
	}
	j, err := Jmp(p.Patch, t)
	if err != nil {
		return nil, err
	}
	return append(j, bytes.Repeat([]byte{0xcc}, p.Len-JumpLen)...), nil // int3 padding
}
