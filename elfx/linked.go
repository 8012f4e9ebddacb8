package elfx

import (
	"debug/elf"
	"fmt"
	"slices"
	"sort"
	"strings"

	"ftpatch/arch"
	"ftpatch/isa"
)

// RelocTypeName names relocation type t of architecture a.
func RelocTypeName(a arch.Arch, t uint32) string { return isa.For(a).Relocs.Name(t) }

// Abs64 is the relocation type that stores a symbol's 64-bit absolute
// address (R_X86_64_64, R_AARCH64_ABS64).
func Abs64(a arch.Arch) uint32 { return isa.For(a).Relocs.Abs64 }

// RelocNone is R_X86_64_NONE / R_AARCH64_NONE: a relocation the linker
// ignores.
const RelocNone uint32 = 0

// AddrToOff maps a virtual address of a linked file to its file offset
// through the PT_LOAD segments. Addresses in the zero-filled tail of a
// segment (bss) or outside every segment are errors.
func (f *File) AddrToOff(a Addr, size uint64) (Off, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || a < p.Vaddr || uint64(a-p.Vaddr) >= p.Filesz {
			continue
		}
		rel := uint64(a - p.Vaddr)
		if size > p.Filesz-rel {
			return 0, fmt.Errorf("address 0x%x+%d crosses the end of the file-backed part of its segment", uint64(a), size)
		}
		off := p.Off + Off(rel)
		if !f.inFile(off, size) {
			return 0, formatErr(off, "address 0x%x maps past the end of the file", uint64(a))
		}
		return off, nil
	}
	return 0, fmt.Errorf("address 0x%x is not in any loaded segment's file contents", uint64(a))
}

// ReadAt returns size bytes at virtual address a of a linked file (aliasing
// File.Data).
func (f *File) ReadAt(a Addr, size uint64) ([]byte, error) {
	off, err := f.AddrToOff(a, size)
	if err != nil {
		return nil, err
	}
	return f.Data[off : uint64(off)+size : uint64(off)+size], nil
}

// Relatives holds what the dynamic loader writes at load time into the
// words of a position-independent file: for each relocated address, the
// value before the load bias is added.
type Relatives struct {
	addrs []Addr // sorted
	vals  []uint64
}

// A DynReloc is a dynamic relocation that fills a word with a symbol's
// address (R_*_GLOB_DAT, R_*_JUMP_SLOT, R_*_64 and the like) or an
// ifunc's result (R_*_IRELATIVE): what the loader puts in a pointer slot
// unless a RELATIVE relocation (Relatives) or the file's word does.
type DynReloc struct {
	Type   uint32
	Addend int64
	// SymIndex is the relocation's symbol index, 0 when its section
	// links no symbol table; Sym is that symbol (zero for IRELATIVE,
	// whose addend is the resolver's address).
	SymIndex uint32
	Sym      Symbol
}

// LibCall reports whether the relocation d of f fills a slot the file
// calls a shared object's function through: a JUMP_SLOT (the PLT's), or
// a GLOB_DAT of a function (-fno-plt's call through the GOT), of a
// symbol the file does not define. These are the slots the runtime's
// library-call hooks redirect (its patch/libcall.c applies the same rule
// to the loaded module), and a trace names a library call by its slot's
// address. A GLOB_DAT of an object (stdout, environ) is data, never one.
func (f *File) LibCall(d *DynReloc) bool {
	r := isa.For(f.Arch).Relocs
	if d.Sym.Name == "" || d.Sym.Shndx != uint32(elf.SHN_UNDEF) {
		return false
	}
	t := d.Sym.Type()
	return d.Type == r.JumpSlot || (d.Type == r.GlobDat && (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC))
}

// LibCallNames are the names of the functions the file calls in other
// modules through its GOT slots (LibCall: what the runtime's library-call
// hooks redirect), each once, sorted; those whose names hold a glob's or
// a function list's punctuation are left out (a list could not name
// them alone).
func (f *File) LibCallNames() ([]string, error) {
	relocs, err := f.DynRelocs()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, d := range relocs {
		if !f.LibCall(&d) || seen[d.Sym.Name] || strings.ContainsAny(d.Sym.Name, "*?[]\\,!") {
			continue
		}
		seen[d.Sym.Name] = true
		names = append(names, d.Sym.Name)
	}
	slices.Sort(names)
	return names, nil
}

// DynRelocs collects the symbolic dynamic relocations of every SHF_ALLOC
// SHT_RELA section (all but RELATIVE, which Relatives has, and NONE), by
// the address they fill; of two for one address, the later counts.
func (f *File) DynRelocs() (map[uint64]DynReloc, error) {
	t := isa.For(f.Arch).Relocs
	out := map[uint64]DynReloc{}
	syms := map[uint32][]Symbol{}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		rs, err := f.Relas(s)
		if err != nil {
			return nil, err
		}
		if _, ok := syms[s.Link]; !ok && s.Link != 0 {
			ss, err := f.Symbols(f.Sections[s.Link])
			if err != nil {
				return nil, err
			}
			syms[s.Link] = ss
		}
		for _, x := range rs {
			if x.Type == t.Relative || x.Type == RelocNone {
				continue
			}
			d := DynReloc{Type: x.Type, Addend: x.Addend}
			if s.Link != 0 {
				d.SymIndex = x.Sym
				if x.Type != t.IRelative {
					d.Sym = syms[s.Link][x.Sym] // Relas checked the index
				}
			}
			out[x.Off] = d
		}
	}
	return out, nil
}

// Relatives collects the R_*_RELATIVE relocations of every SHF_ALLOC
// SHT_RELA section and the packed SHT_RELR ones (lld's and GNU ld's
// -z pack-relative-relocs), so a table of addresses in a PIE can be read
// as the loader would see it with a zero bias.
func (f *File) Relatives() (*Relatives, error) {
	type pair struct {
		a Addr
		v uint64
	}
	var all []pair
	rel := isa.For(f.Arch).Relocs.Relative
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		switch s.Type {
		case elf.SHT_RELA:
			rs, err := f.Relas(s)
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				if r.Type == rel {
					all = append(all, pair{Addr(r.Off), uint64(r.Addend)})
				}
			}
		case shtRELR:
			// Each even word is an address whose word is relocated; each
			// odd word is a bitmap of the 63 words after the last address
			// (see the generic ABI's DT_RELR). The value relocated is the
			// word already stored in the file (an implicit addend).
			data := f.SectionData(s)
			if len(data)%8 != 0 {
				return nil, f.secErr(s, "size %d is not a multiple of 8", len(data))
			}
			var base Addr
			var addrs []Addr
			for i := 0; i < len(data); i += 8 {
				w := le.Uint64(data[i:])
				if w&1 == 0 {
					addrs = append(addrs, Addr(w))
					base = Addr(w) + 8
					continue
				}
				for bit := 0; bit < 63; bit++ {
					if w>>(bit+1)&1 != 0 {
						addrs = append(addrs, base+Addr(bit*8))
					}
				}
				base += 63 * 8
			}
			for _, a := range addrs {
				b, err := f.ReadAt(a, 8)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", s, err)
				}
				all = append(all, pair{a, le.Uint64(b)})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].a < all[j].a })
	r := &Relatives{addrs: make([]Addr, len(all)), vals: make([]uint64, len(all))}
	for i, p := range all {
		r.addrs[i], r.vals[i] = p.a, p.v
	}
	return r, nil
}

// Lookup returns the value the loader stores at a (before the bias), if a
// RELATIVE relocation covers it.
func (r *Relatives) Lookup(a Addr) (uint64, bool) {
	i := sort.Search(len(r.addrs), func(i int) bool { return r.addrs[i] >= a })
	if i < len(r.addrs) && r.addrs[i] == a {
		return r.vals[i], true
	}
	return 0, false
}

// Len is the number of RELATIVE relocations.
func (r *Relatives) Len() int { return len(r.addrs) }

// Words reads the section s of a linked file as 64-bit words, each resolved
// as the loader would leave it with a zero load bias: where a RELATIVE
// relocation covers a word, its value comes from the relocation.
func (f *File) Words(s *Section, rel *Relatives) ([]uint64, error) {
	if s.Size%8 != 0 {
		return nil, f.secErr(s, "size %d is not a multiple of 8", s.Size)
	}
	data := f.SectionData(s)
	out := make([]uint64, len(data)/8)
	for i := range out {
		out[i] = le.Uint64(data[i*8:])
		if rel != nil {
			if v, ok := rel.Lookup(s.Addr + Addr(i*8)); ok {
				out[i] = v
			}
		}
	}
	return out, nil
}

// shtRELR is SHT_RELR (19), the packed relative relocation section type,
// which debug/elf does not name.
const shtRELR elf.SectionType = 19
