package sites

import (
	"debug/elf"
	"testing"

	"ftpatch/elfx"
)

// TestContaining: an offset belongs to the function that holds it and
// starts last, as the runtime's load-time pass and the trace reader
// decide; a function of size 0 holds its own start only.
func TestContaining(t *testing.T) {
	fn := func(i int, name string, start, size uint64) elfx.Symbol {
		return elfx.Symbol{Index: i, Name: name, Value: elfx.Addr(start), Size: size, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: 1}
	}
	syms := []elfx.Symbol{
		{},
		fn(1, "outer", 0x100, 0x40),
		fn(2, "label", 0x108, 0), // inside outer
		fn(3, "inner", 0x120, 0x10),
		fn(4, "next", 0x200, 0x10),
	}
	x := newFuncIndex(syms, true)
	for _, c := range []struct {
		off  uint64
		name string
		ok   bool
	}{
		{0x100, "outer", true},
		{0x108, "label", true},
		{0x10c, "outer", true}, // after the label: outer's
		{0x124, "inner", true},
		{0x134, "outer", true}, // after inner ends
		{0x140, "", false},
		{0x200, "next", true},
		{0x0ff, "", false},
	} {
		f, ok := x.cursor().containing(0, c.off)
		if f.name != c.name || ok != c.ok {
			t.Errorf("containing(%#x) = %q, %v; want %q, %v", c.off, f.name, ok, c.name, c.ok)
		}
	}
}
