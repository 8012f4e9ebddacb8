package trace

import "testing"

// TestLookup: an address belongs to the function that holds it and
// starts last, as the runtime's load-time pass decides; a function of
// size 0 holds its own address only.
func TestLookup(t *testing.T) {
	s := &Symbols{funcs: []fsym{
		{start: 0x100, end: 0x140, name: "outer"},
		{start: 0x108, end: 0x108, name: "label"}, // size 0, inside outer
		{start: 0x120, end: 0x130, name: "inner"}, // nested, with a size
		{start: 0x200, end: 0x210, name: "next"},
	}}
	s.index()
	for _, c := range []struct {
		addr uint64
		name string
		off  uint64
		ok   bool
	}{
		{0x100, "outer", 0, true},
		{0x104, "outer", 4, true},
		{0x108, "label", 0, true},
		{0x10c, "outer", 0xc, true}, // after the label: outer's
		{0x124, "inner", 4, true},
		{0x134, "outer", 0x34, true}, // after inner ends
		{0x140, "", 0, false},        // outer's end: no function's
		{0x1ff, "", 0, false},
		{0x200, "next", 0, true},
		{0x0ff, "", 0, false},
	} {
		name, off, ok := s.Lookup(c.addr)
		if name != c.name || off != c.off || ok != c.ok {
			t.Errorf("Lookup(%#x) = %q, %#x, %v; want %q, %#x, %v", c.addr, name, off, ok, c.name, c.off, c.ok)
		}
	}
}
