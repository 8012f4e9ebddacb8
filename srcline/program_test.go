package srcline

import (
	"encoding/binary"
	"strings"
	"testing"
)

// A unit assembles a .debug_line unit for the tests: header fields, the
// directory and file tables (paths as DW_FORM_string in DWARF 5), and a
// line-number program written with the op helpers below.
type unit struct {
	version  uint16
	opBase   uint8 // 13 when 0
	dirs     []string
	files    []string // each in directory 1 (DWARF 5: 0 is the compilation directory)
	prog     []byte
	addrSize uint8  // DWARF 5; 8 when 0
	raw5     []byte // DWARF 5: the tables, instead of dirs and files
}

const (
	testLineBase  = -5
	testLineRange = 14
)

func (u unit) bytes() []byte {
	opBase := u.opBase
	if opBase == 0 {
		opBase = 13
	}
	var h []byte
	h = append(h, 1) // minimum_instruction_length
	if u.version >= 4 {
		h = append(h, 1) // maximum_operations_per_instruction
	}
	h = append(h, 1, byte(testLineBase&0xff), testLineRange, opBase)
	std := []byte{0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1}
	for i := 1; i < int(opBase); i++ {
		if i <= len(std) {
			h = append(h, std[i-1])
		} else {
			h = append(h, 1)
		}
	}
	switch {
	case u.version >= 5 && u.raw5 != nil:
		h = append(h, u.raw5...)
	case u.version >= 5:
		h = append(h, 1, 1, 0x08) // directory format: path, string
		h = uleb(h, uint64(len(u.dirs)))
		for _, d := range u.dirs {
			h = append(append(h, d...), 0)
		}
		h = append(h, 2, 1, 0x08, 2, 0x0f) // file format: path, string; directory, udata
		h = uleb(h, uint64(len(u.files)))
		for _, f := range u.files {
			h = append(append(h, f...), 0)
			h = uleb(h, 1)
		}
	default:
		for _, d := range u.dirs {
			h = append(append(h, d...), 0)
		}
		h = append(h, 0)
		for _, f := range u.files {
			h = append(append(h, f...), 0, 1, 0, 0)
		}
		h = append(h, 0)
	}
	var b []byte
	b = binary.LittleEndian.AppendUint16(b, u.version)
	if u.version >= 5 {
		as := u.addrSize
		if as == 0 {
			as = 8
		}
		b = append(b, as, 0)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	b = append(append(b, h...), u.prog...)
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Line-number program operations.
func setAddr(a uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{0, 9, lneSetAddress}, a)
}
func endSeqOp() []byte           { return []byte{0, 1, lneEndSequence} }
func copyOp() []byte             { return []byte{lnsCopy} }
func advancePC(n uint64) []byte  { return uleb([]byte{lnsAdvancePC}, n) }
func advanceLine(n int64) []byte { return sleb([]byte{lnsAdvanceLine}, n) }
func setFile(n uint64) []byte    { return uleb([]byte{lnsSetFile}, n) }
func defineFile(name string) []byte {
	body := append(append([]byte{lneDefineFile}, name...), 0, 0, 0, 0)
	return append(uleb([]byte{0}, uint64(len(body))), body...)
}

// special is the special opcode advancing the address by da and the
// line by dl (opcode base 13).
func special(da, dl int) []byte {
	return []byte{byte(dl - testLineBase + testLineRange*da + 13)}
}

func ops(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

var allCode = [][2]uint64{{0x1000, 0x100000}}

func read(t *testing.T, data []byte) *Table {
	t.Helper()
	tab := &Table{}
	if err := tab.read(".debug_line", data, nil, allCode); err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestRows runs small line programs and looks up addresses in, between
// and around their rows, in DWARF 5, 4 and 2 (whose opcode base 10 makes
// 10-12 special opcodes).
func TestRows(t *testing.T) {
	// a.c:10 at 0x1000, a.c:11 at 0x1004 (a second row there, line 12,
	// is not the first), b.c:12 at 0x1008, a.c:20 at 0x1020 (after
	// const_add_pc's 17 and a fixed advance of 7), end at 0x1030.
	prog := func(first uint64) []byte {
		return ops(setFile(first), setAddr(0x1000), advanceLine(9), copyOp(), special(4, 1), special(0, 1),
			advancePC(4), setFile(first+1), copyOp(),
			setFile(first), []byte{lnsConstAddPC}, []byte{lnsFixedAdvancePC, 7, 0}, advanceLine(8), copyOp(),
			advancePC(16), endSeqOp())
	}
	for _, u := range []unit{
		{version: 5, dirs: []string{"/cd", "src"}, files: []string{"a.c", "b.c"}, prog: prog(0)},
		{version: 4, dirs: []string{"src"}, files: []string{"a.c", "b.c"}, prog: prog(1)},
		{version: 3, dirs: []string{"src"}, files: []string{"a.c", "b.c"}, prog: prog(1)},
	} {
		tab := read(t, u.bytes())
		for _, tt := range []struct {
			addr uint64
			want string
		}{
			{0xfff, ""}, {0x1000, "src/a.c:10"}, {0x1003, "src/a.c:10"}, {0x1004, "src/a.c:11"},
			{0x1008, "src/b.c:12"}, {0x101f, "src/b.c:12"}, {0x1020, "src/a.c:20"},
			{0x102f, "src/a.c:20"}, {0x1030, ""}, {0x5000, ""},
		} {
			p, ok := tab.Lookup(tt.addr)
			if p.String() != tt.want || ok != (tt.want != "") {
				t.Errorf("DWARF %d: Lookup(0x%x) = %q, %v; want %q", u.version, tt.addr, p, ok, tt.want)
			}
		}
	}
	// DWARF 2: opcode base 10, so opcode 10 is special: address +0, line
	// -5+0 from 10.
	u := unit{version: 2, opBase: 10, files: []string{"a.c"},
		prog: ops(setAddr(0x2000), advanceLine(9), []byte{10}, advancePC(4), endSeqOp())}
	if p, _ := read(t, u.bytes()).Lookup(0x2000); p.String() != "a.c:5" {
		t.Errorf("DWARF 2: %q, want a.c:5", p)
	}
}

// TestSequences: sequences come sorted whatever their order in the
// program; one that starts outside the code (a discarded function's,
// at 0) is dropped; a line-0 row is no position; define_file adds a file.
func TestSequences(t *testing.T) {
	u := unit{version: 4, files: []string{"a.c"}, prog: ops(
		setAddr(0x3000), advanceLine(29), copyOp(), advancePC(16), endSeqOp(),
		setAddr(0x1000), advanceLine(9), copyOp(), advancePC(8), advanceLine(-10), copyOp(), advancePC(8), endSeqOp(),
		setAddr(0), advanceLine(99), copyOp(), advancePC(0x5000), endSeqOp(),
		defineFile("gen.c"), setAddr(0x2000), setFile(2), advanceLine(4), copyOp(), advancePC(4), endSeqOp(),
	)}
	tab := read(t, u.bytes())
	for _, tt := range []struct {
		addr uint64
		want string
	}{
		{0x1000, "a.c:10"}, {0x1008, ""}, {0x1010, ""}, {0x2000, "gen.c:5"}, {0x3000, "a.c:30"}, {0x100, ""},
	} {
		if p, _ := tab.Lookup(tt.addr); p.String() != tt.want {
			t.Errorf("Lookup(0x%x) = %q, want %q", tt.addr, p, tt.want)
		}
	}
	if len(tab.Notes) != 0 {
		t.Errorf("notes %q", tab.Notes)
	}
}

// TestLookupIn: the covering row counts only if it is the function's;
// otherwise the function's first row.
func TestLookupIn(t *testing.T) {
	// f's rows: 0x1000 line 10, 0x1008 line 11; g at 0x1010 has its
	// first row at 0x1018 (line 20), after 8 bytes of NOPs.
	u := unit{version: 5, dirs: []string{"."}, files: []string{"a.c"}, prog: ops(
		setAddr(0x1000), advanceLine(9), copyOp(), special(8, 1), advancePC(16), advanceLine(9), copyOp(),
		advancePC(8), endSeqOp())}
	tab := read(t, u.bytes())
	for _, tt := range []struct {
		addr, start, end uint64
		want             string
	}{
		{0x1000, 0x1000, 0x1010, "a.c:10"},
		{0x1008, 0x1000, 0x1010, "a.c:11"},
		{0x1010, 0x1010, 0x1020, "a.c:20"}, // covered by f's last row: g's first instead
		{0x1014, 0x1010, 0x1020, "a.c:20"},
		{0x1010, 0x1010, 0x1018, ""}, // g ends before its first row
	} {
		if p, _ := tab.LookupIn(tt.addr, tt.start, tt.end); p.String() != tt.want {
			t.Errorf("LookupIn(0x%x, 0x%x, 0x%x) = %q, want %q", tt.addr, tt.start, tt.end, p, tt.want)
		}
	}
}

// TestNotes: what is valid but not read is a note, and the units after
// it are still read.
func TestNotes(t *testing.T) {
	good := unit{version: 4, files: []string{"a.c"}, prog: ops(setAddr(0x8000), copyOp(), advancePC(4), endSeqOp())}.bytes()
	dwarf64 := append([]byte{0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0, 0, 0}, 4, 0)
	tests := []struct {
		name string
		data []byte
		note string
	}{
		{"64-bit DWARF", dwarf64, "64-bit DWARF"},
		{"version 6", unit{version: 6, files: []string{"a.c"}}.bytes(), "DWARF version 6"},
		{"version 1", unit{version: 1, files: []string{"a.c"}}.bytes(), "DWARF version 1"},
		{"address size 2", unit{version: 5, addrSize: 2, dirs: []string{"."}, files: []string{"a.c"}}.bytes(), "address size 2"},
		{"goes backwards", unit{version: 4, files: []string{"a.c"}, prog: ops(setAddr(0x1010), copyOp(), setAddr(0x1000), copyOp(), endSeqOp())}.bytes(), "1 line sequences go backwards"},
		{"does not end", unit{version: 4, files: []string{"a.c"}, prog: ops(setAddr(0x1010), copyOp())}.bytes(), "1 line sequences do not end"},
		{"overlaps", unit{version: 4, files: []string{"a.c"}, prog: ops(setAddr(0x1000), copyOp(), advancePC(8), endSeqOp(), setAddr(0x1004), copyOp(), advancePC(8), endSeqOp())}.bytes(), "1 line sequences overlap others"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := read(t, append(tt.data, good...))
			if len(tab.Notes) != 1 || !strings.Contains(tab.Notes[0], tt.note) {
				t.Errorf("notes %q, want one with %q", tab.Notes, tt.note)
			}
			if p, _ := tab.Lookup(0x8000); p.String() != "a.c:1" {
				t.Errorf("the good unit after it: Lookup = %q, want a.c:1", p)
			}
		})
	}
}

// TestErrors: a malformed unit is an error naming the unit and problem.
func TestErrors(t *testing.T) {
	withLen := func(b []byte, n uint32) []byte {
		binary.LittleEndian.PutUint32(b, n)
		return b
	}
	v5 := func(tables ...byte) []byte {
		return unit{version: 5, raw5: tables}.bytes()
	}
	good := func(prog ...[]byte) []byte {
		return unit{version: 4, files: []string{"a.c"}, prog: ops(prog...)}.bytes()
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"short length", []byte{1, 0}, "unit length: at +0x0: truncated"},
		{"reserved length", []byte{0xf0, 0xff, 0xff, 0xff}, "reserved unit length 0xfffffff0"},
		{"length past the end", withLen(good(), 1000), "unit length 1000 runs past the end of the section"},
		{"truncated header", withLen([]byte{0, 0, 0, 0, 4, 0, 1}, 3), "header: at +0x"},
		{"header length past the unit", func() []byte {
			b := good()
			binary.LittleEndian.PutUint32(b[6:], 5000)
			return b
		}(), "header length 5000 runs past the end"},
		{"line range 0", func() []byte {
			b := good()
			b[4+2+4+4] = 0 // after length, version, header_length, min_inst, max_ops, default_is_stmt, line_base
			return b
		}(), "line_range 0"},
		{"file table past the header", func() []byte {
			b := unit{version: 4, files: []string{"a.c"}}.bytes()
			binary.LittleEndian.PutUint32(b[6:], binary.LittleEndian.Uint32(b[6:])-1)
			return b
		}(), "directory and file tables: at +0x"},
		{"unknown form", v5(1, 1, 0x99, 0x01, 1, 'x'), "directory table: unsupported form 0x99"},
		{"entries of no content", v5(0, 3), "directory table: 3 entries of no content"},
		{"more entries than bytes", v5(1, 1, 0x08, 100), "directory table: 100 entries in"},
		{"line_strp outside", v5(1, 1, 0x1f, 1, 5, 0, 0, 0), "string offset 5 outside the 0-byte .debug_line_str"},
		{"block past the end", v5(1, 1, 0x09, 1, 50), "directory table: at +0x"},
		{"file index out of range", good(setAddr(0x1000), setFile(7), copyOp()), "file 7 out of range (1 files)"},
		{"extended opcode too long", good([]byte{0, 50, 1}), "extended opcode of 50 bytes runs past the unit"},
		{"set_address of 3 bytes", good([]byte{0, 4, lneSetAddress, 1, 2, 3}), "set_address with a 3-byte operand"},
		{"truncated LEB128", good([]byte{lnsAdvancePC, 0x80}), "line program: at +0x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Table{}).read(".debug_line", tt.data, nil, allCode)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), `section ".debug_line": unit at 0x0: `) {
				t.Errorf("%v, want an error naming the unit and %q", err, tt.want)
			}
		})
	}
}

// bigTable is a line table like a 200,000-function program's: one
// sequence per function (-ffunction-sections), five rows each.
func bigTable(n int) []byte {
	var prog []byte
	for i := range n {
		prog = append(prog, setAddr(0x10000+uint64(i)*64)...)
		prog = append(prog, advanceLine(int64(i%1000)+1)...)
		prog = append(prog, copyOp()...)
		for range 4 {
			prog = append(prog, special(8, 1)...)
		}
		prog = append(prog, advancePC(16)...)
		prog = append(prog, endSeqOp()...)
		prog = append(prog, advanceLine(0)...)
	}
	return unit{version: 5, dirs: []string{"."}, files: []string{"big.c"}, prog: prog}.bytes()
}

// TestLargeTable reads a 200,000-function line table and finds every
// function's entry line (BenchmarkRead200k times it).
func TestLargeTable(t *testing.T) {
	const n = 200000
	data := bigTable(n)
	tab := &Table{}
	if err := tab.read(".debug_line", data, nil, [][2]uint64{{0x10000, 0x10000 + n*64}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, ok := tab.LookupIn(0x10000+uint64(i)*64, 0x10000+uint64(i)*64, 0x10000+uint64(i+1)*64); !ok {
			t.Fatalf("function %d: no line", i)
		}
	}
}

func BenchmarkRead200k(b *testing.B) {
	const n = 200000
	data := bigTable(n)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		tab := &Table{}
		if err := tab.read(".debug_line", data, nil, [][2]uint64{{0x10000, 0x10000 + n*64}}); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			tab.LookupIn(0x10000+uint64(i)*64, 0x10000+uint64(i)*64, 0x10000+uint64(i+1)*64)
		}
	}
}
