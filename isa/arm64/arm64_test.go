package arm64

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"

	"ftpatch/arch"
	"ftpatch/isa/internal/insns"
	"ftpatch/nops"
)

// insnsFile lists every instruction the ISA packages write or recognise.
const insnsFile = "../testdata/insns.txt"

func decodeARM64(t *testing.T, w uint32) arm64asm.Inst {
	t.Helper()
	inst, err := Decode(Bytes(w))
	if err != nil {
		t.Fatalf("Decode(%08x): %v", w, err)
	}
	return inst
}

// TestARM64Constants decodes each constant: the op and operands must be
// the ones its name promises.
func TestARM64Constants(t *testing.T) {
	tests := []struct {
		name string
		w    uint32
		op   arm64asm.Op
		text string // arm64asm's Inst.String, which ends "NOP " in a space
	}{
		{"NOP", NOP, arm64asm.NOP, "NOP"},
		{"MovX9X30", MovX9X30, arm64asm.MOV, "MOV X9, X30"},
		{"MovX17X30", MovX17X30, arm64asm.MOV, "MOV X17, X30"},
		{"MovX0X30", MovX0X30, arm64asm.MOV, "MOV X0, X30"},
		// x/arch has no BTI mnemonic: bti c is HINT #34.
		{"BTIC", BTIC, arm64asm.HINT, "HINT #0x22"},
		{"LdrX16Lit8", LdrX16Lit8, arm64asm.LDR, "LDR X16, .+0x8"},
		{"BrX16", BrX16, arm64asm.BR, "BR X16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := decodeARM64(t, tt.w)
			if inst.Op != tt.op || strings.TrimSpace(inst.String()) != tt.text {
				t.Errorf("%08x decodes as %q (%v), want %q", tt.w, inst, inst.Op, tt.text)
			}
		})
	}
}

// TestARM64Branch decodes BL and B output, at the ±128 MiB edges
// and one word past them, and with misaligned addresses.
func TestARM64Branch(t *testing.T) {
	encoders := []struct {
		name string
		f    func(pc, target uint64) (uint32, error)
		op   arm64asm.Op
		link bool
	}{
		{"BL", BL, arm64asm.BL, true},
		{"B", B, arm64asm.B, false},
	}
	type want int
	const (
		ok want = iota
		outOfRange
		misaligned
	)
	for _, enc := range encoders {
		for _, pc := range []uint64{0, 0x400000, 0xffff800010000000, math.MaxUint64 - 3} {
			tests := []struct {
				name   string
				pc     uint64
				target uint64
				want   want
			}{
				{"self", pc, pc, ok},
				{"forward", pc, pc + 0x1000, ok},
				{"backward", pc, pc - 0x1000, ok},
				{"max", pc, pc + 1<<27 - 4, ok},
				{"max+4", pc, pc + 1<<27, outOfRange},
				{"min", pc, pc - 1<<27, ok},
				{"min-4", pc, pc - 1<<27 - 4, outOfRange},
				{"far", pc, pc + 1<<40, outOfRange},
				{"misaligned target", pc, pc + 0x1002, misaligned},
				{"misaligned pc", pc + 2, pc + 0x1002, misaligned},
				{"misaligned far", pc + 1, pc + 1<<40, misaligned},
			}
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%s/%#x/%s", enc.name, pc, tt.name), func(t *testing.T) {
					w, err := enc.f(tt.pc, tt.target)
					switch tt.want {
					case outOfRange:
						var re *nops.RangeError
						if !errors.As(err, &re) || *re != (nops.RangeError{From: tt.pc, To: tt.target, Max: 1 << 27}) {
							t.Fatalf("got %08x, %v; want nops.RangeError{%#x, %#x, 1<<27}", w, err, tt.pc, tt.target)
						}
						if !errors.Is(err, nops.ErrRange) || errors.Is(err, nops.ErrAlign) {
							t.Errorf("errors.Is: %v should match nops.ErrRange only", err)
						}
						return
					case misaligned:
						if !errors.Is(err, nops.ErrAlign) || errors.Is(err, nops.ErrRange) {
							t.Fatalf("got %08x, %v; want an ErrAlign error only", w, err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					inst := decodeARM64(t, w)
					rel, isRel := inst.Args[0].(arm64asm.PCRel)
					if inst.Op != enc.op || !isRel {
						t.Fatalf("%08x decodes as %v, want %v to a label", w, inst, enc.op)
					}
					if got := tt.pc + uint64(rel); got != tt.target {
						t.Errorf("%08x at %#x reaches %#x (x/arch), want %#x", w, tt.pc, got, tt.target)
					}
					target, link, isBranch := BranchTarget(tt.pc, w)
					if !isBranch || target != tt.target || link != enc.link {
						t.Errorf("BranchTarget(%#x, %08x) = %#x, %v, %v; want %#x, %v, true", tt.pc, w, target, link, isBranch, tt.target, enc.link)
					}
				})
			}
		}
	}
}

// TestARM64BranchTargetOther checks that nothing but B and BL is taken for
// an immediate branch.
func TestARM64BranchTargetOther(t *testing.T) {
	for _, w := range []uint32{
		NOP, MovX9X30, MovX0X30, BTIC,
		0xd61f0200, // br x16
		0xd63f0200, // blr x16
		0xd65f03c0, // ret
		0xb4000040, // cbz x0, .+8
		0x54000040, // b.eq .+8
		0x36000040, // tbz w0, #0, .+8
		0x58000050, // ldr x16, .+8
	} {
		if target, link, ok := BranchTarget(0x400000, w); ok {
			t.Errorf("BranchTarget(%08x) = %#x, %v, true; want not a branch", w, target, link)
		}
	}
}

func TestARM64Bytes(t *testing.T) {
	tests := []struct {
		insns []uint32
		want  []byte
	}{
		{nil, []byte{}},
		{[]uint32{NOP}, []byte{0x1f, 0x20, 0x03, 0xd5}}, // nop
		{[]uint32{BTIC, MovX9X30}, []byte{
			0x5f, 0x24, 0x03, 0xd5, // bti c
			0xe9, 0x03, 0x1e, 0xaa, // mov x9, x30
		}},
	}
	for _, tt := range tests {
		if got := Bytes(tt.insns...); !bytes.Equal(got, tt.want) {
			t.Errorf("Bytes(%08x) = % x, want % x", tt.insns, got, tt.want)
		}
	}
}

// FuzzARM64BranchTarget checks that every decoded B or BL re-encodes to
// the same word, and that x/arch agrees on what it is.
func FuzzARM64BranchTarget(f *testing.F) {
	for _, l := range insns.Read(f, insnsFile) {
		if l.Arch == arch.ARM64 {
			f.Add(uint64(0x400000), uint32(l.B[0])|uint32(l.B[1])<<8|uint32(l.B[2])<<16|uint32(l.B[3])<<24)
		}
	}
	f.Fuzz(func(t *testing.T, pc uint64, w uint32) {
		pc &^= 3
		target, link, ok := BranchTarget(pc, w)
		if !ok {
			return
		}
		enc, op := B, arm64asm.B
		if link {
			enc, op = BL, arm64asm.BL
		}
		if again, err := enc(pc, target); err != nil || again != w {
			t.Fatalf("%08x at %#x decodes to %#x, re-encodes as %08x, %v", w, pc, target, again, err)
		}
		if inst := decodeARM64(t, w); inst.Op != op {
			t.Fatalf("%08x: x/arch says %v, want %v", w, inst, op)
		}
	})
}
