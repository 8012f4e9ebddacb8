package symbols

import (
	"testing"

	"ftpatch/trace"
)

// TestLookup: an address belongs to the function that holds it and
// starts last, as the runtime's load-time pass decides; a function of
// size 0 holds its own address only.
func TestLookup(t *testing.T) {
	s := New([]Func{
		{Start: 0x100, End: 0x140, Name: "outer"},
		{Start: 0x108, End: 0x108, Name: "label"}, // size 0, inside outer
		{Start: 0x120, End: 0x130, Name: "inner"}, // nested, with a size
		{Start: 0x200, End: 0x210, Name: "next"},
	})
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

// TestLookupAt: where one shared object was unloaded and another loaded
// at the same addresses, an address is named from the one mapped at the
// record's time; outside every module, from the executable; in a module
// whose file could not be read, bare. A time no load covers goes to the
// last module loaded before it, or else the first loaded.
func TestLookupAt(t *testing.T) {
	exe := New([]Func{{Start: 0x1000, End: 0x1100, Name: "main"}})
	file := func(name string) *Table {
		return New([]Func{{Start: 0x100, End: 0x1000, Name: name}})
	}
	files := map[string]*Table{"before": file("before"), "first": file("first"), "second": file("second"), "third": file("third")}
	exe.MapModules([]trace.Module{
		{Path: "before", Lo: 0x7000, Hi: 0x8000, Load: 0, Unload: 1, Bias: 0x7000},    // unloaded before the trace
		{Path: "first", Lo: 0x7000, Hi: 0x8000, Load: 400, Unload: 500, Bias: 0x7000}, // loaded again
		{Path: "second", Lo: 0x7000, Hi: 0x8000, Load: 300, Unload: 350, Bias: 0x7000},
		{Path: "unreadable", Lo: 0x9000, Hi: 0xa000, Load: 0, Unload: 0, Bias: 0x9000},
		{Path: "first", Lo: 0x7000, Hi: 0x8000, Load: 100, Unload: 200, Bias: 0x7000}, // a record reused: listed last
		{Path: "third", Lo: 0x6000, Hi: 0x7800, Load: 600, Unload: 0, Bias: 0x6000},   // over part of the others
	}, func(md trace.Module) *Table { return files[md.Path] })
	for _, c := range []struct {
		addr, ts uint64
		want     string
	}{
		{0x1004, 150, "main+0x4"},
		{0x7104, 150, "first+0x4"},
		{0x7104, 199, "first+0x4"},
		{0x7104, 300, "second+0x4"},
		{0x7104, 349, "second+0x4"},
		{0x7104, 450, "first+0x4"},
		{0x7104, 550, "first+0x4"},   // after every unload: the last loaded before
		{0x7104, 250, "first+0x4"},   // between loads: the last loaded before
		{0x7104, 50, "before+0x4"},   // before any: the one loaded before the trace
		{0x7104, 700, "0x7104"},      // third's extent, none of its functions
		{0x6104, 700, "third+0x4"},   // third's
		{0x7904, 700, "first+0x804"}, // beyond third: first, the last loaded there
		{0x9104, 150, "0x9104"},      // unreadable
		{0x8004, 150, "0x8004"},      // nobody's
	} {
		if got := exe.NameAt(c.addr, c.ts); got != c.want {
			t.Errorf("NameAt(%#x, %d) = %q, want %q", c.addr, c.ts, got, c.want)
		}
	}
}
