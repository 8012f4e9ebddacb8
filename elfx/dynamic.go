package elfx

import (
	"debug/elf"
	"fmt"
)

// A Dynamic is what a linked file tells the dynamic loader about the
// shared objects it needs: its PT_DYNAMIC entries and its PT_INTERP.
// They are read as the loader reads them, through the program headers
// (section headers may be stripped), the strings at DT_STRTAB's address.
type Dynamic struct {
	Needed []string // DT_NEEDED, in order: the names the loader looks up
	Soname string   // DT_SONAME: the name other objects need this one by
	// Rpath and Runpath are DT_RPATH and DT_RUNPATH: colon-separated
	// directories, unexpanded ($ORIGIN). HasRpath and HasRunpath say
	// whether the entry is there at all: an empty DT_RUNPATH still
	// makes the loader ignore DT_RPATH.
	Rpath, Runpath       string
	HasRpath, HasRunpath bool
	Flags1               elf.DynFlag1 // DT_FLAGS_1 (DF_1_NODEFLIB: no default directories)
	// Interp is PT_INTERP, the program's loader ("/lib64/ld-linux-x86-64.so.2");
	// "" in a shared object.
	Interp string
}

// dynSize is one Elf64_Dyn: d_tag and d_val, 8 bytes each.
const dynSize = 16

// Dynamic reads the file's dynamic entries. A file without PT_DYNAMIC
// (static, or an object) needs nothing: an empty Dynamic. Where the
// loader would fail (a string outside DT_STRTAB's DT_STRSZ bytes, an
// address in no segment), so does Dynamic.
func (f *File) Dynamic() (*Dynamic, error) {
	d := &Dynamic{}
	var dyn *Prog
	for i := range f.Progs {
		p := &f.Progs[i]
		switch p.Type {
		case elf.PT_DYNAMIC:
			if dyn == nil {
				dyn = p
			}
		case elf.PT_INTERP:
			if !f.inFile(p.Off, p.Filesz) {
				return nil, formatErr(p.Off, "PT_INTERP (%d bytes) runs past the end of the %d-byte file", p.Filesz, len(f.Data))
			}
			s, ok := cstring(f.Data[p.Off:uint64(p.Off)+p.Filesz], 0)
			if !ok {
				return nil, formatErr(p.Off, "PT_INTERP is not a NUL-terminated string")
			}
			d.Interp = s
		}
	}
	if dyn == nil {
		return d, nil
	}
	if !f.inFile(dyn.Off, dyn.Filesz) {
		return nil, formatErr(dyn.Off, "PT_DYNAMIC (%d bytes) runs past the end of the %d-byte file", dyn.Filesz, len(f.Data))
	}
	type ref struct {
		tag elf.DynTag
		val uint64
	}
	var strs []ref // entries whose value is a string offset, read once the table is known
	var strtab Addr
	var strsz uint64
	haveTab, haveSz := false, false
entries:
	for off := dyn.Off; uint64(off-dyn.Off)+dynSize <= dyn.Filesz; off += dynSize {
		tag, val := elf.DynTag(le.Uint64(f.Data[off:])), le.Uint64(f.Data[off+8:])
		switch tag {
		case elf.DT_NULL:
			break entries
		case elf.DT_NEEDED, elf.DT_SONAME, elf.DT_RPATH, elf.DT_RUNPATH:
			strs = append(strs, ref{tag, val})
		case elf.DT_STRTAB:
			strtab, haveTab = Addr(val), true
		case elf.DT_STRSZ:
			strsz, haveSz = val, true
		case elf.DT_FLAGS_1:
			d.Flags1 = elf.DynFlag1(val)
		}
	}
	if len(strs) == 0 {
		return d, nil
	}
	if !haveTab || !haveSz {
		return nil, formatErr(dyn.Off, "dynamic section names strings but has no DT_STRTAB or DT_STRSZ")
	}
	tab, err := f.ReadAt(strtab, strsz)
	if err != nil {
		return nil, fmt.Errorf("DT_STRTAB: %w", err)
	}
	for _, r := range strs {
		if r.val > uint64(^uint32(0)) {
			return nil, formatErr(dyn.Off, "%v: string offset %d is past the %d-byte DT_STRTAB", r.tag, r.val, strsz)
		}
		s, ok := cstring(tab, uint32(r.val))
		if !ok {
			return nil, formatErr(dyn.Off, "%v: string offset %d is not a string in the %d-byte DT_STRTAB", r.tag, r.val, strsz)
		}
		// Of two entries of one tag the loader keeps the last, but for
		// DT_NEEDED, whose every entry is a need.
		switch r.tag {
		case elf.DT_NEEDED:
			d.Needed = append(d.Needed, s)
		case elf.DT_SONAME:
			d.Soname = s
		case elf.DT_RPATH:
			d.Rpath, d.HasRpath = s, true
		case elf.DT_RUNPATH:
			d.Runpath, d.HasRunpath = s, true
		}
	}
	return d, nil
}
