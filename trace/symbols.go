package trace

import (
	"cmp"
	"debug/elf"
	"fmt"
	"slices"
	"sort"

	"ftpatch/elfx"
)

// Symbols names the addresses of one executable from its symbol table.
type Symbols struct {
	funcs []fsym // sorted by start; one name per start (the global alias)
}

type fsym struct {
	start, end uint64 // file addresses
	name       string
	global     bool
}

// LoadSymbols reads the function symbols of the executable at path.
func LoadSymbols(path string) (*Symbols, error) {
	f, err := elfx.Open(path)
	if err != nil {
		return nil, err
	}
	_, syms, err := f.Symtab()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: symbols are needed to name functions", path, err)
	}
	s := &Symbols{}
	for i := range syms {
		y := &syms[i]
		if y.Type() != elf.STT_FUNC || !y.Defined() || y.Name == "" {
			continue
		}
		s.funcs = append(s.funcs, fsym{uint64(y.Value), uint64(y.Value) + y.Size, y.Name, y.Bind() != elf.STB_LOCAL})
	}
	slices.SortFunc(s.funcs, func(a, b fsym) int {
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		if a.global != b.global {
			if a.global {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.name, b.name)
	})
	s.funcs = slices.CompactFunc(s.funcs, func(a, b fsym) bool { return a.start == b.start })
	return s, nil
}

// Lookup returns the function holding file address addr and the offset
// into it.
func (s *Symbols) Lookup(addr uint64) (string, uint64, bool) {
	i := sort.Search(len(s.funcs), func(i int) bool { return s.funcs[i].start > addr }) - 1
	if i < 0 {
		return "", 0, false
	}
	f := s.funcs[i]
	if addr >= f.end && addr != f.start {
		return "", 0, false
	}
	return f.name, addr - f.start, true
}

// Name formats addr as function+0xoff, or as a bare address.
func (s *Symbols) Name(addr uint64) string {
	name, off, ok := s.Lookup(addr)
	switch {
	case !ok:
		return fmt.Sprintf("0x%x", addr)
	case off == 0:
		return name
	default:
		return fmt.Sprintf("%s+0x%x", name, off)
	}
}

// Func names the function holding addr (a site: at the entry, or after
// endbr64 or the prologue), or gives the bare address.
func (s *Symbols) Func(addr uint64) string {
	if name, _, ok := s.Lookup(addr); ok {
		return name
	}
	return fmt.Sprintf("0x%x", addr)
}
