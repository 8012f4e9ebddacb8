package funcs

import (
	"debug/elf"
	"math/rand/v2"
	"testing"

	"ftpatch/elfx"
)

// TestContaining: an address belongs to the function that holds it and
// starts last, as the runtime's load-time pass decides; a function of
// size 0 holds its own start only. A Cursor, asked in any order, finds
// what the Index finds.
func TestContaining(t *testing.T) {
	x := New([]Entry{
		{Start: 0x200, End: 0x210, ID: 4}, // not sorted: New sorts
		{Start: 0x100, End: 0x140, ID: 1},
		{Start: 0x108, End: 0x108, ID: 2}, // size 0, inside 1
		{Start: 0x120, End: 0x130, ID: 3}, // nested, with a size
	})
	cases := []struct {
		a  uint64
		id int32
		ok bool
	}{
		{0x100, 1, true},
		{0x108, 2, true},
		{0x10c, 1, true}, // after the label: the outer function's
		{0x124, 3, true},
		{0x134, 1, true}, // after the nested one ends
		{0x140, 0, false},
		{0x1ff, 0, false},
		{0x200, 4, true},
		{0x20f, 4, true},
		{0x0ff, 0, false},
	}
	c := x.Cursor()
	for _, i := range append(rand.Perm(len(cases)), rand.Perm(len(cases))...) {
		k := cases[i]
		for _, f := range []func(uint64) (Entry, bool){x.Containing, c.Containing} {
			e, ok := f(k.a)
			if ok != k.ok || (ok && e.ID != k.id) {
				t.Errorf("Containing(%#x) = %+v, %v; want ID %d, %v", k.a, e, ok, k.id, k.ok)
			}
		}
	}
	if e, ok := x.Before(0x1ff); !ok || e.ID != 3 {
		t.Errorf("Before(0x1ff) = %+v, %v; want ID 3", e, ok)
	}
	if e, ok := x.Next(0x121); !ok || e.ID != 4 {
		t.Errorf("Next(0x121) = %+v, %v; want ID 4", e, ok)
	}
	var none *Index
	if _, ok := none.Containing(0x100); ok || none.Len() != 0 {
		t.Error("a nil Index holds a function")
	}
}

// TestAliases: of the functions starting at one address, one names it:
// a global before a weak before a local, then the larger, then the
// first in the symbol table.
func TestAliases(t *testing.T) {
	for _, c := range []struct {
		name string
		es   []Entry
		want int32
	}{
		{"global before local", []Entry{{Start: 8, End: 16, ID: 1, Rank: Rank(elf.STB_LOCAL)}, {Start: 8, End: 16, ID: 2, Rank: Rank(elf.STB_GLOBAL)}}, 2},
		{"weak before local", []Entry{{Start: 8, End: 16, ID: 1, Rank: Rank(elf.STB_LOCAL)}, {Start: 8, End: 16, ID: 2, Rank: Rank(elf.STB_WEAK)}}, 2},
		{"global before weak", []Entry{{Start: 8, End: 16, ID: 1, Rank: Rank(elf.STB_WEAK)}, {Start: 8, End: 16, ID: 2, Rank: Rank(elf.STB_GLOBAL)}}, 2},
		{"the larger", []Entry{{Start: 8, End: 9, ID: 1}, {Start: 8, End: 16, ID: 2}}, 2},
		{"the first", []Entry{{Start: 8, End: 16, ID: 2}, {Start: 8, End: 16, ID: 1}}, 1},
	} {
		x := New(c.es)
		if e, ok := x.Containing(8); !ok || e.ID != c.want || x.Len() != 1 {
			t.Errorf("%s: %+v, %v (%d kept); want ID %d", c.name, e, ok, x.Len(), c.want)
		}
	}
}

// TestIsFunc: a function is a defined, named STT_FUNC symbol; an ifunc
// symbol is not (its resolver's own symbol names that code), nor an
// object, an undefined symbol or a nameless one.
func TestIsFunc(t *testing.T) {
	sym := func(name string, typ elf.SymType, shndx uint32) *elfx.Symbol {
		return &elfx.Symbol{Name: name, Info: elf.ST_INFO(elf.STB_GLOBAL, typ), Shndx: shndx, Value: 0x1000}
	}
	for _, c := range []struct {
		s    *elfx.Symbol
		want bool
	}{
		{sym("f", elf.STT_FUNC, 1), true},
		{sym("f", elf.STT_GNU_IFUNC, 1), false},
		{sym("v", elf.STT_OBJECT, 1), false},
		{sym("f", elf.STT_FUNC, uint32(elf.SHN_UNDEF)), false},
		{sym("", elf.STT_FUNC, 1), false},
	} {
		if got := IsFunc(c.s); got != c.want {
			t.Errorf("IsFunc(%q, %v, shndx %d) = %v", c.s.Name, c.s.Type(), c.s.Shndx, got)
		}
	}
}
