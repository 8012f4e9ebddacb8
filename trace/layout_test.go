package trace

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// TestLayout: each struct format reads as C lays its members out (its
// size and canonical text) and shows bytes as C's initializer would
// write them; what the grammar refuses is ErrLayout.
func TestLayout(t *testing.T) {
	le := binary.LittleEndian
	words := func(w ...uint64) []byte {
		var b []byte
		for _, x := range w {
			b = le.AppendUint64(b, x)
		}
		return b
	}
	for _, c := range []struct {
		text, canon string
		size        int
		ints        uint64 // Integers
		data        []byte
		show        string
	}{
		{"{i32,i32}", "{i32,i32}", 8, 1, words(0xfffffffa00000005), "{5, -6}"},
		{"{d,i,u,x}", "{i64,i64,u64,x64}", 32, 15, words(1, ^uint64(1), ^uint64(0), 255), "{1, -2, 18446744073709551615, 0xff}"},
		{"{c,i32,b,i16}", "{c,i32,b,i16}", 12, 3, words(0xfffffffb00000071, 0xfffe0001), "{'q', -5, true, -2}"},
		{"{i8,{i32,c},c}", "{i8,{i32,c},c}", 16, 3, words(0x000000070000007f, 0x0000000900000041), "{127, {7, 'A'}, '\\t'}"},
		{"{f32,f32,f}", "{f32,f32,f64}", 16, 0, words(0xc01000003fc00000, 0x4004000000000000), "{1.5, -2.25, 2.5}"},
		{"{i64,f64}", "{i64,f64}", 16, 1, words(^uint64(8), 0x3fd0000000000000), "{-9, 0.25}"},
		{"{f32,{f32,i32}}", "{f32,{f32,i32}}", 12, 2, words(0x3fc000003fc00000, 7), "{1.5, {1.5, 7}}"},
		{"{u8,f80}", "{u8,f80}", 32, 1, words(200, 0, 0xa000000000000000, 0x4000), "{200, 2.5}"},
		{"{f128}", "{f128}", 16, 0, words(0, 0x4000c00000000000), "{3.5}"},
		{"{p,u16,x8,...}", "{p,u16,x8,...}", 16, 3, words(0x1234, 0xff0007), "{0x1234, 7, 0xff, ...}"},
		{"{{i64,i64},{i64}}", "{{i64,i64},{i64}}", 24, 7, words(1, 2), "{{1, 2}, ?}"},
	} {
		l, err := ParseLayout(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		if l.String() != c.canon || l.Size() != c.size || l.Integers() != c.ints {
			t.Errorf("%s: %s of %d bytes, integer eightbytes %b; want %s of %d, %b", c.text, l, l.Size(), l.Integers(), c.canon, c.size, c.ints)
		}
		if got := l.Show(c.data); got != c.show {
			t.Errorf("%s: shows %s, want %s", c.text, got, c.show)
		}
	}
	for _, bad := range []string{
		"", "{}", "i32", "{i32", "{i32,}", "{,i32}", "{i7}", "{f16}", "{p8}", "{s}", "{e:color}", "{i32}}", "{i32} ",
		"{...}", "{i32,...,i32}", "{{i32,...}}", "{i64,i64,i64,i64,i64}", "{" + strings.Repeat("c,", 32) + "c}",
	} {
		if l, err := ParseLayout(bad); !errors.Is(err, ErrLayout) {
			t.Errorf("%q: read as %v, %v; want ErrLayout", bad, l, err)
		}
	}
}

// TestLongDouble: x87 extended and binary128 values read as the
// shortest digits that give them back at their precision, infinities,
// NaNs, zeros and the smallest denormals among them.
func TestLongDouble(t *testing.T) {
	f80 := func(mant uint64, se uint16) []byte {
		b := binary.LittleEndian.AppendUint64(nil, mant)
		return binary.LittleEndian.AppendUint64(b, uint64(se)|0xdead0000) // the padding is undefined
	}
	f128 := func(lo, hi uint64) []byte {
		return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, lo), hi)
	}
	for _, c := range []struct {
		b    []byte
		f128 bool
		want string
	}{
		{f80(0xa000000000000000, 0x4000), false, "2.5"},
		{f80(0xe000000000000000, 0xc000), false, "-3.5"},
		{f80(0xcccccccccccccccd, 0x3ffb), false, "0.1"},
		{f80(0, 0), false, "0"},
		{f80(0, 0x8000), false, "-0"},
		{f80(0x8000000000000000, 0x7fff), false, "+Inf"},
		{f80(0x8000000000000000, 0xffff), false, "-Inf"},
		{f80(0xc000000000000000, 0x7fff), false, "NaN"},
		{f80(0x4000000000000000, 0x4000), false, "NaN"}, // an unnormal
		{f80(1, 0), false, "4e-4951"},
		{f128(0, 0x4000c00000000000), true, "3.5"},
		{f128(0, 0xc000400000000000), true, "-2.5"},
		{f128(0x999999999999999a, 0x3ffb999999999999), true, "0.1"},
		{f128(0, 0x8000000000000000), true, "-0"},
		{f128(0, 0x7fff000000000000), true, "+Inf"},
		{f128(1, 0x7fff000000000000), true, "NaN"},
		{f128(1, 0), true, "6e-4966"},
	} {
		got := showF80(c.b)
		if c.f128 {
			got = showF128(c.b)
		}
		if got != c.want {
			t.Errorf("%x (binary128 %v): %s, want %s", c.b, c.f128, got, c.want)
		}
	}
}
