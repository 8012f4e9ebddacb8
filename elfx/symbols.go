package elfx

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// A Symbol is one entry of a symbol table.
type Symbol struct {
	Index int    // index in its table
	Name  string // resolved through the table's string table
	Value Addr   // in ET_REL: offset within section Shndx
	Size  uint64 // bytes
	Info  byte
	Other byte
	// Shndx is the section the symbol is defined in, with SHN_XINDEX
	// already resolved through SHT_SYMTAB_SHNDX; or a special index
	// (SHN_UNDEF, SHN_ABS, SHN_COMMON).
	Shndx uint32
}

// Bind is the symbol's binding (local, global, weak).
func (s *Symbol) Bind() elf.SymBind { return elf.ST_BIND(s.Info) }

// Type is the symbol's type (function, object, section...).
func (s *Symbol) Type() elf.SymType { return elf.ST_TYPE(s.Info) }

// Defined reports whether the symbol is defined in a section of the file
// (not undefined, absolute or common).
func (s *Symbol) Defined() bool {
	return s.Shndx != uint32(elf.SHN_UNDEF) && s.Shndx < shnLoreserve
}

type symtabCache struct {
	sec  *Section
	syms []Symbol
	err  error
}

// Symtab returns the SHT_SYMTAB section and its symbols (index 0 is the
// null symbol), or ErrNoSection when the file has none (stripped). The
// result is parsed once and shared: callers must not modify it.
func (f *File) Symtab() (*Section, []Symbol, error) {
	if f.symtab == nil {
		c := &symtabCache{}
		for _, s := range f.Sections {
			if s.Type == elf.SHT_SYMTAB {
				c.sec = s
				break
			}
		}
		if c.sec == nil {
			c.err = fmt.Errorf("%w: no symbol table (stripped?)", ErrNoSection)
		} else {
			c.syms, c.err = f.Symbols(c.sec)
		}
		f.symtab = c
	}
	return f.symtab.sec, f.symtab.syms, f.symtab.err
}

// Symbols parses the symbol table section s (SHT_SYMTAB or SHT_DYNSYM).
func (f *File) Symbols(s *Section) ([]Symbol, error) {
	if s.Type != elf.SHT_SYMTAB && s.Type != elf.SHT_DYNSYM {
		return nil, f.secErr(s, "not a symbol table")
	}
	data := f.SectionData(s)
	strs := f.SectionData(f.Sections[s.Link])
	var shndx []byte
	for _, x := range f.Sections {
		if x.Type == elf.SHT_SYMTAB_SHNDX && int(x.Link) == s.Index {
			shndx = f.SectionData(x)
		}
	}
	n := len(data) / symSize
	syms := make([]Symbol, n)
	// One string for the whole table, sliced per name: one allocation
	// instead of one per symbol (objects here hold 100k symbols).
	allStrs := string(strs)
	for i := range syms {
		e := data[i*symSize : (i+1)*symSize]
		nameOff := le.Uint32(e[0:])
		sym := Symbol{
			Index: i, Info: e[4], Other: e[5], Shndx: uint32(le.Uint16(e[6:])),
			Value: Addr(le.Uint64(e[8:])), Size: le.Uint64(e[16:]),
		}
		if nameOff != 0 {
			end := -1
			if uint64(nameOff) < uint64(len(strs)) {
				if j := bytes.IndexByte(strs[nameOff:], 0); j >= 0 {
					end = int(nameOff) + j
				}
			}
			if end < 0 {
				return nil, formatErr(s.Off+Off(i*symSize), "%s: symbol %d: name offset %d is outside the %d-byte string table", s, i, nameOff, len(strs))
			}
			sym.Name = allStrs[nameOff:end]
		}
		if sym.Shndx == shnXindex {
			if (i+1)*4 > len(shndx) {
				return nil, formatErr(s.Off+Off(i*symSize), "%s: symbol %d: SHN_XINDEX without an extended index entry", s, i)
			}
			sym.Shndx = le.Uint32(shndx[i*4:])
		}
		if sym.Defined() && int(sym.Shndx) >= len(f.Sections) {
			return nil, formatErr(s.Off+Off(i*symSize), "%s: symbol %d %q: section index %d out of range (%d sections)", s, i, sym.Name, sym.Shndx, len(f.Sections))
		}
		syms[i] = sym
	}
	return syms, nil
}

// A Rela is one SHT_RELA relocation.
type Rela struct {
	Off    uint64 // in ET_REL: offset within the target section; otherwise a virtual address
	Sym    uint32 // symbol index in the linked symbol table
	Type   uint32 // machine-specific relocation type
	Addend int64
}

// RelaSize is the size of an ELF64 relocation entry with addend
// (Elf64_Rela), the only kind elfx reads and writes.
const RelaSize = relaSize

// AppendRela appends r to b as one Elf64_Rela, little-endian: r_offset,
// r_info (symbol index in the high 32 bits, type in the low 32) and
// r_addend. It is the one place a relocation entry is encoded; to
// rewrite entry i of a section's data d in place, append to d[i*RelaSize:][:0].
func AppendRela(b []byte, r Rela) []byte {
	b = le.AppendUint64(b, r.Off)
	b = le.AppendUint64(b, uint64(r.Sym)<<32|uint64(r.Type))
	return le.AppendUint64(b, uint64(r.Addend))
}

// decodeRela reads the Elf64_Rela at the start of e, which holds at
// least RelaSize bytes: the inverse of AppendRela.
func decodeRela(e []byte) Rela {
	info := le.Uint64(e[8:])
	return Rela{Off: le.Uint64(e[0:]), Sym: uint32(info >> 32), Type: uint32(info), Addend: int64(le.Uint64(e[16:]))}
}

// Relas parses the relocation section s. In ET_REL files every symbol
// index is checked against the linked symbol table.
func (f *File) Relas(s *Section) ([]Rela, error) {
	if s.Type != elf.SHT_RELA {
		return nil, f.secErr(s, "not a SHT_RELA section")
	}
	data := f.SectionData(s)
	nsyms := uint64(0)
	if s.Link != 0 {
		nsyms = f.Sections[s.Link].Size / symSize
	}
	out := make([]Rela, len(data)/relaSize)
	for i := range out {
		r := decodeRela(data[i*relaSize:])
		if s.Link != 0 && uint64(r.Sym) >= nsyms {
			return nil, formatErr(s.Off+Off(i*relaSize), "%s: relocation %d: symbol index %d out of range (%d symbols)", s, i, r.Sym, nsyms)
		}
		out[i] = r
	}
	return out, nil
}

// RelocTypeString names a relocation type of the file's machine.
func (f *File) RelocTypeString(t uint32) string {
	return RelocTypeName(f.Arch, t)
}

// A RelaTable is a checked view of a SHT_RELA section: entries are
// decoded when read, so a scan over 100k relocations allocates nothing.
type RelaTable struct {
	data []byte
}

// RelaTable checks the relocation section s as Relas does and returns a
// view of its entries.
func (f *File) RelaTable(s *Section) (RelaTable, error) {
	if s.Type != elf.SHT_RELA {
		return RelaTable{}, f.secErr(s, "not a SHT_RELA section")
	}
	data := f.SectionData(s)
	if s.Link != 0 {
		nsyms := f.Sections[s.Link].Size / symSize
		for i := 0; i+relaSize <= len(data); i += relaSize {
			if sym := uint64(le.Uint32(data[i+12:])); sym >= nsyms {
				return RelaTable{}, formatErr(s.Off+Off(i), "%s: relocation %d: symbol index %d out of range (%d symbols)", s, i/relaSize, sym, nsyms)
			}
		}
	}
	return RelaTable{data: data}, nil
}

// Len is the number of entries.
func (t RelaTable) Len() int { return len(t.data) / relaSize }

// Sym is the symbol index of entry i, which must be in [0, Len()).
func (t RelaTable) Sym(i int) uint32 { return le.Uint32(t.data[i*relaSize+12:]) }

// At decodes entry i, which must be in [0, Len()).
func (t RelaTable) At(i int) Rela {
	return decodeRela(t.data[i*relaSize : (i+1)*relaSize])
}
