package sites

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
	"ftpatch/runtime/abi"
)

// decodeWindow bounds the bytes of a function read to find its site. The
// longest stretch a compiler puts before an mcount call is clang -O0
// saving a varargs function's argument registers: about 100 bytes.
const decodeWindow = 256

// maxPrologue bounds the instructions decoded before an mcount call:
// clang puts up to about 25 there (callee-saved pushes, argument copies,
// the varargs register save area), gcc fewer than 10.
const maxPrologue = 48

// A callee is what a call in a function's entry may reach: a compiler
// hook, or a runtime trampoline that ftpatch enable or the runtime writes
// calls to in place of the hook's.
type callee struct {
	kind  Kind // the kind of site a call to it makes; KindUnknown: any kind
	n     int  // bytes of the call that may reach it; 0: any length
	tramp bool
}

// serves reports whether a call of n bytes to c is a site of kind k. A
// hook serves every kind that calls it (a chain site calls __fentry__).
func (c callee) serves(k Kind, n int) bool {
	kind := c.kind == k || c.kind == KindUnknown || (!c.tramp && c.kind == k.hookKind())
	return kind && (c.n == 0 || c.n == n)
}

// hookKind is the kind of site whose hook a site of kind k calls while it
// holds the compiler's call: X86Fentry for a chain site, k for the rest.
func (k Kind) hookKind() Kind {
	if k == X86Chain {
		return X86Fentry
	}
	return k
}

// trampolines are the runtime's entry points that an enabled site calls
// (runtime/src/<arch>/entry.S): a site calling one is traced (see
// Site.Status). Each serves one kind and length of site, as the runtime
// writes them: `e8 rel32` to ftrace_caller5, `67 e8 rel32` to
// ftrace_caller6, the mcount and chain variants after the prologue and
// after a nested function's push %r10; ftrace_stub (FTRACE=nop) from any
// site; on arm64, ftrace_caller from a patchable area's second word and
// ftrace_mcount_caller from a -pg site, the names runtime/src/abi.h gives
// the runtime's arm64 port, which does not exist yet.
var trampolines = map[arch.Arch]map[string]callee{
	arch.X86_64: {
		abi.Caller5:       {X86Fentry, 5, true},
		abi.Caller6:       {X86Fentry, 6, true},
		abi.McountCaller5: {X86Mcount, 5, true},
		abi.McountCaller6: {X86Mcount, 6, true},
		abi.ChainCaller5:  {X86Chain, 5, true},
		abi.ChainCaller6:  {X86Chain, 6, true},
		abi.Stub:          {KindUnknown, 0, true},
	},
	arch.ARM64: {
		abi.ARM64Caller:       {ARM64Patchable, 4, true},
		abi.ARM64McountCaller: {ARM64Mcount, 4, true},
		abi.Stub:              {KindUnknown, 4, true},
	},
}

// pltSections hold the linkers' stubs that jump through a pointer slot:
// a call to an imported hook reaches the hook through one of them.
var pltSections = map[string]bool{".plt": true, ".plt.sec": true, ".plt.got": true, ".iplt": true}

// A decoder finds the sites of one linked file by decoding function
// entries.
type decoder struct {
	f   *elfx.File
	rel *elfx.Relatives
	// callees are the hooks and trampolines the file defines, by address.
	callees map[uint64]callee
	// slots are the pointer slots (GOT entries) a dynamic relocation
	// fills with an imported hook's address, with the hook's kind.
	slots map[uint64]Kind
	// defined says, per kind, whether the file defines that kind's hook.
	// A NOP of ours counts as a site only then: a program that can run a
	// site's hook call is one ftpatch may have rewritten.
	defined [ARM64Mcount + 1]bool
	plts    []*elfx.Section
	viaPLT  map[uint64]pltEntry // PLT stubs resolved so far
	// callForms records, per x86CallForm, whether x/arch decoded it as
	// the call it must be (1) or not (2); 0 until first seen.
	callForms [3]uint8
}

type pltEntry struct {
	kind Kind
	ok   bool
}

// hookName is a symbol's name without the version a static link leaves on
// an imported symbol in .symtab ("__fentry__@GLIBC_2.13").
func hookName(name string) string {
	if i := strings.IndexByte(name, '@'); i >= 0 {
		return name[:i]
	}
	return name
}

func newDecoder(f *elfx.File, syms []elfx.Symbol, rel *elfx.Relatives) (*decoder, error) {
	d := &decoder{f: f, rel: rel, callees: map[uint64]callee{}, slots: map[uint64]Kind{}, viaPLT: map[uint64]pltEntry{}}
	hooks, tramps := hookKinds[f.Arch], trampolines[f.Arch]
	for i := range syms {
		s := &syms[i]
		if !s.Defined() || s.Type() == elf.STT_SECTION || s.Type() == elf.STT_FILE {
			continue
		}
		name := hookName(s.Name)
		if k, ok := hooks[name]; ok {
			d.callees[uint64(s.Value)] = callee{kind: k}
			d.defined[k] = true
		} else if c, ok := tramps[name]; ok {
			if _, hook := d.callees[uint64(s.Value)]; !hook {
				d.callees[uint64(s.Value)] = c
			}
		}
	}
	// Imported hooks: the slots the loader fills with their addresses
	// (R_*_GLOB_DAT, R_*_JUMP_SLOT, R_*_64 against the hook).
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || s.Flags&elf.SHF_ALLOC == 0 || s.Link == 0 || int(s.Link) >= len(f.Sections) {
			continue
		}
		dynsym := f.Sections[s.Link]
		if dynsym.Type != elf.SHT_DYNSYM {
			continue
		}
		dsyms, err := f.Symbols(dynsym)
		if err != nil {
			return nil, err
		}
		kinds := map[uint32]Kind{}
		for i := range dsyms {
			if k, ok := hooks[hookName(dsyms[i].Name)]; ok {
				kinds[uint32(i)] = k
			}
		}
		if len(kinds) == 0 {
			continue
		}
		rt, err := f.RelaTable(s)
		if err != nil {
			return nil, err
		}
		for i := 0; i < rt.Len(); i++ {
			if k, ok := kinds[rt.Sym(i)]; ok {
				if r := rt.At(i); r.Addend == 0 && r.Type != elfx.RelocNone {
					d.slots[r.Off] = k
				}
			}
		}
	}
	for _, s := range f.Sections {
		if pltSections[s.Name] && s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS {
			d.plts = append(d.plts, s)
		}
	}
	return d, nil
}

// usesHooks reports whether f defines or imports a tracing hook (in
// .symtab or .dynsym), which makes decoding its function entries
// worthwhile.
func usesHooks(f *elfx.File) bool {
	hooks := hookKinds[f.Arch]
	has := func(syms []elfx.Symbol) bool {
		for i := range syms {
			if _, ok := hooks[hookName(syms[i].Name)]; ok {
				return true
			}
		}
		return false
	}
	if _, syms, err := f.Symtab(); err == nil && has(syms) {
		return true
	}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_DYNSYM {
			if syms, err := f.Symbols(s); err == nil && has(syms) {
				return true
			}
		}
	}
	return false
}

// callee resolves the target of a direct call: a hook or trampoline the
// file defines, or a PLT stub jumping through a slot that holds a hook.
func (d *decoder) callee(t uint64) (callee, bool) {
	if c, ok := d.callees[t]; ok {
		return c, true
	}
	if len(d.plts) == 0 {
		return callee{}, false
	}
	e, seen := d.viaPLT[t]
	if !seen {
		e = d.plt(t)
		d.viaPLT[t] = e
	}
	return callee{kind: e.kind}, e.ok
}

// plt decodes the PLT stub at t: `[endbr64] [bnd] jmp *disp32(%rip)` on
// x86-64, `[bti c] adrp x16, page; ldr x17, [x16, #off]` on arm64.
func (d *decoder) plt(t uint64) pltEntry {
	for _, s := range d.plts {
		if t < uint64(s.Addr) || t >= uint64(s.Addr)+s.Size {
			continue
		}
		b := d.f.SectionData(s)[t-uint64(s.Addr):]
		var slot uint64
		var ok bool
		if d.f.Arch == arch.X86_64 {
			slot, ok = x86PLTSlot(b, t)
		} else {
			slot, ok = arm64PLTSlot(b, t)
		}
		if !ok {
			return pltEntry{}
		}
		k, ok := d.slot(slot)
		return pltEntry{k, ok}
	}
	return pltEntry{}
}

func x86PLTSlot(b []byte, pc uint64) (uint64, bool) {
	p := 0
	if isEndbr64(b) {
		p = 4
	}
	in, err := x86Decode(b[p:])
	if err != nil || in.Op != x86asm.JMP {
		return 0, false
	}
	m, ok := in.Args[0].(x86asm.Mem)
	if !ok || m.Base != x86asm.RIP || m.Index != 0 {
		return 0, false
	}
	return pc + uint64(p+in.Len) + uint64(m.Disp), true
}

func arm64PLTSlot(b []byte, pc uint64) (uint64, bool) {
	if len(b) >= 4 && arm64IsBTI(word(b, 0)) {
		b, pc = b[4:], pc+4
	}
	if len(b) < 8 {
		return 0, false
	}
	adrp, ldr := word(b, 0), word(b, 4)
	if adrp&0x9f00001f != 0x90000010 || ldr&0xffc003ff != 0xf9400211 { // adrp x16, page; ldr x17, [x16, #off]
		return 0, false
	}
	imm := int64(adrp>>29&3|(adrp>>5&0x7ffff)<<2) << 43 >> 31 // immhi:immlo, sign-extended, in pages
	return pc&^0xfff + uint64(imm) + uint64(ldr>>10&0xfff)*8, true
}

// slot reports whether the pointer slot at s holds a hook once loaded: a
// dynamic relocation against the hook fills it, a RELATIVE relocation
// stores the hook's address (a static PIE), or a static link wrote the
// address into the file.
func (d *decoder) slot(s uint64) (Kind, bool) {
	if k, ok := d.slots[s]; ok {
		return k, true
	}
	v, ok := d.rel.Lookup(elfx.Addr(s))
	if !ok {
		b, err := d.f.ReadAt(elfx.Addr(s), 8)
		if err != nil {
			return 0, false
		}
		v = binary.LittleEndian.Uint64(b)
	}
	c, ok := d.callees[v]
	if !ok || c.tramp {
		return 0, false
	}
	return c.kind, true
}

// A found site, relative to its function.
type found struct {
	off   uint64 // bytes from the function's start
	n     int    // bytes
	kind  Kind
	state State
}

// x86Site reports whether b, at address pc, holds a site of kind k, and
// how long it is and what it holds: a call to k's hook (`e8 rel32`, `67
// e8 rel32`, `ff 15 disp32` through a slot that holds it, or `e8` to its
// PLT stub), a call as the runtime writes it to a trampoline serving k
// and that length, or, in a file defining k's hook, one of our NOPs of 5
// or 6 bytes.
func (d *decoder) x86Site(b []byte, pc uint64, k Kind) (int, State, bool) {
	var n int
	var form x86CallForm
	var c callee
	var ok bool
	switch {
	case len(b) >= 5 && b[0] == 0xe8: // call rel32
		n, form = 5, formRel
		c, ok = d.callee(pc + 5 + rel32(b[1:]))
	case len(b) >= 6 && b[0] == 0x67 && b[1] == 0xe8: // addr32 call rel32
		n, form = 6, formAddr32
		c, ok = d.callee(pc + 6 + rel32(b[2:]))
	case len(b) >= 6 && b[0] == 0xff && b[1] == 0x15: // call *disp32(%rip)
		n, form = 6, formRIP
		c.kind, ok = d.slot(pc + 6 + rel32(b[2:]))
	case len(b) >= 5 && (b[0] == 0x0f || b[0] == 0x66 || b[0] == 0xeb) && d.defined[k.hookKind()]:
		// The first bytes of every NOP of ours of 5 or 6 bytes.
		if m, nop := x86.IsNop(b); nop && (m == 5 || m == 6) {
			return m, StateNop, true
		}
		return 0, 0, false
	default:
		return 0, 0, false
	}
	if !ok || !c.serves(k, n) || (c.tramp && form == formRIP) || !d.x86CallDecodes(b, form, n) {
		return 0, 0, false
	}
	return n, StateCall, true
}

// The byte forms of a call at a site; see x86Site.
type x86CallForm uint8

const (
	formRel x86CallForm = iota
	formAddr32
	formRIP
)

// x86CallDecodes checks with x/arch's decoder that b is the n-byte call
// its first bytes say. How a call decodes depends on its opcode bytes,
// not on its displacement, so one decode per form serves every site.
func (d *decoder) x86CallDecodes(b []byte, form x86CallForm, n int) bool {
	if d.callForms[form] == 0 {
		d.callForms[form] = 2
		if x86Call(b[:n], n) == nil {
			d.callForms[form] = 1
		}
	}
	return d.callForms[form] == 1
}

// rel32 sign-extends the little-endian 32-bit displacement at b.
func rel32(b []byte) uint64 { return uint64(int64(int32(binary.LittleEndian.Uint32(b)))) }

// x86Func finds the site of the function fn (its bytes) at address start:
// at the entry (after endbr64 and the NOPs of a patchable area, see
// x86.SiteLead), after a nested function's `push %r10` (a chain
// site), or, for -pg without -mfentry, the first call after `push %rbp;
// mov %rsp,%rbp` and the rest of the prologue.
func (d *decoder) x86Func(fn []byte, start uint64) (found, bool) {
	code := fn[:min(len(fn), decodeWindow)]
	e := int(x86Entry(code, 0))
	if bytes.HasPrefix(code[e:], x86.PushR10) {
		p := e + len(x86.PushR10)
		if isEndbr64(code[p:]) {
			p += len(x86.Endbr64)
		}
		s, _, ok := d.x86EntrySite(fn, code, start, p, X86Chain)
		if !ok || x86.SiteLead(code, s.off, s.n) != x86.LeadChain {
			return found{}, false
		}
		return s, true
	}
	s, e, ok := d.x86EntrySite(fn, code, start, e, X86Fentry)
	if ok {
		return s, true
	}
	if len(code) < e+4 || [4]byte(code[e:e+4]) != [4]byte{0x55, 0x48, 0x89, 0xe5} { // push %rbp; mov %rsp,%rbp
		return found{}, false
	}
	// Before the site: anything but a call elsewhere or a jump away.
	// Before a NOP, which is not self-evidently a site as a call to the
	// hook is, only what a prologue does (push, store, copy a register,
	// adjust %rsp, clang's varargs `test %al,%al; je`), and jumps that
	// land before it; and the NOP must not be a loop's alignment padding.
	onlyPrologue := true
	var reach uint64 // the furthest a forward conditional jump lands
	pos := uint64(e + 4)
	for i := 0; i < maxPrologue && pos < uint64(len(code)); i++ {
		if n, st, ok := d.x86Site(code[pos:], start+pos, X86Mcount); ok {
			if st == StateNop && (!onlyPrologue || reach > pos || x86LoopHead(fn, start, int(pos)+n)) {
				return found{}, false
			}
			return found{pos, n, X86Mcount, st}, true
		}
		n, class, target := x86Step(code[pos:])
		switch class {
		case classStop:
			return found{}, false
		case classJcc:
			to := pos + uint64(n) + target
			if to <= pos {
				return found{}, false // backwards: a loop
			}
			reach = max(reach, to)
		case classOther:
			onlyPrologue = false
		}
		pos += uint64(n)
	}
	return found{}, false
}

// x86EntrySite finds a site of kind k at the entry of the function fn
// (at address start; code is its first bytes): at p, or after the entry
// NOPs (x86.EntryNop) from p on, which a patchable area leaves before
// the compiler's call; NOPs of ours are tried as the site before they are
// passed over. When there is none, end is where the NOPs end.
func (d *decoder) x86EntrySite(fn, code []byte, start uint64, p int, k Kind) (s found, end int, ok bool) {
	for p < len(code) {
		if n, st, ok := d.x86Site(code[p:], start+uint64(p), k); ok {
			if st == StateNop && x86LoopHead(fn, start, p+n) {
				return found{}, p, false
			}
			return found{uint64(p), n, k, st}, p, true
		}
		n := x86.EntryNop(code[p:])
		if n == 0 {
			break
		}
		p += n
	}
	return found{}, p, false
}

// x86LoopHead reports whether the NOP that ends at head bytes into the
// function fn (at address start) may be a loop's alignment padding: a
// NOP of 5 or 6 bytes pads to an alignment of at least 8, so a NOP whose
// end is not 8-aligned never is; one whose end is, is padding if a jump
// later in the function comes back to head. The rest of the function is
// decoded to find out (for these NOPs only: one in eight of the sites);
// bytes that do not decode count as padding, so that a NOP is taken for
// a site only when it surely is one.
func x86LoopHead(fn []byte, start uint64, head int) bool {
	if (start+uint64(head))%8 != 0 {
		return false
	}
	for pos := head; pos < len(fn); {
		in, err := x86Decode(fn[pos:])
		if err != nil || in.Len == 0 {
			return true
		}
		if x86Class(in) == classJcc || in.Op == x86asm.JMP || in.Op == x86asm.LOOP || in.Op == x86asm.LOOPE || in.Op == x86asm.LOOPNE {
			if r, ok := in.Args[0].(x86asm.Rel); ok && int64(pos+in.Len)+int64(r) == int64(head) {
				return true
			}
		}
		pos += in.Len
	}
	return false
}

// An insnClass sorts the instructions met between the frame setup and an
// mcount call.
type insnClass uint8

const (
	classOther    insnClass = iota // computes: may come before a call, not before a NOP
	classPrologue                  // saves, stores or copies a register, adjusts %rsp
	classJcc                       // a conditional jump
	classStop                      // a call elsewhere, a jump, a return, a trap, a NOP not ours
)

// x86Step decodes the instruction at b and classifies it; for a
// conditional jump it also returns the displacement. Instructions it
// cannot decode stop the scan.
func x86Step(b []byte) (n int, c insnClass, rel uint64) {
	if n, ok := x86Fast(b); ok {
		return n, classPrologue, 0
	}
	in, err := x86Decode(b)
	if err != nil || in.Len == 0 {
		return 1, classStop, 0
	}
	c = x86Class(in)
	if c == classJcc {
		r, ok := in.Args[0].(x86asm.Rel)
		if !ok {
			return in.Len, classStop, 0
		}
		rel = uint64(int64(r))
	}
	return in.Len, c, rel
}

// x86Fast recognises by their bytes the instructions gcc and clang put
// most often before an mcount call, sparing the general decoder on the
// scan over every function: push of a register, `sub $imm,%rsp`, a
// register copied to a register or spilled to the frame. Each form is
// checked against x/arch's decoding in the tests.
func x86Fast(b []byte) (int, bool) {
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

// x86Class classifies a decoded instruction for the scan of a prologue.
func x86Class(in x86asm.Inst) insnClass {
	switch in.Op {
	case x86asm.CALL, x86asm.LCALL, x86asm.JMP, x86asm.LJMP, x86asm.RET, x86asm.LRET,
		x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.UD0, x86asm.UD1, x86asm.UD2,
		x86asm.HLT, x86asm.INT, x86asm.SYSCALL, x86asm.SYSENTER, x86asm.SYSEXIT, x86asm.SYSRET,
		x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ,
		x86asm.NOP:
		return classStop
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE, x86asm.JL,
		x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS:
		return classJcc
	case x86asm.PUSH, x86asm.LEA:
		return classPrologue
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD:
		// Registers copied, spilled to the frame, or arguments passed on
		// the stack loaded from the caller's frame.
		if frameOperand(in.Args[0]) && frameOperand(in.Args[1]) {
			return classPrologue
		}
	case x86asm.SUB, x86asm.ADD, x86asm.AND:
		if in.Args[0] == x86asm.RSP {
			return classPrologue
		}
	case x86asm.MOVAPS, x86asm.MOVAPD, x86asm.MOVDQA, x86asm.MOVUPS, x86asm.MOVUPD, x86asm.MOVDQU,
		x86asm.MOVSD_XMM, x86asm.MOVSS, x86asm.MOVQ, x86asm.MOVD:
		if _, store := in.Args[0].(x86asm.Mem); store && frameOperand(in.Args[0]) {
			return classPrologue
		}
	case x86asm.TEST:
		if in.Args[0] == x86asm.AL && in.Args[1] == x86asm.AL { // varargs: were vector registers passed?
			return classPrologue
		}
	}
	return classOther
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

// arm64 instructions the scan of a -pg prologue knows, as mask and value.
const (
	arm64StpFPLR    = 0xa9007bfd // stp x29, x30, [sp, #imm] (signed offset)
	arm64StpFPLRPre = 0xa9807bfd // stp x29, x30, [sp, #imm]! (pre-index)
	arm64StpMask    = 0xffc07fff // all but imm7
	arm64AddFPSP    = 0x910003fd // add x29, sp, #imm (mov x29, sp)
	arm64AddMask    = 0xff8003ff // all but sh and imm12
	arm64BLMask     = 0xfc000000
	arm64BLOp       = 0x94000000 // bl
)

// arm64Branches are the encodings that end the scan of a prologue: every
// branch, return and trap (mask, value).
var arm64Branches = [...][2]uint32{
	{0xfc000000, 0x14000000}, // b
	{0xff000010, 0x54000000}, // b.cond
	{0x7e000000, 0x34000000}, // cbz, cbnz
	{0x7e000000, 0x36000000}, // tbz, tbnz
	{0xfe000000, 0xd6000000}, // br, blr, ret, eret (unconditional branch, register)
	{0xff000000, 0xd4000000}, // svc, hvc, brk, hlt (exception generation)
	{0xffff0000, 0x00000000}, // udf
}

func arm64Ends(w uint32) bool {
	for _, b := range arm64Branches {
		if w&b[0] == b[1] {
			return true
		}
	}
	return false
}

// arm64Func finds the -pg site of the function fn (its bytes) at address
// start: the first `bl` after the frame record is stored, if it calls
// _mcount: gcc's `stp x29, x30, [sp, #-N]!; mov x29, sp; ...; mov x0,
// x30; bl _mcount`, or clang's shape without `mov x0, x30`. A `b _mcount`
// (a tail call) is never a site. A NOP in that place, not self-evidently
// a site as a call to the hook is, counts only in gcc's whole shape: the
// frame record and frame pointer set up, then `mov x0, x30` (the return
// address as mcount's argument, which code not built with -pg has no
// reason to write) and nothing after it that may overwrite x0.
func (d *decoder) arm64Func(fn []byte, start uint64) (found, bool) {
	code := fn[:min(len(fn), decodeWindow)]
	var frame, fp, lr bool
	for pos := 0; pos+4 <= len(code) && pos/4 < maxPrologue; pos += 4 {
		w := word(code, uint64(pos))
		switch {
		case w&arm64BLMask == arm64BLOp:
			if !frame {
				return found{}, false
			}
			t, _, _ := arm64.BranchTarget(start+uint64(pos), w)
			c, ok := d.callee(t)
			if !ok || !c.serves(ARM64Mcount, 4) || !arm64IsBL(w) {
				return found{}, false
			}
			return found{uint64(pos), 4, ARM64Mcount, StateCall}, true
		case w == arm64.NOP:
			if frame && fp && lr && d.defined[ARM64Mcount] && arm64IsNop(w) {
				return found{uint64(pos), 4, ARM64Mcount, StateNop}, true
			}
			return found{}, false
		case arm64Ends(w):
			return found{}, false
		case w&arm64StpMask == arm64StpFPLR || w&arm64StpMask == arm64StpFPLRPre:
			frame = true
		case w&arm64AddMask == arm64AddFPSP:
			fp = true
		case w == arm64.MovX0X30:
			lr = true
		case arm64MayWriteX0(w):
			lr = false
		}
	}
	return found{}, false
}

// arm64MayWriteX0 reports whether w may write x0. Data processing
// instructions and loads name their destination in bits 4:0 (a load pair
// its second in bits 14:10), stores their source there; so an instruction
// may write x0 unless it is a store or names another register there. It
// errs towards yes (a write to v0 or a compare with x0's field), which
// only costs a NOP its proof.
func arm64MayWriteX0(w uint32) bool {
	switch {
	case arm64IsStore(w):
		return false
	case w&0x3a400000 == 0x28400000: // load pair: Rt and Rt2
		return w&31 == 0 || w>>10&31 == 0
	}
	return w&31 == 0
}

// arm64IsStore reports whether w stores registers to memory with an
// immediate offset: stp (any register class and addressing), str with an
// unsigned offset, stur and str pre- or post-indexed.
func arm64IsStore(w uint32) bool {
	return w&0x3a400000 == 0x28000000 || // load/store pair, L=0
		w&0x3b400000 == 0x39000000 || // str (unsigned offset), opc<0>=0
		w&0x3b600000 == 0x38000000 // stur, str pre/post-index, opc<0>=0
}

// errNoDecoded: a linked file without a site table whose function
// entries hold no site either.
var errNoDecoded = errors.New("no function entry calls a tracing hook")

// FindDecoded finds the sites of a linked file that has no site table,
// built with -pg -mfentry, or -pg, without recordmcount: it decodes the
// entry of every function symbol with a size in an executable section
// (golang.org/x/arch) and takes as a site a call to the hook
// (__fentry__ at the entry, after endbr64; mcount or _mcount after the
// prologue) whose target the symbol table, the PLT or the dynamic
// relocations confirm. A call to the runtime's trampoline in that place,
// or one of the nops package's NOPs where the file defines the hook, is
// a site too, so a file ftpatch enable wrote into gives the same sites.
// A function that calls anything else first has none.
//
// Only the first instructions of each function are decoded: a file of
// 200,000 functions takes a fraction of a second.
func FindDecoded(f *elfx.File) (*Linked, error) {
	if f.Type == elf.ET_REL {
		return nil, fmt.Errorf("relocatable object: use recordmcount --list")
	}
	_, syms, err := f.Symtab()
	if err != nil {
		return nil, fmt.Errorf("decoding function entries: %w", err)
	}
	rel, err := f.Relatives()
	if err != nil {
		return nil, fmt.Errorf("decoding function entries: %w", err)
	}
	d, err := newDecoder(f, syms, rel)
	if err != nil {
		return nil, fmt.Errorf("decoding function entries: %w", err)
	}
	funcs := newFuncIndex(syms, true)
	// The decoder knows a call reaches a hook or trampoline; where it
	// leads, as TARGET shows it, is read as for a table's sites.
	calls := &callResolver{f: f, funcs: funcs.cursor(), rel: rel}
	out := &Linked{Arch: f.Arch}
	for _, e := range funcs.section(0) {
		sym := &syms[e.sym]
		sec := f.Sections[sym.Shndx]
		if e.end <= e.start || sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_EXECINSTR == 0 || e.start < uint64(sec.Addr) {
			continue
		}
		data := f.SectionData(sec)
		lo := e.start - uint64(sec.Addr)
		if lo >= uint64(len(data)) {
			continue
		}
		fn := data[lo:min(uint64(len(data)), e.end-uint64(sec.Addr))]
		var s found
		var ok bool
		if f.Arch == arch.X86_64 {
			s, ok = d.x86Func(fn, e.start)
		} else {
			s, ok = d.arm64Func(fn, e.start)
		}
		if !ok {
			continue
		}
		fun := funcs.fn(e)
		site := Site{Off: e.start + s.off, FuncOff: s.off, Func: fun.name, SecName: sec.Name,
			Len: s.n, Kind: s.kind, State: s.state, Rela: -1, RelaIdx: -1, Weak: fun.bind == elf.STB_WEAK, Discover: FromDecode}
		if s.state == StateCall {
			// A site in a linked file that holds a call always says where
			// it leads (Site.Status names it by its target).
			var err error
			if f.Arch == arch.X86_64 {
				site.Call, err = calls.x86(site.Off, fn[s.off:], s.n)
			} else {
				site.Call, err = calls.arm64(site.Off, word(fn, s.off))
			}
			if err != nil {
				return nil, &SiteError{sec.Name, site.Off, fun.name, "", err}
			}
		}
		out.Sites = append(out.Sites, site)
	}
	return out, nil
}

// findDecodedOrNoTable is FindLinked's answer for a file without a table:
// the decoded sites when the file uses a hook and some function calls it,
// else ErrNoTable.
func findDecodedOrNoTable(f *elfx.File) (*Linked, error) {
	if !usesHooks(f) {
		return nil, ErrNoTable
	}
	l, err := FindDecoded(f)
	if err != nil {
		return nil, err
	}
	if len(l.Sites) == 0 {
		return nil, fmt.Errorf("%w; and %v", ErrNoTable, errNoDecoded)
	}
	return l, nil
}
