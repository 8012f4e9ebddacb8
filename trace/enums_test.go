package trace

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/runtime/abi"
)

// TestArgsText: each item type of an EXT_ARGS record reads as C shows
// it: signed and unsigned decimal, hex, a float's low 32 bits, a
// double, a char, a bool, ?, an enum by its enumerator, by its flags
// (A|B), as a number when no enumerator fits or the enum is not in the
// trace's enums, a string, long doubles of both kinds, and structs by
// their layouts, one that could not be read by its address. Strings,
// chars and the enums file's names are escaped (package escape).
func TestArgsText(t *testing.T) {
	enums, err := func() (map[string]*Enum, error) {
		dir := t.TempDir()
		var b strings.Builder
		WriteEnums(&b, []Enum{
			{Name: "color", Size: 4, Values: []Enumerator{{"RED", 0, 0}, {"GREEN", 1, 0}, {"BLUE", 2, 0}}},
			{Name: "perm", Size: 4, Values: []Enumerator{{"R", 1, 0}, {"W", 2, 0}, {"X", 4, 0}}},
			{Name: "sign", Size: 1, Signed: true, Values: []Enumerator{{"MINUS", -1, 0}, {"PLUS", 1, 0}}},
			{Name: "evil", Size: 4, Values: []Enumerator{{"CLS\x1b[2J", 1, 0}, {"CLIP\x1b]52;c;eA==\a", 2, 0}, {"C1\u009b", 4, 0}}},
		})
		os.WriteFile(filepath.Join(dir, EnumsFile), []byte(b.String()), 0o644)
		return readEnums(dir)
	}()
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		typ   uint64
		words []uint64
	}
	str := func(s string) []uint64 {
		w := []uint64{uint64(len(s))}
		b := make([]byte, (len(s)+7)/8*8)
		copy(b, s)
		for i := 0; i < len(b); i += 8 {
			w = append(w, binary.LittleEndian.Uint64(b[i:]))
		}
		return w
	}
	enum := func(v uint64, name string) []uint64 { return append([]uint64{v}, str(name)...) }
	for _, c := range []struct {
		items []item
		want  string
	}{
		{[]item{{abi.ArgInt, []uint64{^uint64(0)}}, {abi.ArgUdec, []uint64{4294967295}}, {abi.ArgUint, []uint64{255}}}, "-1, 4294967295, 0xff"},
		{[]item{{abi.ArgFloat, []uint64{0x3fc00000}}, {abi.ArgDouble, []uint64{0x4002000000000000}}, {abi.ArgChar, []uint64{'q'}}}, "1.5, 2.25, 'q'"},
		{[]item{{abi.ArgBool, []uint64{1}}, {abi.ArgBool, []uint64{0}}, {abi.ArgNone, nil}, {abi.ArgBool, []uint64{7}}}, "true, false, ?, 7"},
		{[]item{{abi.ArgEnum, enum(2, "color")}, {abi.ArgEnum, enum(0xdead00000001, "color")}, {abi.ArgEnum, enum(9, "color")}}, "BLUE, GREEN, 9"},
		{[]item{{abi.ArgEnum, enum(3, "perm")}, {abi.ArgEnum, enum(7, "perm")}, {abi.ArgEnum, enum(8, "perm")}}, "R|W, R|W|X, 8"},
		{[]item{{abi.ArgEnum, enum(0xff, "sign")}, {abi.ArgEnum, enum(0xfe, "sign")}, {abi.ArgEnum, enum(0xffffffff, "nosuch")}}, "MINUS, -2, -1"},
		{[]item{{abi.ArgString, str("abc")}}, `"abc"`},
		{[]item{{abi.ArgString, str("a\x1b[2J\n\xff")}, {abi.ArgChar, []uint64{0x1b}}}, `"a\x1b[2J\n\xff", '\x1b'`},
		{[]item{{abi.ArgEnum, enum(1, "evil")}, {abi.ArgEnum, enum(6, "evil")}}, `CLS\x1b[2J, CLIP\x1b]52;c;eA==\a|C1\u009b`},
		{[]item{{abi.ArgF80, []uint64{0xa000000000000000, 0x4000}}, {abi.ArgF128, []uint64{0, 0x4000c00000000000}}}, "2.5, 3.5"},
		{[]item{{abi.ArgStruct, append([]uint64{8, 0xfffffffa00000005}, str("{i32,i32}")...)}, {abi.ArgInt, []uint64{3}}}, "{5, -6}, 3"},
		{[]item{{abi.ArgStruct, append([]uint64{24, 1, 2, 3}, str("{d,d,d}")...)}, {abi.ArgStruct, []uint64{abi.ArgUnreadable, 0x10}}}, "{1, 2, 3}, <unreadable 0x10>"},
	} {
		types := uint64(len(c.items))
		var words []uint64
		for i, it := range c.items {
			types |= it.typ << (abi.ArgTypeBits * (i + 1))
			words = append(words, it.words...)
		}
		w0 := uint64(abi.RecExt)<<abi.RecKindShift | uint64(abi.ExtArgs)<<abi.RecExtBits | uint64(2+len(words))
		rec := binary.LittleEndian.AppendUint64(nil, w0)
		rec = binary.LittleEndian.AppendUint64(rec, 0x1000)
		rec = binary.LittleEndian.AppendUint64(rec, types)
		for _, w := range words {
			rec = binary.LittleEndian.AppendUint64(rec, w)
		}
		got, err := argsText(rec, w0, enums)
		if err != nil || got != c.want {
			t.Errorf("%v: %q, %v; want %q", c.items, got, err, c.want)
		}
	}
	if _, err := readEnums(t.TempDir()); err != nil {
		t.Errorf("a trace without an enums file: %v", err)
	}
}

// TestFlagSets: a flag set's value reads as its fields' and flags'
// names OR-ed, lowest bits first (O_RDONLY|O_CLOEXEC), the bits no name
// covers in hex, or in octal for a mode (0644); a flag of several bits
// named only when all are set, before those it holds; 0 when nothing
// names it. The enums file round-trips it, still reads a file of enums
// alone (traces from before flag sets), and refuses a field value
// outside its mask, a mask in an enum, and an unknown kind.
func TestFlagSets(t *testing.T) {
	sets := []Enum{
		{Name: "oflags", Size: 4, Flags: true, Values: []Enumerator{
			{"O_RDONLY", 0, 3}, {"O_WRONLY", 1, 3}, {"O_RDWR", 2, 3},
			{"O_SYNC", 0o4010000, 0}, {"O_CREAT", 0o100, 0}, {"O_DSYNC", 0o10000, 0}, {"O_CLOEXEC", 0o2000000, 0},
		}},
		{Name: "mode", Size: 4, Flags: true, Octal: true, Values: []Enumerator{{"S_ISUID", 0o4000, 0}}},
		{Name: "prot", Size: 4, Flags: true, Values: []Enumerator{{"PROT_READ", 1, 0}, {"PROT_WRITE", 2, 0}}},
		{Name: "color", Size: 4, Values: []Enumerator{{"RED", 0, 0}}},
	}
	var b strings.Builder
	if err := WriteEnums(&b, sets); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, EnumsFile), []byte(b.String()), 0o644)
	enums, err := readEnums(dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for _, c := range []struct {
		set  string
		v    uint64
		want string
	}{
		{"oflags", 0o2000000, "O_RDONLY|O_CLOEXEC"},
		{"oflags", 0o2000102, "O_RDWR|O_CREAT|O_CLOEXEC"},
		{"oflags", 0o4010001, "O_WRONLY|O_SYNC"},
		{"oflags", 0o10000, "O_RDONLY|O_DSYNC"},
		{"oflags", 0x80000000_00000003 | 0o40000, "0x4003"},
		{"mode", 0o644, "0644"},
		{"mode", 0o4755, "S_ISUID|0755"},
		{"prot", 0, "0"},
		{"prot", 3, "PROT_READ|PROT_WRITE"},
		{"prot", 0x13, "PROT_READ|PROT_WRITE|0x10"},
		{"color", 0, "RED"},
	} {
		if got := enums[c.set].Show(c.v); got != c.want {
			t.Errorf("%s %#x: %q, want %q", c.set, c.v, got, c.want)
		}
	}
	for _, line := range []string{"f 4 x 4/3 A", "f 4 u 1/3 A", "f 4 y 1 A", "f 4 xo 1 A"} {
		if _, err := parseEnum(line); err == nil {
			t.Errorf("%q: read", line)
		}
	}
	if e, err := parseEnum("color 4 u 0 RED 1 GREEN"); err != nil || e.Flags || e.Show(1) != "GREEN" {
		t.Errorf("an enum's line: %+v, %v", e, err)
	}
}
