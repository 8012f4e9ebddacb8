// Package funcs indexes a file's functions by address, by the one rule
// that site discovery, patching, recordmcount and the trace reader share
// with the runtime's load-time pass (runtime/src/core/symbols.c): which
// symbols are functions (IsFunc), which of several symbols starting at
// one address names the function there (Entry.Rank), and which function
// holds an address (Index.Containing). A site, a filter and a trace all
// name a function the same way.
package funcs

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"sort"

	"ftpatch/elfx"
)

// IsFunc reports whether s names a function defined here: an STT_FUNC
// symbol with a name, in a section. An STT_GNU_IFUNC symbol is not one:
// its value is its resolver's code, which the resolver's own STT_FUNC
// symbol names, as the runtime names it.
func IsFunc(s *elfx.Symbol) bool {
	return s.Type() == elf.STT_FUNC && s.Defined() && s.Name != ""
}

// Rank orders the symbols of one address by binding: the name a user
// knows is the global one, then a weak one, then a local one.
func Rank(b elf.SymBind) uint8 {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	}
	return 2
}

// An Entry is one function's extent, [Start, End), with ID, the
// caller's handle on its name (a symbol index, a slot in a table of its
// own), and Rank, which of the entries starting at one address names
// the function there: the lowest Rank, then the larger extent, then the
// lowest ID (the first in the symbol table).
type Entry struct {
	Start, End uint64
	ID         int32
	Rank       uint8
}

// An Index finds the function holding an address among entries.
// Safe for concurrent use; a Cursor adds a hint for lookups in address
// order. A nil Index holds no function.
type Index struct {
	es    []Entry  // sorted by Start, one per Start
	reach []uint64 // reach[i]: the greatest End of es[0..i]
}

// New indexes es, which it sorts and keeps (one entry per start: the
// one Rank, extent and ID prefer).
func New(es []Entry) *Index {
	pref := func(a, b Entry) int {
		if a.Start != b.Start {
			return cmp.Compare(a.Start, b.Start)
		}
		if a.Rank != b.Rank {
			return cmp.Compare(a.Rank, b.Rank)
		}
		if a.End != b.End {
			return cmp.Compare(b.End, a.End)
		}
		return cmp.Compare(a.ID, b.ID)
	}
	if !slices.IsSortedFunc(es, pref) {
		slices.SortFunc(es, pref)
	}
	es = slices.CompactFunc(es, func(a, b Entry) bool { return a.Start == b.Start })
	x := &Index{es: es, reach: make([]uint64, len(es))}
	var most uint64
	for i, e := range es {
		most = max(most, e.End)
		x.reach[i] = most
	}
	return x
}

// Entries are the indexed functions, by start.
func (x *Index) Entries() []Entry {
	if x == nil {
		return nil
	}
	return x.es
}

// Len is the number of indexed functions.
func (x *Index) Len() int { return len(x.Entries()) }

// Containing returns the function whose extent holds a: of those that
// hold it, the one that starts last, as the runtime's load-time pass
// decides. A zero-size function holds only its own start, so an address
// after a zero-size label inside a function is the function's.
func (x *Index) Containing(a uint64) (Entry, bool) {
	if x == nil {
		return Entry{}, false
	}
	return x.containingFrom(sort.Search(len(x.es), func(i int) bool { return x.es[i].Start > a })-1, a)
}

// containingFrom is Containing given i, the last entry starting at or
// before a.
func (x *Index) containingFrom(i int, a uint64) (Entry, bool) {
	for ; i >= 0; i-- {
		e := x.es[i]
		if a < e.End || a == e.Start {
			return e, true
		}
		if i == 0 || x.reach[i-1] <= a {
			break // no function further back reaches a
		}
	}
	return Entry{}, false
}

// Before returns the last function starting at or before a, whether or
// not it holds a.
func (x *Index) Before(a uint64) (Entry, bool) {
	if x == nil {
		return Entry{}, false
	}
	i := sort.Search(len(x.es), func(i int) bool { return x.es[i].Start > a }) - 1
	if i < 0 {
		return Entry{}, false
	}
	return x.es[i], true
}

// Next returns the first function starting at or after a.
func (x *Index) Next(a uint64) (Entry, bool) {
	if x == nil {
		return Entry{}, false
	}
	i := sort.Search(len(x.es), func(i int) bool { return x.es[i].Start >= a })
	if i == len(x.es) {
		return Entry{}, false
	}
	return x.es[i], true
}

// A Cursor looks up an Index for one goroutine, remembering where the
// last lookup landed: addresses asked in order (sites from a sorted
// table) are found there or one further, without a search.
type Cursor struct {
	x    *Index
	last int
}

// Cursor returns a new cursor on x.
func (x *Index) Cursor() *Cursor { return &Cursor{x: x} }

// Containing is Index.Containing.
func (c *Cursor) Containing(a uint64) (Entry, bool) {
	es := c.x.es
	i := -1
	for _, j := range [2]int{c.last, c.last + 1} {
		if j < len(es) && es[j].Start <= a && (j+1 == len(es) || es[j+1].Start > a) {
			i = j
			break
		}
	}
	if i < 0 {
		i = sort.Search(len(es), func(i int) bool { return es[i].Start > a }) - 1
	}
	if i >= 0 {
		c.last = i
	}
	return c.x.containingFrom(i, a)
}

// Where a file's function symbols came from (FileSymbols).
const (
	FromSymtab  = "symbol table"
	FromDebug   = "debug file"
	FromEHFrame = ".eh_frame"
)

// FileSymbols returns the symbols that name f's functions: its symbol
// table; in a stripped file, its debug file's (found by build-id under
// elfx.DebugRoot, whose addresses are the file's); or else one made for
// each of .eh_frame's ranges, named as a .dynsym function starting there
// is, sub_ADDRESS otherwise (sub_ADDRESS.cold for a range that starts
// mid-frame: code a function jumps to, a split-off cold part or a stub),
// with the .dynsym functions no range covers. from says which, and debug
// names the debug file read. What the runtime, the tools and the reader
// name a function by is one rule: IsFunc and Rank over these.
func FileSymbols(f *elfx.File) (syms []elfx.Symbol, from, debug string, err error) {
	_, syms, err = f.Symtab()
	if err == nil {
		return syms, FromSymtab, "", nil
	}
	if !errors.Is(err, elfx.ErrNoSection) {
		return nil, "", "", err
	}
	if p := elfx.DebugPath(f.BuildID()); p != "" {
		if d, derr := elfx.Open(p); derr == nil {
			if _, dsyms, serr := d.Symtab(); serr == nil {
				return dsyms, FromDebug, p, nil
			}
		}
	}
	fdes, err := f.FDERanges()
	if err != nil {
		return nil, "", "", err
	}
	var dyn []elfx.Symbol
	if ds := f.Section(".dynsym"); ds != nil {
		if dyn, err = f.Symbols(ds); err != nil {
			return nil, "", "", err
		}
	}
	named := map[uint64]*elfx.Symbol{}
	syms = []elfx.Symbol{{}} // index 0: the null symbol, as a table has
	for i := range dyn {
		if IsFunc(&dyn[i]) {
			named[uint64(dyn[i].Value)] = &dyn[i]
		}
	}
	covered := map[uint64]bool{}
	for _, r := range fdes {
		a := uint64(r.Start)
		if covered[a] {
			continue
		}
		covered[a] = true
		s := elfx.Symbol{Index: len(syms), Value: r.Start, Size: uint64(r.End - r.Start), Info: byte(elf.ST_INFO(elf.STB_LOCAL, elf.STT_FUNC))}
		if d, ok := named[a]; ok && r.Entry {
			s.Name, s.Info = d.Name, d.Info
		} else if r.Entry {
			s.Name = fmt.Sprintf("sub_%x", a)
		} else {
			s.Name = fmt.Sprintf("sub_%x.cold", a)
		}
		s.Shndx = sectionOf(f, a)
		syms = append(syms, s)
	}
	for i := range dyn { // in the table's order: deterministic
		if d := &dyn[i]; IsFunc(d) && !covered[uint64(d.Value)] {
			covered[uint64(d.Value)] = true
			s := *d
			s.Index = len(syms)
			syms = append(syms, s)
		}
	}
	return syms, FromEHFrame, "", nil
}

// sectionOf is the index of the allocated section holding a, or
// SHN_ABS when none does.
func sectionOf(f *elfx.File, a uint64) uint32 {
	for _, s := range f.Sections[1:] {
		if s.Flags&elf.SHF_ALLOC != 0 && a >= uint64(s.Addr) && a < uint64(s.Addr)+s.Size {
			return uint32(s.Index)
		}
	}
	return uint32(elf.SHN_ABS)
}
