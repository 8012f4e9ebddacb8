// Package elfx reads and writes the ELF64 little-endian files ftpatch
// works on: relocatable objects (ET_REL) that recordmcount extends with a
// site table, and linked executables and shared objects (ET_EXEC, ET_DYN)
// whose sites are read and patched.
//
// It goes beyond debug/elf in three ways that the tools need: every read is
// bounded and every malformed input becomes a *FormatError that names the
// place (debug/elf can panic on hostile files); it writes (see Editor); and
// it resolves what a dynamic loader would (R_*_RELATIVE and RELR) so a PIE's
// address tables can be read from the file.
//
// Reading never changes anything: a File is a deterministic function of the
// bytes it was parsed from.
package elfx

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"ftpatch/arch"
	"ftpatch/infile"
)

// An Addr is a virtual address as the file's headers and symbols state it
// (for a PIE or shared object, before the load bias is added; for an ET_REL
// object, an offset within the symbol's section).
type Addr uint64

// An Off is a byte offset in the file.
type Off uint64

// Sentinel errors callers branch on. Every parse error wraps one of them or
// is a *FormatError.
var (
	// ErrNotELF: the file does not start with the ELF magic.
	ErrNotELF = errors.New("not an ELF file")
	// ErrUnsupported: a valid ELF file of a kind ftpatch does not handle
	// (32-bit, big-endian, another machine).
	ErrUnsupported = errors.New("unsupported ELF file")
	// ErrNoSection: a section the caller asked for is absent.
	ErrNoSection = errors.New("no such section")
)

// A FormatError is a malformed ELF structure found at a file offset.
type FormatError struct {
	Off Off    // where the bad structure starts
	Msg string // what is wrong with it
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("malformed ELF at offset 0x%x: %s", uint64(e.Off), e.Msg)
}

func formatErr(off Off, format string, args ...any) error {
	return &FormatError{Off: off, Msg: fmt.Sprintf(format, args...)}
}

// A Section is one section header, with its name resolved.
type Section struct {
	Index   int
	Name    string
	Type    elf.SectionType
	Flags   elf.SectionFlag
	Addr    Addr
	Off     Off
	Size    uint64 // bytes
	Link    uint32
	Info    uint32
	Align   uint64 // bytes; 0 and 1 both mean unaligned
	Entsize uint64 // bytes per entry, 0 if the section has no fixed-size entries

	nameOff uint32
}

// A Prog is one program header.
type Prog struct {
	Type   elf.ProgType
	Flags  elf.ProgFlag
	Off    Off
	Vaddr  Addr
	Filesz uint64 // bytes
	Memsz  uint64 // bytes
	Align  uint64
}

// A File is a parsed ELF64 little-endian file for x86-64 or AArch64.
type File struct {
	Path     string
	Data     []byte // the whole file; never modified
	Type     elf.Type
	Arch     arch.Arch
	Entry    Addr
	Sections []*Section // by section index; Sections[0] is the null section
	Progs    []Prog
	Shstrndx int

	symtab *symtabCache
}

const (
	ehdrSize = 64
	shdrSize = 64
	phdrSize = 56
	symSize  = 24
	relaSize = 24

	shnLoreserve = 0xff00
	shnXindex    = 0xffff
)

var le = binary.LittleEndian

// Open reads and parses the file at path. Errors name the path. Only a
// regular file is read (see infile.Open: a device, a FIFO or a directory
// is refused at once), and no more than the size it had when opened.
func Open(path string) (*File, error) {
	data, err := infile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(path, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse parses data as an ELF file. path is only recorded for later
// messages. The returned errors do not repeat the path.
func Parse(path string, data []byte) (f *File, err error) {
	// Every read below is bounds-checked; this recover is the last line
	// that turns a bug of ours on a hostile file into an error, never a
	// crash of the tool.
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("%w: internal error while parsing: %v", ErrUnsupported, r)
		}
	}()
	f = &File{Path: path, Data: data}
	if err := f.parseHeader(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) parseHeader() error {
	d := f.Data
	if len(d) < 4 || string(d[:4]) != elf.ELFMAG {
		return ErrNotELF
	}
	if len(d) < ehdrSize {
		return formatErr(0, "file is %d bytes, shorter than the 64-byte ELF header", len(d))
	}
	switch elf.Class(d[elf.EI_CLASS]) {
	case elf.ELFCLASS64:
	case elf.ELFCLASS32:
		return fmt.Errorf("%w: 32-bit ELF (ELFCLASS32); ftpatch handles 64-bit x86-64 and arm64 only", ErrUnsupported)
	default:
		return formatErr(elf.EI_CLASS, "bad ELF class %d", d[elf.EI_CLASS])
	}
	switch elf.Data(d[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
	case elf.ELFDATA2MSB:
		return fmt.Errorf("%w: big-endian ELF (ELFDATA2MSB); ftpatch handles little-endian only", ErrUnsupported)
	default:
		return formatErr(elf.EI_DATA, "bad ELF data encoding %d", d[elf.EI_DATA])
	}
	if v := d[elf.EI_VERSION]; v != byte(elf.EV_CURRENT) {
		return formatErr(elf.EI_VERSION, "bad ELF version %d", v)
	}
	f.Type = elf.Type(le.Uint16(d[16:]))
	m := elf.Machine(le.Uint16(d[18:]))
	if f.Arch = arch.FromELF(m); f.Arch == arch.Unknown {
		return fmt.Errorf("%w: machine %v; ftpatch handles x86-64 and arm64", ErrUnsupported, m)
	}
	switch f.Type {
	case elf.ET_REL, elf.ET_EXEC, elf.ET_DYN:
	default:
		return fmt.Errorf("%w: file type %v; want a relocatable object, executable or shared object", ErrUnsupported, f.Type)
	}
	f.Entry = Addr(le.Uint64(d[24:]))
	phoff := Off(le.Uint64(d[32:]))
	shoff := Off(le.Uint64(d[40:]))
	phentsize := le.Uint16(d[54:])
	phnum := int(le.Uint16(d[56:]))
	shentsize := le.Uint16(d[58:])
	shnum := int(le.Uint16(d[60:]))
	shstrndx := int(le.Uint16(d[62:]))
	if hs := le.Uint16(d[52:]); hs != ehdrSize {
		return formatErr(52, "ELF header size %d, want %d", hs, ehdrSize)
	}

	if shoff != 0 {
		if shentsize != shdrSize {
			return formatErr(58, "section header size %d, want %d", shentsize, shdrSize)
		}
		if !f.inFile(shoff, shdrSize) {
			return formatErr(40, "section header table at 0x%x is past the end of the %d-byte file", uint64(shoff), len(d))
		}
		// Extended numbering: with 0xff00 sections or more, e_shnum is 0
		// and section 0's sh_size holds the count; e_shstrndx is
		// SHN_XINDEX and section 0's sh_link holds the index.
		s0 := d[shoff:]
		if shnum == 0 {
			shnum = int(min(le.Uint64(s0[32:]), uint64(len(d)/shdrSize+1)))
		}
		if shstrndx == shnXindex {
			shstrndx = int(le.Uint32(s0[40:]))
		}
		if !f.inFile(shoff, uint64(shnum)*shdrSize) {
			return formatErr(40, "section header table (%d headers at 0x%x) runs past the end of the %d-byte file", shnum, uint64(shoff), len(d))
		}
	} else {
		shnum = 0
	}
	if phnum > 0 {
		if phentsize != phdrSize {
			return formatErr(54, "program header size %d, want %d", phentsize, phdrSize)
		}
		if !f.inFile(phoff, uint64(phnum)*phdrSize) {
			return formatErr(32, "program header table (%d headers at 0x%x) runs past the end of the %d-byte file", phnum, uint64(phoff), len(d))
		}
		f.Progs = make([]Prog, phnum)
		for i := range f.Progs {
			p := d[phoff+Off(i)*phdrSize:]
			f.Progs[i] = Prog{
				Type: elf.ProgType(le.Uint32(p[0:])), Flags: elf.ProgFlag(le.Uint32(p[4:])),
				Off: Off(le.Uint64(p[8:])), Vaddr: Addr(le.Uint64(p[16:])),
				Filesz: le.Uint64(p[32:]), Memsz: le.Uint64(p[40:]), Align: le.Uint64(p[48:]),
			}
		}
	}
	if shnum == 0 {
		if f.Type == elf.ET_REL {
			return formatErr(40, "relocatable object without section headers")
		}
		return nil
	}
	if shstrndx == 0 || shstrndx >= shnum {
		return formatErr(62, "section name table index %d out of range (%d sections)", shstrndx, shnum)
	}
	f.Shstrndx = shstrndx
	f.Sections = make([]*Section, shnum)
	for i := range f.Sections {
		at := shoff + Off(i)*shdrSize
		h := d[at:]
		s := &Section{
			Index: i, nameOff: le.Uint32(h[0:]),
			Type: elf.SectionType(le.Uint32(h[4:])), Flags: elf.SectionFlag(le.Uint64(h[8:])),
			Addr: Addr(le.Uint64(h[16:])), Off: Off(le.Uint64(h[24:])), Size: le.Uint64(h[32:]),
			Link: le.Uint32(h[40:]), Info: le.Uint32(h[44:]),
			Align: le.Uint64(h[48:]), Entsize: le.Uint64(h[56:]),
		}
		if i > 0 && s.Type != elf.SHT_NOBITS && s.Type != elf.SHT_NULL && !f.inFile(s.Off, s.Size) {
			return formatErr(at, "section %d: contents (0x%x bytes at 0x%x) run past the end of the %d-byte file", i, s.Size, uint64(s.Off), len(d))
		}
		if s.Align > 1 && s.Align&(s.Align-1) != 0 {
			return formatErr(at+48, "section %d: alignment %d is not a power of two", i, s.Align)
		}
		f.Sections[i] = s
	}
	// Section 0 is the null section: only its size and link may be set,
	// to carry the counts of extended numbering.
	if s0 := f.Sections[0]; s0.Type != elf.SHT_NULL || s0.Flags != 0 || s0.Addr != 0 || s0.Off != 0 || s0.Info != 0 || s0.Align != 0 || s0.Entsize != 0 || s0.nameOff != 0 {
		return formatErr(shoff, "section 0 is not a null section header (type %v, offset 0x%x)", s0.Type, uint64(s0.Off))
	}
	names := f.Sections[shstrndx]
	if names.Type != elf.SHT_STRTAB {
		return formatErr(62, "section name table (section %d) has type %v, want SHT_STRTAB", shstrndx, names.Type)
	}
	strs := f.Data[names.Off : uint64(names.Off)+names.Size]
	for i, s := range f.Sections {
		if i == 0 {
			continue
		}
		n, ok := cstring(strs, s.nameOff)
		if !ok {
			return formatErr(shoff+Off(i)*shdrSize, "section %d: name offset %d is outside the %d-byte section name table", i, s.nameOff, len(strs))
		}
		s.Name = n
	}
	if err := f.checkOverlap(shoff, shnum); err != nil {
		return err
	}
	return f.checkLinks()
}

// checkOverlap rejects files whose section contents overlap each other,
// the ELF header or the section header table: writing one of them would
// silently change another.
func (f *File) checkOverlap(shoff Off, shnum int) error {
	type span struct {
		lo, hi uint64
		what   string
	}
	spans := []span{{0, ehdrSize, "the ELF header"}, {uint64(shoff), uint64(shoff) + uint64(shnum)*shdrSize, "the section header table"}}
	for _, s := range f.Sections[1:] {
		if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL || s.Size == 0 {
			continue
		}
		spans = append(spans, span{uint64(s.Off), uint64(s.Off) + s.Size, fmt.Sprintf("section %d %q", s.Index, s.Name)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			return formatErr(Off(spans[i].lo), "%s overlaps %s", spans[i].what, spans[i-1].what)
		}
	}
	return nil
}

// checkLinks validates the sh_link/sh_info fields whose meaning the
// section type fixes, so later readers can index without checks.
func (f *File) checkLinks() error {
	n := uint32(len(f.Sections))
	for _, s := range f.Sections[1:] {
		switch s.Type {
		case elf.SHT_SYMTAB, elf.SHT_DYNSYM:
			if s.Entsize != symSize || s.Size%symSize != 0 {
				return f.secErr(s, "symbol table entry size %d and size %d, want entries of %d bytes", s.Entsize, s.Size, symSize)
			}
			if s.Link == 0 || s.Link >= n || f.Sections[s.Link].Type != elf.SHT_STRTAB {
				return f.secErr(s, "string table link %d is not a string table", s.Link)
			}
			if uint64(s.Info) > s.Size/symSize {
				return f.secErr(s, "first global symbol index %d is past the %d symbols", s.Info, s.Size/symSize)
			}
			if s.Size > 0 && s.Info == 0 {
				return f.secErr(s, "first global symbol index 0: the null symbol 0 is local, so it must be at least 1")
			}
		case elf.SHT_RELA:
			if s.Entsize != relaSize || s.Size%relaSize != 0 {
				return f.secErr(s, "relocation entry size %d and size %d, want entries of %d bytes", s.Entsize, s.Size, relaSize)
			}
			if s.Link >= n || (s.Link != 0 && f.Sections[s.Link].Type != elf.SHT_SYMTAB && f.Sections[s.Link].Type != elf.SHT_DYNSYM) {
				return f.secErr(s, "symbol table link %d is not a symbol table", s.Link)
			}
			if f.Type == elf.ET_REL && (s.Info == 0 || s.Info >= n) {
				return f.secErr(s, "target section index %d out of range (%d sections)", s.Info, n)
			}
		case elf.SHT_REL:
			if f.Type == elf.ET_REL {
				return f.secErr(s, "SHT_REL relocations; x86-64 and arm64 objects use SHT_RELA")
			}
		case elf.SHT_GROUP:
			if s.Size%4 != 0 || s.Size < 4 {
				return f.secErr(s, "group section size %d is not a positive multiple of 4", s.Size)
			}
			if s.Link == 0 || s.Link >= n || f.Sections[s.Link].Type != elf.SHT_SYMTAB {
				return f.secErr(s, "group symbol table link %d is not a symbol table", s.Link)
			}
			if nsyms := f.Sections[s.Link].Size / symSize; uint64(s.Info) >= nsyms {
				return f.secErr(s, "group signature symbol %d out of range (%d symbols)", s.Info, nsyms)
			}
		case elf.SHT_SYMTAB_SHNDX:
			if s.Link == 0 || s.Link >= n || f.Sections[s.Link].Type != elf.SHT_SYMTAB {
				return f.secErr(s, "extended index table link %d is not a symbol table", s.Link)
			}
		}
	}
	return nil
}

func (f *File) secErr(s *Section, format string, args ...any) error {
	return formatErr(f.shdrOff(s.Index), "section %d %q: %s", s.Index, s.Name, fmt.Sprintf(format, args...))
}

func (f *File) shdrOff(i int) Off {
	return Off(le.Uint64(f.Data[40:])) + Off(i)*shdrSize
}

// inFile reports whether [off, off+size) lies inside the file, without
// overflowing.
func (f *File) inFile(off Off, size uint64) bool {
	n := uint64(len(f.Data))
	return uint64(off) <= n && size <= n-uint64(off)
}

func cstring(b []byte, off uint32) (string, bool) {
	if uint64(off) >= uint64(len(b)) {
		return "", false
	}
	for i := int(off); i < len(b); i++ {
		if b[i] == 0 {
			return string(b[off:i]), true
		}
	}
	return "", false
}

// Section returns the first section named name, or nil.
func (f *File) Section(name string) *Section {
	for _, s := range f.Sections {
		if s.Name == name && s.Index != 0 {
			return s
		}
	}
	return nil
}

// SectionData returns the contents of s, which alias File.Data: callers
// must copy before changing them. SHT_NOBITS sections have no contents.
func (f *File) SectionData(s *Section) []byte {
	if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
		return nil
	}
	// Bounds were checked when parsing.
	return f.Data[s.Off : uint64(s.Off)+s.Size : uint64(s.Off)+s.Size]
}

// String describes a section for messages: `section 3 ".text"`.
func (s *Section) String() string { return fmt.Sprintf("section %d %q", s.Index, s.Name) }
