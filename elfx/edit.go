package elfx

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

// An Editor changes a relocatable object: it replaces section contents,
// appends sections, and inserts section symbols. Bytes produces the new
// file image; nothing is written until the caller writes it (see
// package outfile).
//
// The output keeps every byte of the input at its offset: a section whose
// new contents fit in its old place is rewritten there, a grown or new
// section and the new section header table are appended at the end. So a
// tool reading the old offsets of unchanged sections still finds them, and
// no section changes meaning unless the caller changed it.
type Editor struct {
	f    *File
	secs []*edSec
}

type edSec struct {
	hdr  Section
	data []byte // nil: the input's bytes, unchanged
	set  bool
}

// maxFilePad bounds the file-offset alignment of appended sections.
const maxFilePad = 4096

// ErrNotRelocatable: editing is only defined for ET_REL objects.
var ErrNotRelocatable = errors.New("not a relocatable object")

// Edit starts editing f, which must be ET_REL.
func (f *File) Edit() (*Editor, error) {
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("%w: file type %v", ErrNotRelocatable, f.Type)
	}
	e := &Editor{f: f, secs: make([]*edSec, len(f.Sections))}
	for i, s := range f.Sections {
		e.secs[i] = &edSec{hdr: *s}
	}
	return e, nil
}

// NumSections is the current number of sections, including added ones.
func (e *Editor) NumSections() int { return len(e.secs) }

// Header returns the current header of section i.
func (e *Editor) Header(i int) Section { return e.secs[i].hdr }

// Data returns the current contents of section i. They may alias the
// input: copy before changing, then SetData.
func (e *Editor) Data(i int) []byte {
	s := e.secs[i]
	if s.set {
		return s.data
	}
	if i >= len(e.f.Sections) {
		return nil
	}
	return e.f.SectionData(e.f.Sections[i])
}

// SetData replaces the contents of section i.
func (e *Editor) SetData(i int, data []byte) {
	s := e.secs[i]
	s.data, s.set = data, true
	s.hdr.Size = uint64(len(data))
}

// AddSection appends a section with header h (Name, Type, Flags, Link,
// Info, Align, Entsize are used) and contents data, and returns its index.
// The name is added to the section name table.
func (e *Editor) AddSection(h Section, data []byte) int {
	names := e.Data(e.f.Shstrndx)
	nb := make([]byte, 0, len(names)+len(h.Name)+1)
	nb = append(append(append(nb, names...), h.Name...), 0)
	h.nameOff = uint32(len(names))
	e.SetData(e.f.Shstrndx, nb)
	h.Index = len(e.secs)
	h.Size = uint64(len(data))
	e.secs = append(e.secs, &edSec{hdr: h, data: data, set: true})
	return h.Index
}

// AddToGroup appends members to the SHT_GROUP section group, so the
// linker keeps or discards them with the rest of the group.
func (e *Editor) AddToGroup(group int, members ...int) error {
	g := e.secs[group]
	if g.hdr.Type != elf.SHT_GROUP {
		return fmt.Errorf("section %d %q is not a group", group, g.hdr.Name)
	}
	d := append([]byte(nil), e.Data(group)...)
	for _, m := range members {
		d = binary.LittleEndian.AppendUint32(d, uint32(m))
	}
	e.SetData(group, d)
	return nil
}

// shtLLVMAddrsig is SHT_LLVM_ADDRSIG: clang's list of address-significant
// symbols, a ULEB128 sequence of symbol indices.
const shtLLVMAddrsig elf.SectionType = 0x6fff4c03

// AddSectionSymbols adds one local STT_SECTION symbol for each section
// index in secs and returns their symbol indices.
//
// Locals must precede globals in a symbol table, so the new symbols go
// just before the first global, and every reference to a later symbol is
// renumbered at once: relocation sections, group signatures, the extended
// section index table and clang's address-significance table. A section
// of another type that refers to the symbol table is an error, since its
// symbol indices could not be kept right.
func (e *Editor) AddSectionSymbols(secs []int) ([]uint32, error) {
	if len(secs) == 0 {
		return nil, nil
	}
	symIdx := -1
	for i, s := range e.secs {
		if s.hdr.Type == elf.SHT_SYMTAB {
			symIdx = i
			break
		}
	}
	if symIdx < 0 {
		return nil, fmt.Errorf("%w: no symbol table to add section symbols to", ErrNoSection)
	}
	st := e.secs[symIdx]
	first := st.hdr.Info // first non-local symbol
	k := uint32(len(secs))
	old := e.Data(symIdx)
	nsyms := uint32(len(old) / symSize)
	remap := func(i uint32) uint32 {
		if i >= first {
			return i + k
		}
		return i
	}

	// Check every section linked to the symbol table before changing any.
	shndxIdx := -1
	for i, s := range e.secs {
		if int(s.hdr.Link) != symIdx || i == symIdx {
			continue
		}
		switch s.hdr.Type {
		case elf.SHT_RELA, elf.SHT_GROUP, shtLLVMAddrsig:
		case elf.SHT_SYMTAB_SHNDX:
			shndxIdx = i
		default:
			return nil, fmt.Errorf("section %d %q (type %v) refers to the symbol table in a way ftpatch cannot renumber", i, s.hdr.Name, s.hdr.Type)
		}
	}

	nt := make([]byte, 0, len(old)+len(secs)*symSize)
	nt = append(nt, old[:first*symSize]...)
	needX := false
	for _, sec := range secs {
		var ent [symSize]byte
		ent[4] = byte(elf.STB_LOCAL)<<4 | byte(elf.STT_SECTION)
		if sec >= shnLoreserve {
			binary.LittleEndian.PutUint16(ent[6:], shnXindex)
			needX = true
		} else {
			binary.LittleEndian.PutUint16(ent[6:], uint16(sec))
		}
		nt = append(nt, ent[:]...)
	}
	nt = append(nt, old[first*symSize:]...)
	e.SetData(symIdx, nt)
	st.hdr.Info = first + k

	if needX && shndxIdx < 0 {
		shndxIdx = e.AddSection(Section{Name: ".symtab_shndx", Type: elf.SHT_SYMTAB_SHNDX, Link: uint32(symIdx), Align: 4, Entsize: 4}, make([]byte, nsyms*4))
	}
	if shndxIdx >= 0 {
		x := e.Data(shndxIdx)
		if len(x) != int(nsyms)*4 {
			return nil, fmt.Errorf("section %d %q: %d bytes for %d symbols", shndxIdx, e.secs[shndxIdx].hdr.Name, len(x), nsyms)
		}
		nx := make([]byte, 0, len(x)+len(secs)*4)
		nx = append(nx, x[:first*4]...)
		for _, sec := range secs {
			v := uint32(0)
			if sec >= shnLoreserve {
				v = uint32(sec)
			}
			nx = binary.LittleEndian.AppendUint32(nx, v)
		}
		e.SetData(shndxIdx, append(nx, x[first*4:]...))
	}

	for i, s := range e.secs {
		if int(s.hdr.Link) != symIdx || i == symIdx {
			continue
		}
		switch s.hdr.Type {
		case elf.SHT_RELA:
			d := append([]byte(nil), e.Data(i)...)
			for off := 0; off+relaSize <= len(d); off += relaSize {
				r := decodeRela(d[off:])
				r.Sym = remap(r.Sym)
				AppendRela(d[off:off], r) // in place
			}
			e.SetData(i, d)
		case elf.SHT_GROUP:
			s.hdr.Info = remap(s.hdr.Info)
		case shtLLVMAddrsig:
			d, err := remapULEB(e.Data(i), remap)
			if err != nil {
				return nil, fmt.Errorf("section %d %q: %w", i, s.hdr.Name, err)
			}
			e.SetData(i, d)
		}
	}
	out := make([]uint32, len(secs))
	for j := range out {
		out[j] = first + uint32(j)
	}
	return out, nil
}

func remapULEB(d []byte, remap func(uint32) uint32) ([]byte, error) {
	var out []byte
	for i := 0; i < len(d); {
		var v uint64
		var shift uint
		for {
			if i >= len(d) || shift > 63 {
				return nil, errors.New("truncated ULEB128 symbol index")
			}
			b := d[i]
			i++
			v |= uint64(b&0x7f) << shift
			shift += 7
			if b&0x80 == 0 {
				break
			}
		}
		if v > 0xffffffff {
			return nil, fmt.Errorf("symbol index %d out of range", v)
		}
		out = binary.AppendUvarint(out, uint64(remap(uint32(v))))
	}
	return out, nil
}

// Bytes lays out and returns the edited file as one slice.
func (e *Editor) Bytes() []byte { return Join(e.Chunks()) }

// Join concatenates chunks into one new slice.
func Join(chunks [][]byte) []byte {
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	out := make([]byte, 0, n)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out
}

// Chunks lays out the edited file and returns it as consecutive pieces:
// the ELF header, the rest of the input's bytes (aliasing File.Data when
// no section was rewritten in place, so a large unchanged prefix is never
// copied), then the appended sections (aliasing the data given to
// AddSection and SetData) with padding, and the section header table.
func (e *Editor) Chunks() [][]byte {
	f := e.f
	base := f.Data
	inPlace := func(i int, s *edSec) bool {
		if i >= len(f.Sections) || s.hdr.Type == elf.SHT_NOBITS {
			return false
		}
		orig := f.Sections[i]
		return orig.Type != elf.SHT_NOBITS && uint64(len(s.data)) <= orig.Size
	}
	for i, s := range e.secs {
		if s.set && inPlace(i, s) {
			if &base[0] == &f.Data[0] {
				base = append([]byte(nil), f.Data...)
			}
			copy(base[f.Sections[i].Off:], s.data)
			s.hdr.Off = f.Sections[i].Off
		}
	}
	// After the input come the appended sections, each its own chunk
	// (never copied), with padding between them, then the headers.
	var out [][]byte
	size := uint64(len(base))
	pad := func(align uint64) {
		if n := (align - size%align) % align; n > 0 {
			out = append(out, make([]byte, n))
			size += n
		}
	}
	for i, s := range e.secs {
		if !s.set || inPlace(i, s) || s.hdr.Type == elf.SHT_NOBITS {
			continue
		}
		// File offsets of an object's sections need no alignment beyond
		// convention (the linker copies the bytes), so the padding stops
		// at a page: an absurd sh_addralign cannot make the output huge.
		pad(min(max(s.hdr.Align, 1), maxFilePad))
		s.hdr.Off = Off(size)
		out = append(out, s.data)
		size += uint64(len(s.data))
	}
	pad(8)
	shoff := size
	n := len(e.secs)
	shdrs := make([]byte, 0, n*shdrSize)
	for i, s := range e.secs {
		var h [shdrSize]byte
		hd := s.hdr
		if i == 0 {
			// Section 0 carries the counts that do not fit the ELF header.
			hd = Section{}
			if n >= shnLoreserve {
				hd.Size = uint64(n)
			}
			if f.Shstrndx >= shnLoreserve {
				hd.Link = uint32(f.Shstrndx)
			}
		}
		le.PutUint32(h[0:], hd.nameOff)
		le.PutUint32(h[4:], uint32(hd.Type))
		le.PutUint64(h[8:], uint64(hd.Flags))
		le.PutUint64(h[16:], uint64(hd.Addr))
		le.PutUint64(h[24:], uint64(hd.Off))
		le.PutUint64(h[32:], hd.Size)
		le.PutUint32(h[40:], hd.Link)
		le.PutUint32(h[44:], hd.Info)
		le.PutUint64(h[48:], hd.Align)
		le.PutUint64(h[56:], hd.Entsize)
		shdrs = append(shdrs, h[:]...)
	}
	out = append(out, shdrs)
	// The ELF header lives in the first 64 bytes: copy them (only them)
	// to point at the new section header table.
	hdr := append([]byte(nil), base[:ehdrSize]...)
	le.PutUint64(hdr[40:], shoff)
	if n >= shnLoreserve {
		le.PutUint16(hdr[60:], 0)
	} else {
		le.PutUint16(hdr[60:], uint16(n))
	}
	if f.Shstrndx >= shnLoreserve {
		le.PutUint16(hdr[62:], shnXindex)
	} else {
		le.PutUint16(hdr[62:], uint16(f.Shstrndx))
	}
	return append([][]byte{hdr, base[ehdrSize:]}, out...)
}
