// Package minielf writes the smallest linked ELF files the dynamic
// loader would look at: an ELF header, a PT_LOAD over the whole file, a
// PT_DYNAMIC with the entries the loader's search reads (DT_NEEDED,
// DT_SONAME, DT_RPATH, DT_RUNPATH, DT_FLAGS_1) and a PT_INTERP. No code,
// no sections. Tests of that search build the trees of programs and
// libraries they need with it, in any class and for any machine,
// without a toolchain.
package minielf

import (
	"debug/elf"
	"encoding/binary"
	"os"
)

// A File is what to write. Zero values give a 64-bit x86-64 shared
// object needing nothing.
type File struct {
	Class   elf.Class   // ELFCLASS64 when zero; ELFCLASS32 writes only a 32-bit ELF header
	Machine elf.Machine // EM_X86_64 when zero (EM_386 for ELFCLASS32)
	Type    elf.Type    // ET_DYN when zero
	Interp  string      // PT_INTERP; "" for none
	Needed  []string    // DT_NEEDED, in order
	Soname  string      // DT_SONAME; "" for none
	// Rpath and Runpath are DT_RPATH and DT_RUNPATH; "" for none.
	Rpath, Runpath string
	Flags1         elf.DynFlag1 // DT_FLAGS_1; 0 for none
}

// Sizes of ELF64's header, program header and dynamic entry.
const (
	ehdrSize = 64
	phdrSize = 56
	dynSize  = 16
)

var le = binary.LittleEndian

// Bytes returns the file's contents. Its one PT_LOAD maps the whole file
// at address 0, so addresses in it are file offsets.
func (f File) Bytes() []byte {
	if f.Class == elf.ELFCLASS32 {
		return f.bytes32()
	}
	machine, typ := f.Machine, f.Type
	if machine == 0 {
		machine = elf.EM_X86_64
	}
	if typ == 0 {
		typ = elf.ET_DYN
	}
	nph := 2
	if f.Interp != "" {
		nph++
	}
	// After the headers: PT_INTERP's string, the string table, the
	// dynamic entries (8-byte aligned).
	interpOff := ehdrSize + nph*phdrSize
	strOff := interpOff
	if f.Interp != "" {
		strOff += len(f.Interp) + 1
	}
	strtab := []byte{0}
	str := func(s string) uint64 {
		off := uint64(len(strtab))
		strtab = append(append(strtab, s...), 0)
		return off
	}
	var dyn [][2]uint64
	for _, n := range f.Needed {
		dyn = append(dyn, [2]uint64{uint64(elf.DT_NEEDED), str(n)})
	}
	for _, e := range []struct {
		tag elf.DynTag
		s   string
	}{{elf.DT_SONAME, f.Soname}, {elf.DT_RPATH, f.Rpath}, {elf.DT_RUNPATH, f.Runpath}} {
		if e.s != "" {
			dyn = append(dyn, [2]uint64{uint64(e.tag), str(e.s)})
		}
	}
	if f.Flags1 != 0 {
		dyn = append(dyn, [2]uint64{uint64(elf.DT_FLAGS_1), uint64(f.Flags1)})
	}
	dynOff := (strOff + len(strtab) + 7) &^ 7
	dyn = append(dyn, [2]uint64{uint64(elf.DT_STRTAB), uint64(strOff)}, [2]uint64{uint64(elf.DT_STRSZ), uint64(len(strtab))}, [2]uint64{uint64(elf.DT_NULL), 0})
	size := dynOff + len(dyn)*dynSize

	b := make([]byte, size)
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	le.PutUint16(b[16:], uint16(typ))
	le.PutUint16(b[18:], uint16(machine))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(b[32:], ehdrSize) // e_phoff
	le.PutUint16(b[52:], ehdrSize)
	le.PutUint16(b[54:], phdrSize)
	le.PutUint16(b[56:], uint16(nph))
	le.PutUint16(b[58:], 64) // e_shentsize; no sections
	ph := b[ehdrSize:]
	prog := func(i int, typ elf.ProgType, flags elf.ProgFlag, off, size, align int) {
		p := ph[i*phdrSize:]
		le.PutUint32(p[0:], uint32(typ))
		le.PutUint32(p[4:], uint32(flags))
		le.PutUint64(p[8:], uint64(off))
		le.PutUint64(p[16:], uint64(off)) // vaddr
		le.PutUint64(p[24:], uint64(off)) // paddr
		le.PutUint64(p[32:], uint64(size))
		le.PutUint64(p[40:], uint64(size))
		le.PutUint64(p[48:], uint64(align))
	}
	prog(0, elf.PT_LOAD, elf.PF_R|elf.PF_W, 0, size, 0x1000)
	prog(1, elf.PT_DYNAMIC, elf.PF_R|elf.PF_W, dynOff, len(dyn)*dynSize, 8)
	if f.Interp != "" {
		prog(2, elf.PT_INTERP, elf.PF_R, interpOff, len(f.Interp)+1, 1)
		copy(b[interpOff:], f.Interp)
	}
	copy(b[strOff:], strtab)
	for i, e := range dyn {
		le.PutUint64(b[dynOff+i*dynSize:], e[0])
		le.PutUint64(b[dynOff+i*dynSize+8:], e[1])
	}
	return b
}

// bytes32 is a 32-bit file: an Elf32_Ehdr, which is all a loader
// looking for a 64-bit object reads before passing over it, padded to
// 64 bytes (no real file is shorter than ELF64's header).
func (f File) bytes32() []byte {
	machine, typ := f.Machine, f.Type
	if machine == 0 {
		machine = elf.EM_386
	}
	if typ == 0 {
		typ = elf.ET_DYN
	}
	b := make([]byte, ehdrSize)
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(elf.ELFCLASS32), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	le.PutUint16(b[16:], uint16(typ))
	le.PutUint16(b[18:], uint16(machine))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint16(b[40:], 52) // e_ehsize
	return b
}

// Write writes the file at path, executable.
func (f File) Write(path string) error {
	return os.WriteFile(path, f.Bytes(), 0o755)
}
