package sites

import (
	"debug/elf"
	"sort"

	"ftpatch/elfx"
)

// A fn is a function symbol's extent within its section.
type fn struct {
	start, end uint64 // section offsets (objects) or addresses (linked), end exclusive
	name       string
	bind       elf.SymBind
}

// funcIndex finds the function containing an offset, per section. Built
// once per file from the symbol table.
type funcIndex struct {
	bySec map[uint32][]fn // sorted by start, aliases collapsed to one entry
}

// bindRank orders aliases: the name a user knows is the global one.
func bindRank(b elf.SymBind) int {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	}
	return 2
}

func newFuncIndex(syms []elfx.Symbol, linked bool) *funcIndex {
	idx := &funcIndex{bySec: map[uint32][]fn{}}
	for i := range syms {
		s := &syms[i]
		t := s.Type()
		if (t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC) || !s.Defined() {
			continue
		}
		key := s.Shndx
		if linked {
			key = 0 // one address space
		}
		idx.bySec[key] = append(idx.bySec[key], fn{uint64(s.Value), uint64(s.Value) + s.Size, s.Name, s.Bind()})
	}
	for k, fs := range idx.bySec {
		sort.Slice(fs, func(i, j int) bool {
			a, b := fs[i], fs[j]
			if a.start != b.start {
				return a.start < b.start
			}
			if ra, rb := bindRank(a.bind), bindRank(b.bind); ra != rb {
				return ra < rb
			}
			if a.end != b.end {
				return a.end > b.end
			}
			return a.name < b.name
		})
		// Keep one symbol per start address: the preferred alias.
		out := fs[:0]
		for _, f := range fs {
			if len(out) > 0 && out[len(out)-1].start == f.start {
				continue
			}
			out = append(out, f)
		}
		idx.bySec[k] = out
	}
	return idx
}

// containing returns the function whose extent holds off. A zero-size
// symbol holds only its own start.
func (x *funcIndex) containing(sec uint32, off uint64) (fn, bool) {
	fs := x.bySec[sec]
	i := sort.Search(len(fs), func(i int) bool { return fs[i].start > off }) - 1
	if i < 0 {
		return fn{}, false
	}
	f := fs[i]
	if off < f.end || off == f.start {
		return f, true
	}
	return fn{}, false
}

// next returns the first function starting at or after off.
func (x *funcIndex) next(sec uint32, off uint64) (fn, bool) {
	fs := x.bySec[sec]
	i := sort.Search(len(fs), func(i int) bool { return fs[i].start >= off })
	if i == len(fs) {
		return fn{}, false
	}
	return fs[i], true
}
