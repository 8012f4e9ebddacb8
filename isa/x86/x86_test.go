package x86

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"ftpatch/arch"

	"ftpatch/isa/internal/insns"
	"ftpatch/nops"
	"golang.org/x/arch/x86/x86asm"
)

// insnsFile lists every instruction the ISA packages write or recognise.
const insnsFile = "../testdata/insns.txt"

var x86Styles = []NopStyle{P6, K8, JmpPad}

// x86NopSizes is the range of n Nop accepts for each style.
func x86NopSizes(s NopStyle) (lo, hi int) {
	if s == JmpPad {
		return 1, MaxJmpNop
	}
	return 1, MaxNop
}

func decodeX86(t *testing.T, b []byte) x86asm.Inst {
	t.Helper()
	inst, err := x86asm.Decode(b, 64)
	if err != nil {
		t.Fatalf("x86asm.Decode(% x): %v", b, err)
	}
	return inst
}

// TestX86Nop decodes every NOP Nop makes: P6 and K8 are one NOP
// instruction of exactly n bytes; JmpPad is a jump whose target is the
// end of its n bytes, followed by 0x90 padding only.
func TestX86Nop(t *testing.T) {
	for _, style := range x86Styles {
		lo, hi := x86NopSizes(style)
		for n := lo; n <= hi; n++ {
			t.Run(fmt.Sprintf("%v/%d", style, n), func(t *testing.T) {
				b, err := Nop(n, style)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) != n {
					t.Fatalf("got %d bytes (% x), want %d", len(b), b, n)
				}
				inst := decodeX86(t, b)
				if style != JmpPad || n == 1 {
					if inst.Op != x86asm.NOP || inst.Len != n {
						t.Fatalf("% x decodes as %v (%d bytes), want one NOP of %d", b, inst, inst.Len, n)
					}
					return
				}
				rel, _ := inst.Args[0].(x86asm.Rel)
				if inst.Op != x86asm.JMP || inst.Len != 2 || inst.Len+int(rel) != n {
					t.Fatalf("% x decodes as %v (%d bytes), want jmp to offset %d", b, inst, inst.Len, n)
				}
				for i := 2; i < n; i++ {
					if pad := decodeX86(t, b[i:]); b[i] != 0x90 || pad.Op != x86asm.NOP || pad.Len != 1 {
						t.Fatalf("padding byte %d is %#x (%v), want 0x90 nop", i, b[i], pad)
					}
				}
			})
		}
	}
}

func TestX86NopErrors(t *testing.T) {
	tests := []struct {
		n     int
		style NopStyle
	}{
		{0, P6}, {-1, P6}, {9, P6},
		{0, K8}, {9, K8},
		{0, JmpPad}, {MaxJmpNop + 1, JmpPad}, {math.MaxInt, JmpPad},
		{5, NopStyle(3)},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%d", tt.style, tt.n), func(t *testing.T) {
			if b, err := Nop(tt.n, tt.style); err == nil {
				t.Fatalf("got % x, want an error", b)
			}
		})
	}
}

// TestX86NopConstants checks that the exported NOPs are the table's, and
// that Nop hands out copies: a caller changing one must not change the
// next site's bytes.
func TestX86NopConstants(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		n    int
	}{{"NOP5", NOP5, 5}, {"NOP6", NOP6, 6}} {
		b, err := Nop(c.n, P6)
		if err != nil || !bytes.Equal(b, c.b) {
			t.Errorf("Nop(%d, p6) = % x, %v; want %s = % x", c.n, b, err, c.name, c.b)
		}
	}
	b, _ := Nop(5, P6)
	b[0] = 0xcc
	if again, _ := Nop(5, P6); !bytes.Equal(again, NOP5) {
		t.Errorf("changing a result changed the table: % x", again)
	}
}

func TestX86NopStyleString(t *testing.T) {
	for s, want := range map[NopStyle]string{P6: "p6", K8: "k8", JmpPad: "jmp", 9: "NopStyle(9)"} {
		if got := s.String(); got != want {
			t.Errorf("NopStyle(%d).String() = %q, want %q", uint8(s), got, want)
		}
	}
}

// TestX86Rel32 decodes Call, Jmp and Call6 output and checks
// that the decoded displacement reaches the requested target, at the
// ±2 GiB edges and one byte past them.
func TestX86Rel32(t *testing.T) {
	encoders := []struct {
		name string
		f    func(site, target uint64) ([]byte, error)
		size int
		op   x86asm.Op
	}{
		{"Call", Call, 5, x86asm.CALL},
		{"Jmp", Jmp, 5, x86asm.JMP},
		{"Call6", Call6, 6, x86asm.CALL},
	}
	for _, enc := range encoders {
		for _, site := range []uint64{0, 0x401000, 0x7f0000001000, math.MaxUint64 - 0xfff} {
			end := site + uint64(enc.size)
			tests := []struct {
				name   string
				target uint64
				ok     bool
			}{
				{"self", site, true},
				{"forward", site + 0x1000, true},
				{"backward", site - 0x1000, true},
				{"max", end + math.MaxInt32, true},
				{"max+1", end + math.MaxInt32 + 1, false},
				{"min", end - 1<<31, true},
				{"min-1", end - 1<<31 - 1, false},
				{"far", site + 1<<40, false},
				{"far back", site - 1<<40, false},
			}
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%s/%#x/%s", enc.name, site, tt.name), func(t *testing.T) {
					b, err := enc.f(site, tt.target)
					if !tt.ok {
						checkRangeError(t, b, err, site, tt.target, 1<<31)
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					inst := decodeX86(t, b)
					rel, isRel := inst.Args[0].(x86asm.Rel)
					if inst.Op != enc.op || inst.Len != enc.size || len(b) != enc.size || !isRel {
						t.Fatalf("% x decodes as %v (%d bytes), want one %d-byte %v rel32", b, inst, inst.Len, enc.size, enc.op)
					}
					if got := site + uint64(inst.Len) + uint64(int64(rel)); got != tt.target {
						t.Errorf("% x at %#x reaches %#x, want %#x", b, site, got, tt.target)
					}
				})
			}
		}
	}
}

// TestX86Call6Form pins the 6-byte call to `67 e8`: one instruction whose
// return address, site+6, is the end of the site in every state.
func TestX86Call6Form(t *testing.T) {
	b, err := Call6(0x401000, 0x402000)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0x67 || b[1] != 0xe8 {
		t.Errorf("Call6 = % x, want 67 e8 rel32", b)
	}
}

// checkRangeError checks that an encoder refused a target with a
// *nops.RangeError carrying the request, matching nops.ErrRange and nothing else.
func checkRangeError(t *testing.T, b []byte, err error, from, to uint64, max int64) {
	t.Helper()
	if b != nil {
		t.Errorf("got bytes % x with the error", b)
	}
	var re *nops.RangeError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want *nops.RangeError", err)
	}
	if re.From != from || re.To != to || re.Max != max {
		t.Errorf("nops.RangeError = %+v, want From %#x To %#x Max %#x", *re, from, to, max)
	}
	if !errors.Is(err, nops.ErrRange) || errors.Is(err, nops.ErrAlign) || errors.Is(err, nops.ErrUnexpected) {
		t.Errorf("errors.Is: %v should match nops.ErrRange only", err)
	}
}

// TestX86IsNop checks recognition of every NOP Nop makes, alone and with
// code after it, and refusal of calls, other NOPs and damaged padding.
func TestX86IsNop(t *testing.T) {
	for _, style := range x86Styles {
		lo, hi := x86NopSizes(style)
		for n := lo; n <= hi; n++ {
			nop, err := Nop(n, style)
			if err != nil {
				t.Fatal(err)
			}
			for _, tail := range [][]byte{nil, {0xe8, 0x00}, {0x90, 0x90}} {
				b := append(bytes.Clone(nop), tail...)
				if got, ok := IsNop(b); !ok || got != n {
					t.Errorf("IsNop(% x) = %d, %v; want %d, true (%v)", b, got, ok, n, style)
				}
			}
		}
	}
	negatives := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"call", []byte{0xe8, 0x12, 0x34, 0x56, 0x78}},                // call rel32
		{"call gotpcrel", []byte{0xff, 0x15, 0x00, 0x00, 0x00, 0x00}}, // call *0x0(%rip)
		{"addr32 call", []byte{0x67, 0xe8, 0x00, 0x00, 0x00, 0x00}},   // addr32 call rel32
		{"jmp rel32", []byte{0xe9, 0x00, 0x00, 0x00, 0x00}},           // jmp .+5: not one of ours
		{"truncated nop5", []byte{0x0f, 0x1f, 0x44, 0x00}},
		{"clang nop5", []byte{0x0f, 0x1f, 0x44, 0x00, 0x08}},           // nopl 0x8(%rax,%rax,1)
		{"short padding", []byte{0xeb, 0x03, 0x90, 0x90}},              // jmp .+5 with 2 of 3 bytes
		{"zero padding", []byte{0xeb, 0x03, 0x90, 0x00, 0x90}},         // never 0x00
		{"backward jmp", []byte{0xeb, 0xfe}},                           // jmp . (spins)
		{"int3", []byte{0xcc, 0x90, 0x90, 0x90, 0x90}},                 // int3 mid-patch
		{"k8 without nop", []byte{0x66, 0x66, 0x66, 0x66, 0xe8, 0x00}}, // prefixes on something else
	}
	for _, tt := range negatives {
		t.Run(tt.name, func(t *testing.T) {
			if n, ok := IsNop(tt.b); ok || n != 0 {
				t.Errorf("IsNop(% x) = %d, %v; want 0, false", tt.b, n, ok)
			}
		})
	}
}

// FuzzX86IsNop checks that whatever IsNop accepts is exactly an output
// of Nop, and decodes as such.
func FuzzX86IsNop(f *testing.F) {
	for _, l := range insns.Read(f, insnsFile) {
		if l.Arch == arch.X86_64 {
			f.Add(l.B)
		}
	}
	for _, style := range x86Styles {
		for _, n := range []int{1, 2, 5, 6, 8} {
			b, _ := Nop(n, style)
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := IsNop(b)
		if !ok {
			if n != 0 {
				t.Fatalf("IsNop(% x) = %d, false", b, n)
			}
			return
		}
		if n < 1 || n > len(b) {
			t.Fatalf("IsNop(% x) = %d, true: length out of range", b, n)
		}
		for _, style := range x86Styles {
			if nop, err := Nop(n, style); err == nil && bytes.Equal(nop, b[:n]) {
				return
			}
		}
		t.Fatalf("IsNop(% x) = %d, true, but no style makes % x", b, n, b[:n])
	})
}
