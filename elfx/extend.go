package elfx

import (
	"debug/elf"
	"errors"
	"fmt"
	"slices"
)

// An Extension adds to a linked file (ET_EXEC or ET_DYN) one loadable
// segment holding new sections, replaces bytes of its loaded contents,
// and adds local function symbols; Bytes lays the new file out. The
// input's bytes are never changed: the output is a new slice.
//
// The layout: everything up to the end of the last loaded segment's
// contents stays at its offset; the new segment follows at an offset
// that keeps it, like the first segment, at its address minus the same
// delta, and at the first page-aligned address past every segment's
// end (bss included); it starts with the program header table, moved
// there and grown by the new segment's entry (the table at the file's
// start has no room to grow: the first section follows it). The
// sections that are not loaded (.symtab, .strtab, debug info,
// .shstrtab) are copied after it, then the section header table.
//
// The program header table is kept in the new segment, and PT_PHDR
// points there, because the loader computes the load bias from where it
// finds the table (AT_PHDR) and where PT_PHDR says it is; keeping the
// segment's offset and address the same distance apart as the first
// segment's makes both of the kernel's ways of computing AT_PHDR agree.
type Extension struct {
	f       *File
	flags   elf.ProgFlag
	base    Addr // the new segment's address
	off     Off  // its offset in the output
	page    uint64
	size    uint64 // bytes of the segment placed so far
	secs    []extSec
	syms    []extSym
	patches []extPatch
}

type extSec struct {
	name  string
	typ   elf.SectionType
	flags elf.SectionFlag
	addr  Addr
	off   uint64 // from the segment's start
	align uint64
	data  []byte
}

type extSym struct {
	name string
	sec  string // the new section it is defined in
	addr Addr
	size uint64
}

type extPatch struct {
	off Off
	b   []byte
}

// ErrNoRoom: the file cannot take a new segment (no loadable segment,
// section numbering extended past 0xff00, relocations against its
// symbol table).
var ErrNoRoom = errors.New("cannot add a segment to this file")

// Extend starts an extension of f with one segment of the given flags.
func (f *File) Extend(flags elf.ProgFlag) (*Extension, error) {
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, fmt.Errorf("%w: not a linked executable or shared object", ErrNoRoom)
	}
	if len(f.Sections) == 0 || len(f.Sections) >= shnLoreserve-1 {
		return nil, fmt.Errorf("%w: %d sections (none, or extended numbering)", ErrNoRoom, len(f.Sections))
	}
	var first *Prog
	var maxV, loadedEnd uint64
	page := uint64(0x1000)
	for i := range f.Progs {
		p := &f.Progs[i]
		if p.Type != elf.PT_LOAD {
			continue
		}
		if first == nil || p.Vaddr < first.Vaddr {
			first = p
		}
		maxV = max(maxV, uint64(p.Vaddr)+p.Memsz)
		loadedEnd = max(loadedEnd, uint64(p.Off)+p.Filesz)
		page = max(page, p.Align)
	}
	if first == nil {
		return nil, fmt.Errorf("%w: no loadable segment", ErrNoRoom)
	}
	if uint64(first.Vaddr) < uint64(first.Off) {
		return nil, fmt.Errorf("%w: its first segment's address 0x%x is below its offset 0x%x", ErrNoRoom, uint64(first.Vaddr), uint64(first.Off))
	}
	// A section that is not loaded but lies among the loaded contents
	// stays where it is; only what follows them moves.
	for _, s := range f.Sections[1:] {
		if s.Flags&elf.SHF_ALLOC == 0 && s.Type != elf.SHT_NOBITS && uint64(s.Off) < loadedEnd && uint64(s.Off)+s.Size > loadedEnd {
			return nil, fmt.Errorf("%w: %s straddles the end of the loaded contents", ErrNoRoom, s)
		}
	}
	delta := uint64(first.Vaddr) - uint64(first.Off)
	v := alignUp(max(maxV, loadedEnd+delta), page)
	x := &Extension{f: f, flags: flags, base: Addr(v), off: Off(v - delta), page: page}
	x.size = uint64(len(f.Progs)+1) * phdrSize
	return x, nil
}

func alignUp(v, a uint64) uint64 {
	if a <= 1 {
		return v
	}
	return (v + a - 1) &^ (a - 1)
}

// Base is the new segment's address.
func (x *Extension) Base() Addr { return x.base }

// Next is the address the next section added with alignment align
// will have.
func (x *Extension) Next(align uint64) Addr { return x.base + Addr(alignUp(x.size, max(align, 1))) }

// Size is the new segment's size so far.
func (x *Extension) Size() uint64 { return x.size }

// AddSection places a section of size bytes in the new segment, aligned
// to align, and returns its address; SetData fills it.
func (x *Extension) AddSection(name string, typ elf.SectionType, flags elf.SectionFlag, align, size uint64) Addr {
	x.size = alignUp(x.size, max(align, 1))
	s := extSec{name: name, typ: typ, flags: flags | elf.SHF_ALLOC, addr: x.base + Addr(x.size), off: x.size, align: max(align, 1), data: make([]byte, size)}
	x.size += size
	x.secs = append(x.secs, s)
	return s.addr
}

// SetData fills the new section name with data, which must be the size
// it was added with.
func (x *Extension) SetData(name string, data []byte) error {
	for i := range x.secs {
		if x.secs[i].name == name {
			if len(data) != len(x.secs[i].data) {
				return fmt.Errorf("section %q: %d bytes, placed with %d", name, len(data), len(x.secs[i].data))
			}
			x.secs[i].data = data
			return nil
		}
	}
	return fmt.Errorf("no new section %q", name)
}

// Patch replaces the bytes at address a of the file's loaded contents
// with b.
func (x *Extension) Patch(a Addr, b []byte) error {
	off, err := x.f.AddrToOff(a, uint64(len(b)))
	if err != nil {
		return err
	}
	x.patches = append(x.patches, extPatch{off, slices.Clone(b)})
	return nil
}

// AddFunc adds a local function symbol name at address a, of size
// bytes, in the new section sec.
func (x *Extension) AddFunc(name, sec string, a Addr, size uint64) {
	x.syms = append(x.syms, extSym{name, sec, a, size})
}

// Bytes lays out and returns the extended file.
func (x *Extension) Bytes() ([]byte, error) {
	f := x.f
	symtab, strtab := -1, -1
	for _, s := range f.Sections {
		switch {
		case s.Type == elf.SHT_SYMTAB:
			symtab, strtab = s.Index, int(s.Link)
		case s.Type == elf.SHT_SYMTAB_SHNDX && len(x.syms) > 0:
			return nil, fmt.Errorf("%w: its symbol table has extended section indices", ErrNoRoom)
		}
	}
	if len(x.syms) > 0 && symtab >= 0 {
		for _, s := range f.Sections {
			if s.Type != elf.SHT_RELA || int(s.Link) != symtab {
				continue
			}
			// A static program's .rela.plt links the symbol table but
			// names no symbol (IRELATIVE); --emit-relocs' sections name
			// globals, whose indices the new locals would shift.
			rt, err := f.RelaTable(s)
			if err != nil {
				return nil, err
			}
			for i := range rt.Len() {
				if rt.Sym(i) >= f.Sections[symtab].Info {
					return nil, fmt.Errorf("%w: %s relocates against its symbol table's globals (linked with --emit-relocs), whose indices new symbols would shift", ErrNoRoom, s)
				}
			}
		}
	}
	shoff := func(i int) []byte { o := f.shdrOff(i); return f.Data[o : o+shdrSize] }
	// Section headers, old then new, as raw entries.
	nOld := len(f.Sections)
	hdrs := make([][]byte, 0, nOld+len(x.secs)+3)
	for i := range f.Sections {
		hdrs = append(hdrs, slices.Clone(shoff(i)))
	}
	shstr := f.Sections[f.Shstrndx]
	names := slices.Clone(f.SectionData(shstr))
	addName := func(n string) uint32 {
		o := uint32(len(names))
		names = append(append(names, n...), 0)
		return o
	}
	secIndex := map[string]int{}
	for _, s := range x.secs {
		h := make([]byte, shdrSize)
		le.PutUint32(h[0:], addName(s.name))
		le.PutUint32(h[4:], uint32(s.typ))
		le.PutUint64(h[8:], uint64(s.flags))
		le.PutUint64(h[16:], uint64(s.addr))
		le.PutUint64(h[24:], uint64(x.off)+s.off)
		le.PutUint64(h[32:], uint64(len(s.data)))
		le.PutUint64(h[48:], s.align)
		secIndex[s.name] = len(hdrs)
		hdrs = append(hdrs, h)
	}
	// The symbol table, with the new locals after the old ones.
	var symData, strData []byte
	if len(x.syms) > 0 {
		var old []byte
		info := uint32(1)
		if symtab >= 0 {
			old = f.SectionData(f.Sections[symtab])
			strData = slices.Clone(f.SectionData(f.Sections[strtab]))
			info = f.Sections[symtab].Info
		} else {
			old = make([]byte, symSize)
			strData = []byte{0}
			strtab = len(hdrs) + 1
			symtab = len(hdrs)
			h := make([]byte, shdrSize)
			le.PutUint32(h[0:], addName(".symtab"))
			le.PutUint32(h[4:], uint32(elf.SHT_SYMTAB))
			le.PutUint32(h[40:], uint32(strtab))
			le.PutUint64(h[48:], 8)
			le.PutUint64(h[56:], symSize)
			hdrs = append(hdrs, h)
			h = make([]byte, shdrSize)
			le.PutUint32(h[0:], addName(".strtab"))
			le.PutUint32(h[4:], uint32(elf.SHT_STRTAB))
			le.PutUint64(h[48:], 1)
			hdrs = append(hdrs, h)
		}
		if uint64(info)*symSize > uint64(len(old)) {
			return nil, fmt.Errorf("%w: its symbol table's first global %d is past its end", ErrNoRoom, info)
		}
		symData = append(symData, old[:info*symSize]...)
		for _, s := range x.syms {
			idx, ok := secIndex[s.sec]
			if !ok {
				return nil, fmt.Errorf("symbol %q: no new section %q", s.name, s.sec)
			}
			e := make([]byte, symSize)
			le.PutUint32(e[0:], uint32(len(strData)))
			strData = append(append(strData, s.name...), 0)
			e[4] = byte(elf.ST_INFO(elf.STB_LOCAL, elf.STT_FUNC))
			le.PutUint16(e[6:], uint16(idx))
			le.PutUint64(e[8:], uint64(s.addr))
			le.PutUint64(e[16:], s.size)
			symData = append(symData, e...)
		}
		symData = append(symData, old[info*symSize:]...)
		le.PutUint32(hdrs[symtab][44:], info+uint32(len(x.syms)))
	}

	// The loaded contents, patched.
	var loadedEnd uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loadedEnd = max(loadedEnd, uint64(p.Off)+p.Filesz)
		}
	}
	out := make([]byte, uint64(x.off), uint64(x.off)+x.size+uint64(len(f.Data))-loadedEnd+uint64(len(names)+len(symData)+len(strData))+uint64(len(hdrs))*shdrSize+64)
	copy(out, f.Data[:min(loadedEnd, uint64(len(f.Data)))])
	for _, p := range x.patches {
		copy(out[p.off:], p.b)
	}
	// The segment: the program header table, then the new sections.
	seg := make([]byte, x.size)
	ph := seg[:0]
	phOff := le.Uint64(f.Data[32:])
	inserted := false
	newLoad := make([]byte, phdrSize)
	le.PutUint32(newLoad[0:], uint32(elf.PT_LOAD))
	le.PutUint32(newLoad[4:], uint32(x.flags))
	le.PutUint64(newLoad[8:], uint64(x.off))
	le.PutUint64(newLoad[16:], uint64(x.base))
	le.PutUint64(newLoad[24:], uint64(x.base))
	le.PutUint64(newLoad[32:], x.size)
	le.PutUint64(newLoad[40:], x.size)
	le.PutUint64(newLoad[48:], x.page)
	lastLoad := -1
	for i, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			lastLoad = i
		}
	}
	phSize := uint64(len(f.Progs)+1) * phdrSize
	for i, p := range f.Progs {
		e := slices.Clone(f.Data[phOff+uint64(i)*phdrSize : phOff+uint64(i+1)*phdrSize])
		if p.Type == elf.PT_PHDR {
			le.PutUint64(e[8:], uint64(x.off))
			le.PutUint64(e[16:], uint64(x.base))
			le.PutUint64(e[24:], uint64(x.base))
			le.PutUint64(e[32:], phSize)
			le.PutUint64(e[40:], phSize)
		}
		ph = append(ph, e...)
		if i == lastLoad {
			ph = append(ph, newLoad...)
			inserted = true
		}
	}
	if !inserted {
		return nil, fmt.Errorf("%w: no loadable segment", ErrNoRoom)
	}
	for _, s := range x.secs {
		copy(seg[s.off:], s.data)
	}
	out = append(out, seg...)

	// What is not loaded, after the segment: the old sections that
	// followed the loaded contents (at new offsets), the new symbol and
	// string tables, the section names, the section header table.
	place := func(i int, data []byte, align uint64) {
		o := alignUp(uint64(len(out)), max(align, 1))
		out = append(out, make([]byte, o-uint64(len(out)))...)
		out = append(out, data...)
		le.PutUint64(hdrs[i][24:], o)
		le.PutUint64(hdrs[i][32:], uint64(len(data)))
	}
	for _, s := range f.Sections[1:] {
		if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_ALLOC != 0 || uint64(s.Off) < loadedEnd {
			continue
		}
		switch {
		case s.Index == f.Shstrndx:
		case len(x.syms) > 0 && s.Index == symtab:
		case len(x.syms) > 0 && s.Index == strtab:
		default:
			place(s.Index, f.SectionData(s), s.Align)
		}
	}
	if len(x.syms) > 0 {
		place(symtab, symData, 8)
		place(strtab, strData, 1)
	}
	place(f.Shstrndx, names, 1)
	shdrAt := alignUp(uint64(len(out)), 8)
	out = append(out, make([]byte, shdrAt-uint64(len(out)))...)
	for _, h := range hdrs {
		out = append(out, h...)
	}
	le.PutUint64(out[32:], uint64(x.off))
	le.PutUint64(out[40:], shdrAt)
	le.PutUint16(out[56:], uint16(len(f.Progs)+1))
	le.PutUint16(out[60:], uint16(len(hdrs)))
	return out, nil
}
