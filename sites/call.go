package sites

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"ftpatch/elfx"
	"ftpatch/isa"
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

// call returns the target of the n-byte call at address a, whose bytes
// start b: the function it names, or where the pointer slot it calls
// through leads.
func (r *callResolver) call(a uint64, b []byte, n int) (*Call, error) {
	t, viaSlot, err := isa.For(r.f.Arch).CallTarget(b, a, n)
	if err != nil {
		return nil, err
	}
	if viaSlot {
		return r.slot(t, ViaGOT)
	}
	return r.direct(t)
}

// direct names the function at t; when t is a PLT stub, the call goes on
// through the stub's slot.
func (r *callResolver) direct(t uint64) (*Call, error) {
	if isa.IsPLT(sectionOf(r.f, t)) {
		slot, ok := r.pltSlot(t)
		if ok {
			return r.slot(slot, ViaPLT)
		}
	}
	return r.name(&Call{Addr: t}), nil
}

// pltSlot decodes the PLT stub at t and returns the slot it jumps
// through (isa.ISA.PLTSlot).
func (r *callResolver) pltSlot(t uint64) (uint64, bool) {
	code, err := r.f.ReadAt(elfx.Addr(t), 16)
	if err != nil {
		return 0, false
	}
	return isa.For(r.f.Arch).PLTSlot(code, t)
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
		t := isa.For(r.f.Arch).Relocs
		switch d.typ {
		case t.IRelative:
			// The loader stores what the resolver at the addend returns.
			c := r.name(&Call{Addr: uint64(d.addend)})
			return &Call{Name: c.Name, Off: c.Off, Via: ViaIfunc}, nil
		case t.GlobDat, t.JumpSlot, t.Abs64:
			if !d.sym.Defined() {
				// Bound at load to another module's definition.
				return &Call{Name: d.sym.Name, Via: via}, nil
			}
			v := uint64(d.sym.Value)
			if d.typ == t.Abs64 || t.SlotAddend {
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
	t := isa.For(r.f.Arch).Relocs
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
			if x.Type == t.Relative || x.Type == elfx.RelocNone {
				continue
			}
			d := dynReloc{typ: x.Type, addend: x.Addend}
			if x.Type != t.IRelative && s.Link != 0 {
				d.sym = syms[s.Link][x.Sym] // Relas checked the index
			}
			r.dyn[x.Off] = d
		}
	}
	return nil
}
