package symbols

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
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

// TestCache: the processes a Cache loads share their executable's
// symbols, read once, each naming them at its own load bias; a shared
// object that cannot be read is warned of by the first process alone.
func TestCache(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "cache")
	if out, err := exec.Command("gcc", "-O0", "-o", exe, "testdata/cache.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var entry uint64
	for _, y := range syms {
		if y.Name == "cached_fn" {
			entry = y.Value
		}
	}
	if entry == 0 {
		t.Fatal("no cached_fn in the program")
	}
	c := NewCache()
	var tables []*Table
	for i, bias := range []uint64{0x10000, 0x7f0000000000} {
		m := &trace.Meta{Exe: exe, Bias: bias, Modules: []trace.Module{{Path: "/nonexistent/libgone.so", Lo: 1 << 47, Hi: 1<<47 + 0x1000}}}
		s, warns, err := c.LoadProcess(m, "")
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 - i; len(warns) != want {
			t.Errorf("process %d: %d warnings (%v), want %d", i, len(warns), warns, want)
		}
		if name, off, ok := s.Lookup(entry + bias); name != "cached_fn" || off != 0 || !ok {
			t.Errorf("process %d: Lookup(%#x) = %q+%#x %v, want cached_fn", i, entry+bias, name, off, ok)
		}
		if name, _, ok := s.Lookup(entry); ok && name == "cached_fn" {
			t.Errorf("process %d: the file address names the function, not the run-time one", i)
		}
		tables = append(tables, s)
	}
	if tables[0].exe == nil || tables[0].exe != tables[1].exe || len(c.files) != 2 {
		t.Errorf("%d files cached (the executable's and the shared object's), the executable's tables shared: %v; want 2, shared", len(c.files), tables[0].exe == tables[1].exe)
	}
}
