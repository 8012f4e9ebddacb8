package sites

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
	"ftpatch/elfx"
)

// A callResolver finds where the calls of a linked file's sites lead:
// the address an instruction names, or the pointer slot it calls
// through, read as the loader fills it.
type callResolver struct {
	f     *elfx.File
	funcs *funcIndex // a cursor of its own: targets come in no order
	rel   *elfx.Relatives
	dyn   map[uint64]dynReloc // symbolic dynamic relocations by the address they fill; built on first use
}

// A dynReloc is a dynamic relocation that fills a word with a symbol's
// address (GLOB_DAT, JUMP_SLOT, ABS64) or an ifunc's result (IRELATIVE).
type dynReloc struct {
	typ    uint32
	sym    elfx.Symbol // from the dynamic symbol table; zero for IRELATIVE
	addend int64
}

// Dynamic relocation types, per machine, that fill a pointer slot.
type slotTypes struct {
	globDat, jumpSlot, abs64, irelative uint32
	// addend says whether GLOB_DAT and JUMP_SLOT add the addend: not on
	// x86-64 (S), yes on AArch64 (S + A).
	addend bool
}

var slotRelocs = map[arch.Arch]slotTypes{
	arch.X86_64: {uint32(elf.R_X86_64_GLOB_DAT), uint32(elf.R_X86_64_JMP_SLOT), uint32(elf.R_X86_64_64), uint32(elf.R_X86_64_IRELATIVE), false},
	arch.ARM64:  {uint32(elf.R_AARCH64_GLOB_DAT), uint32(elf.R_AARCH64_JUMP_SLOT), uint32(elf.R_AARCH64_ABS64), uint32(elf.R_AARCH64_IRELATIVE), true},
}

// x86 returns the target of the x86-64 call at address a, whose bytes
// (Len n) start b: `e8 rel32`, `67 e8 rel32`, or `ff 15 disp32`.
func (r *callResolver) x86(a uint64, b []byte, n int) (*Call, error) {
	switch {
	case n == 5 && b[0] == 0xe8: // call rel32
		return r.direct(a + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(b[1:])))))
	case n == 6 && b[0] == 0x67 && b[1] == 0xe8: // addr32 call rel32
		return r.direct(a + 6 + uint64(int64(int32(binary.LittleEndian.Uint32(b[2:])))))
	case n == 6 && b[0] == 0xff && b[1] == 0x15: // call *disp32(%rip)
		return r.slot(a+6+uint64(int64(int32(binary.LittleEndian.Uint32(b[2:])))), ViaGOT)
	}
	return nil, fmt.Errorf("call % x: not e8, 67 e8 or ff 15", b[:n])
}

// arm64 returns the target of the arm64 `bl` word w at address a.
func (r *callResolver) arm64(a uint64, w uint32) (*Call, error) {
	imm := int64(int32(w<<6)>>6) * 4 // imm26, sign-extended, in words
	return r.direct(a + uint64(imm))
}

// direct names the function at t; when t is a PLT stub, the call goes on
// through the stub's slot.
func (r *callResolver) direct(t uint64) (*Call, error) {
	if isPLT(sectionOf(r.f, t)) {
		slot, ok := r.pltSlot(t)
		if ok {
			return r.slot(slot, ViaPLT)
		}
	}
	return r.name(&Call{Addr: t}), nil
}

// isPLT reports whether a section of that name holds PLT stubs: GNU ld's
// .plt, .plt.sec (with IBT), .plt.got, and .iplt in static programs.
func isPLT(name string) bool {
	return name == ".plt" || name == ".iplt" || strings.HasPrefix(name, ".plt.")
}

// pltSlot decodes the PLT stub at t and returns the slot it jumps
// through: x86-64 `[endbr64] [bnd] jmp *disp32(%rip)`; arm64 `[bti c]
// adrp x16, page; ldr x17, [x16, #off]` (then `add`, `br x17`).
func (r *callResolver) pltSlot(t uint64) (uint64, bool) {
	code, err := r.f.ReadAt(elfx.Addr(t), 16)
	if err != nil {
		return 0, false
	}
	if r.f.Arch == arch.X86_64 {
		at := uint64(0)
		if isEndbr64(code) {
			at = 4
		}
		in, err := x86asm.Decode(code[at:], 64)
		if err != nil || in.Op != x86asm.JMP {
			return 0, false
		}
		m, ok := in.Args[0].(x86asm.Mem)
		if !ok || m.Base != x86asm.RIP || m.Index != 0 {
			return 0, false
		}
		return t + at + uint64(in.Len) + uint64(m.Disp), true
	}
	at := uint64(0)
	if arm64IsBTI(word(code, 0)) {
		at = 4
	}
	adrp, ldr := word(code, at), word(code, at+4)
	// adrp x16: 1 immlo:2 10000 immhi:19 Rd=16; ldr x17, [x16, #imm12*8]:
	// 1111100101 imm12 Rn=16 Rt=17.
	if adrp&0x9f00001f != 0x90000010 || ldr&0xffc003ff != 0xf9400211 {
		return 0, false
	}
	immlo, immhi := uint64(adrp>>29&3), uint64(adrp>>5&0x7ffff)
	page := uint64(int64((immhi<<2|immlo)<<43) >> 43 << 12) // 21 bits, signed, in pages
	return (t+at)&^0xfff + page + uint64(ldr>>10&0xfff)*8, true
}

// slot returns where a call through the 8-byte pointer slot at s leads,
// as the loader fills it: a RELATIVE relocation's value, a symbol's
// address (or, undefined here, its name), or else the word in the file.
func (r *callResolver) slot(s uint64, via Via) (*Call, error) {
	if v, ok := r.rel.Lookup(elfx.Addr(s)); ok {
		return r.name(&Call{Addr: v, Via: via}), nil
	}
	if err := r.loadDyn(); err != nil {
		return nil, err
	}
	if d, ok := r.dyn[s]; ok {
		t := slotRelocs[r.f.Arch]
		switch d.typ {
		case t.irelative:
			// The loader stores what the resolver at the addend returns.
			c := r.name(&Call{Addr: uint64(d.addend)})
			return &Call{Name: c.Name, Off: c.Off, Via: ViaIfunc}, nil
		case t.globDat, t.jumpSlot, t.abs64:
			if !d.sym.Defined() {
				// Bound at load to another module's definition.
				return &Call{Name: d.sym.Name, Via: via}, nil
			}
			v := uint64(d.sym.Value)
			if d.typ == t.abs64 || t.addend {
				v += uint64(d.addend)
			}
			c := r.name(&Call{Addr: v, Via: via})
			if c.Name == "" {
				c.Name = d.sym.Name
			}
			return c, nil
		}
		return nil, fmt.Errorf("pointer slot 0x%x: filled by a %s relocation, not a pointer one", s, elfx.RelocTypeName(r.f.Arch, d.typ))
	}
	b, err := r.f.ReadAt(elfx.Addr(s), 8)
	if err != nil {
		if r.inMemory(s) {
			return &Call{Via: via}, nil // a zero-filled (bss) slot: set at run time
		}
		return nil, fmt.Errorf("pointer slot: %w", err)
	}
	v := binary.LittleEndian.Uint64(b)
	if v == 0 {
		return &Call{Via: via}, nil // filled at run time, by nothing the file says
	}
	return r.name(&Call{Addr: v, Via: via}), nil
}

// inMemory reports whether the 8 bytes at a lie in the memory of a
// loaded segment, file-backed or not.
func (r *callResolver) inMemory(a uint64) bool {
	for _, p := range r.f.Progs {
		if p.Type == elf.PT_LOAD && uint64(p.Vaddr) <= a && a-uint64(p.Vaddr) < p.Memsz && p.Memsz-(a-uint64(p.Vaddr)) >= 8 {
			return true
		}
	}
	return false
}

// name fills c's name from the function containing its address.
func (r *callResolver) name(c *Call) *Call {
	if fun, ok := r.funcs.containing(0, c.Addr); ok {
		c.Name, c.Off = fun.name, c.Addr-fun.start
	}
	return c
}

// loadDyn collects the symbolic dynamic relocations (those of every
// SHF_ALLOC SHT_RELA section other than RELATIVE, which Relatives has).
func (r *callResolver) loadDyn() error {
	if r.dyn != nil {
		return nil
	}
	r.dyn = map[uint64]dynReloc{}
	t := slotRelocs[r.f.Arch]
	relative := uint32(elf.R_X86_64_RELATIVE)
	if r.f.Arch == arch.ARM64 {
		relative = uint32(elf.R_AARCH64_RELATIVE)
	}
	syms := map[uint32][]elfx.Symbol{}
	for _, s := range r.f.Sections {
		if s.Type != elf.SHT_RELA || s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		rs, err := r.f.Relas(s)
		if err != nil {
			return err
		}
		if _, ok := syms[s.Link]; !ok && s.Link != 0 {
			ss, err := r.f.Symbols(r.f.Sections[s.Link])
			if err != nil {
				return err
			}
			syms[s.Link] = ss
		}
		for _, x := range rs {
			if x.Type == relative || x.Type == elfx.RelocNone {
				continue
			}
			d := dynReloc{typ: x.Type, addend: x.Addend}
			if x.Type != t.irelative && s.Link != 0 {
				d.sym = syms[s.Link][x.Sym] // Relas checked the index
			}
			r.dyn[x.Off] = d
		}
	}
	return nil
}
