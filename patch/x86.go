package patch

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"ftpatch/elfx"
	"ftpatch/isa"
	"ftpatch/isa/x86"
)

// The x86-64 site shapes (see sites and runtime/src/x86_64/site.c):
//
//	e8 rel32         call rel32                        5
//	67 e8 rel32      addr32 call rel32                 6
//	ff 15 disp32     call *disp32(%rip), through a GOT slot   6
//	one NOP of 5 or 6 bytes
//	several NOPs over 5 bytes (gcc's -fpatchable-function-entry padding)
//
// A call is the compiler's (FormHook) when it reaches __fentry__ or
// mcount, directly or through a GOT slot the loader fills with one of
// them; ftpatch's (FormCall) when it reaches a trampoline directly.

// classify decodes what slot s holds now.
func (b *Binary) classify(s *Slot) error {
	code, err := b.File.ReadAt(elfx.Addr(s.Addr), uint64(s.Len))
	if err != nil {
		return fmt.Errorf("site 0x%x: %w", s.Addr, err)
	}
	// ftpatch's own NOPs, the commonest case in a patched file, known
	// without decoding (nops checks these encodings with x/arch).
	if bytes.Equal(code, x86.NOP5) || bytes.Equal(code, x86.NOP6) {
		s.Form = FormNop
		return nil
	}
	target, ok, err := b.callTarget(s.Addr, code)
	if err != nil {
		return err
	}
	switch {
	case ok:
		if h, isHook := b.hooks[target]; isHook {
			s.Form, s.Hook = FormHook, h
			return nil
		}
		for t := Caller5; t < numTramps; t++ {
			if b.tramps[t] == target {
				s.Form, s.Target = FormCall, t
				return nil
			}
		}
		if via, err := b.pltTarget(target); err != nil {
			return err
		} else if h, isHook := b.hooks[via]; isHook && via != 0 {
			// A shared object calls its own preemptible hook through
			// the PLT (clang: call __fentry__@PLT).
			s.Form, s.Hook = FormHook, h
			return nil
		}
		s.Form, b.details[s.Addr] = FormOther, fmt.Sprintf("a call to 0x%x, which is neither a hook nor a trampoline of the runtime", target)
		return nil
	default:
		s.Form = x86NopForm(code)
		if s.Form == FormOther {
			b.details[s.Addr] = fmt.Sprintf("% x, neither a call nor NOPs", code)
		}
	}
	return nil
}

// callTarget decodes a call site's target; ok is false for bytes that
// are not one of the call shapes.
func (b *Binary) callTarget(addr uint64, code []byte) (target uint64, ok bool, err error) {
	c, ok := x86.CallAt(code, addr)
	switch {
	case !ok || c.Len != len(code):
		return 0, false, nil
	case c.Form == x86.FormRIP:
		t, err := b.gotValue(c.Addr)
		return t, err == nil, err
	}
	return c.Addr, true, nil
}

// pltTarget reads the PLT entry at a, if a holds one, and returns what
// its GOT slot holds (gotValue); 0 for anything else. A PLT entry is an
// indirect jump through a GOT slot, optionally after endbr64 and with a
// bnd prefix (x86.PLTSlot).
func (b *Binary) pltTarget(a uint64) (uint64, error) {
	code, err := b.File.ReadAt(elfx.Addr(a), 11)
	if err != nil {
		return 0, nil // not in the file: not a PLT entry
	}
	slot, ok := x86.PLTSlot(code, a)
	if !ok {
		return 0, nil
	}
	return b.gotValue(slot)
}

// gotValue returns what the loader leaves in the GOT slot at a: for a
// slot a dynamic relocation fills with a hook (GLOB_DAT, JUMP_SLOT or 64
// against __fentry__ or mcount), the hook's address in this file, which
// is where the slot points unless another module interposes its own; the
// value of a RELATIVE relocation; or the word as linked.
func (b *Binary) gotValue(a uint64) (uint64, error) {
	if b.gotSyms == nil {
		dyn, err := b.File.DynRelocs()
		if err != nil {
			return 0, err
		}
		relocs := isa.For(b.File.Arch).Relocs
		b.gotSyms = map[uint64]string{}
		for off, d := range dyn {
			if relocs.IsSlot(d.Type) && d.SymIndex != 0 && d.Addend == 0 {
				b.gotSyms[off] = d.Sym.Name
			}
		}
	}
	if name, ok := b.gotSyms[a]; ok {
		for addr, h := range b.hooks {
			if h.String() == name {
				return addr, nil
			}
		}
		return 0, nil // another symbol: not ours
	}
	rel, err := b.relatives()
	if err != nil {
		return 0, err
	}
	if v, ok := rel.Lookup(elfx.Addr(a)); ok {
		return v, nil
	}
	w, err := b.File.ReadAt(elfx.Addr(a), 8)
	if err != nil {
		return 0, fmt.Errorf("GOT slot 0x%x: %w", a, err)
	}
	return binary.LittleEndian.Uint64(w), nil
}

// x86NopForm says whether code (a whole site) is one NOP, several, or
// neither, by decoding it with x/arch.
func x86NopForm(code []byte) Form {
	switch n, err := x86.CountNops(code, len(code)); {
	case err != nil:
		return FormOther
	case n == 1:
		return FormNop
	}
	return FormNops
}

// deadLen finds the length of the site at a that lies outside every
// function: the call it holds (5 or 6 bytes), one NOP of 5 or 6, or 5
// bytes of NOPs.
func (b *Binary) deadLen(a uint64) (int, error) {
	code, err := b.File.ReadAt(elfx.Addr(a), 6)
	if err != nil {
		if code, err = b.File.ReadAt(elfx.Addr(a), 5); err != nil {
			return 0, fmt.Errorf("dead site 0x%x: %w", a, err)
		}
	}
	if c, ok := x86.CallAt(code, a); ok {
		return c.Len, nil
	}
	if in, err := x86.Decode(code); err == nil && x86.IsNopInsn(in) && (in.Len == 5 || in.Len == 6) {
		return in.Len, nil
	}
	if x86NopForm(code[:5]) != FormOther {
		return 5, nil
	}
	return 0, &SiteError{Addr: a, Msg: fmt.Sprintf("table entry outside every function holds % x, neither a call nor NOPs", code)}
}

// x86Want returns the bytes a slot of length n becomes: a call from addr
// to target, or (target 0) the P6 NOP of its length.
func x86Want(addr uint64, n uint8, target uint64) ([]byte, error) {
	switch {
	case target == 0 && (n == 5 || n == 6):
		return x86.SiteNop(int(n))
	case n == 5:
		return x86.Call(addr, target)
	case n == 6:
		// One 6-byte call, so the return address is site+6 in every
		// state of the site (see x86.Call6).
		return x86.Call6(addr, target)
	}
	return nil, fmt.Errorf("site 0x%x: %d bytes, want 5 or 6", addr, n)
}
