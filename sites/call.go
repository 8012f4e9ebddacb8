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
	dyn   map[uint64]elfx.DynReloc // symbolic dynamic relocations by the address they fill; built on first use
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
// through the stub's slot; when a veneer, to where the veneer leads.
func (r *callResolver) direct(t uint64) (*Call, error) {
	if isa.IsPLT(sectionOf(r.f, t)) {
		slot, ok := r.pltSlot(t)
		if ok {
			return r.slot(slot, ViaPLT)
		}
	}
	if veneer := isa.For(r.f.Arch).Veneer; veneer != nil {
		if code, err := r.f.ReadAt(elfx.Addr(t), 16); err == nil {
			if to, ok := veneer(code, t); ok {
				return r.name(&Call{Addr: to, Via: ViaVeneer}), nil
			}
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
		switch d.Type {
		case t.IRelative:
			// The loader stores what the resolver at the addend returns.
			c := r.name(&Call{Addr: uint64(d.Addend)})
			return &Call{Name: c.Name, Off: c.Off, Via: ViaIfunc}, nil
		case t.GlobDat, t.JumpSlot, t.Abs64:
			if !d.Sym.Defined() {
				// Bound at load to another module's definition.
				return &Call{Name: d.Sym.Name, Via: via}, nil
			}
			v := uint64(d.Sym.Value)
			if d.Type == t.Abs64 || t.SlotAddend {
				v += uint64(d.Addend)
			}
			c := r.name(&Call{Addr: v, Via: via})
			if c.Name == "" {
				c.Name = d.Sym.Name
			}
			return c, nil
		}
		return nil, fmt.Errorf("pointer slot 0x%x: filled by a %s relocation, not a pointer one", s, elfx.RelocTypeName(r.f.Arch, d.Type))
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

// loadDyn collects the symbolic dynamic relocations (elfx.DynRelocs).
func (r *callResolver) loadDyn() error {
	if r.dyn != nil {
		return nil
	}
	dyn, err := r.f.DynRelocs()
	if err != nil {
		return err
	}
	r.dyn = dyn
	return nil
}
