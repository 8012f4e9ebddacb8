package arm64

import (
	"encoding/hex"
	"testing"

	"debug/elf"
	"golang.org/x/arch/arm64/arm64asm"
)

// TestPLTSlot reads the slot of the PLT stubs the linkers write, and
// refuses other code.
func TestPLTSlot(t *testing.T) {
	for _, c := range []struct {
		hex  string
		pc   uint64
		slot uint64 // 0: not a PLT stub
	}{
		{"900000b0110a40f9104200911f0220d6", 0x400600, 0x411000 + 0x10},         // adrp x16, 0x411000; ldr x17, [x16, #16]; add; br x17
		{"5f2403d5900000b0110a40f9104200911f0220d6", 0x400600, 0x411000 + 0x10}, // bti c; the same
		{"900000b0110a40f9", 0x401ffc, 0x412000 + 0x10},                         // from pc's page, not pc
		{"900000d0110a40f9", 0x400600, 0x412000 + 0x10},                         // adrp x16, 18 pages on
		{"910000b0310a40f9", 0x400600, 0},                                       // adrp x17; ldr x17, [x17]
		{"1f2003d5", 0x400600, 0},                                               // nop
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		if slot, ok := PLTSlot(b, c.pc); ok != (c.slot != 0) || slot != c.slot {
			t.Errorf("%s at %#x: slot %#x %v, want %#x", c.hex, c.pc, slot, ok, c.slot)
		}
	}
}

// TestVeneer follows the veneers GNU ld writes for a bl beyond its reach
// (adrp x16; add x16; br x16: here ld's ___mcount_veneer, 768 MiB below
// _mcount) and the runtime's (ldr x16, .+8; br x16; .quad), each
// instruction as x/arch decodes it, and refuses other code.
func TestVeneer(t *testing.T) {
	for _, c := range []struct {
		hex  string
		pc   uint64
		to   uint64 // 0: not a veneer
		insn []string
	}{
		{"1020e8b010422691" + "00021fd6" + "00000000", 0x30000078, 0x401990, []string{"ADRP X16, .+0xffffffffd0401000", "ADD X16, X16, #0x990", "BR X16"}},
		{"50000058" + "00021fd6" + "8877665544332211", 0x7f0000001000, 0x1122334455667788, []string{"LDR X16, .+0x8", "BR X16"}},
		{"1020e8b010422691" + "00021fd6", 0x30000ffc, 0x401990, nil}, // from pc's page, not pc
		{"1120e8b031422691" + "20021fd6", 0x30000078, 0, nil},        // through x17
		{"1020e8b010422691" + "1f2003d5", 0x30000078, 0, nil},        // no br
		{"50000058" + "00021fd6" + "8877", 0x1000, 0, nil},           // truncated
		{"1f2003d5", 0x1000, 0, nil},
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		if to, ok := Veneer(b, c.pc); ok != (c.to != 0) || to != c.to {
			t.Errorf("%s at %#x: leads to %#x %v, want %#x", c.hex, c.pc, to, ok, c.to)
		}
		for i, want := range c.insn {
			in, err := arm64asm.Decode(b[4*i:])
			if err != nil || in.String() != want {
				t.Errorf("%s: word %d decodes as %q (%v), want %q", c.hex, i, in.String(), err, want)
			}
		}
	}
}

// TestMcountNopFound: a NOP'd -pg site is found again after gcc's `mov
// x0, x30` (stores between allowed), never after clang's prologue, which
// has none, nor past an instruction that may write x0.
func TestMcountNopFound(t *testing.T) {
	const stp, movFP, str, movX0w1 = 0xa9bf7bfd, 0x910003fd, 0xf9000bf3, 0xaa0103e0 // stp x29, x30, [sp, #-16]!; mov x29, sp; str x19, [sp, #16]; mov x0, x1
	for _, c := range []struct {
		name  string
		words []uint32 // the last is the site
		found bool
	}{
		{"gcc", []uint32{stp, movFP, MovX0X30, NOP}, true},
		{"gcc, a store between", []uint32{stp, movFP, MovX0X30, str, NOP}, true},
		{"clang", []uint32{0xd503233f, stp, movFP, NOP}, false}, // paciasp first,
		{"x0 written between", []uint32{stp, movFP, MovX0X30, movX0w1, NOP}, false},
		{"at the start", []uint32{NOP}, false},
	} {
		b := Bytes(c.words...)
		if got := McountNopFound(b, uint64(len(b)-4)); got != c.found {
			t.Errorf("%s: %v, want %v", c.name, got, c.found)
		}
	}
}

// TestARM64IsStore: the stores gcc puts between `mov x0, x30` and `bl
// _mcount` are stores, as x/arch decodes them, and nothing else is.
func TestARM64IsStore(t *testing.T) {
	for _, c := range []struct {
		w    uint32
		op   string // as x/arch names it
		want bool
	}{
		{0xa9bf7bfd, "STP", true},  // stp x29, x30, [sp, #-16]!
		{0xa9048be1, "STP", true},  // stp x1, x2, [sp, #72]
		{0xf9003fe7, "STR", true},  // str x7, [sp, #120]
		{0x3d801fe0, "STR", true},  // str q0, [sp, #112]
		{0xad031fe6, "STP", true},  // stp q6, q7, [sp, #96]
		{0xb81fc3a1, "STUR", true}, // stur w1, [x29, #-4]
		{0xfc190fe8, "STR", true},  // str d8, [sp, #-112]!
		{0x39007fe2, "STRB", true}, // strb w2, [sp, #31]
		{0x6d0127e8, "STP", true},  // stp d8, d9, [sp, #16]
		{0xf80107f3, "STR", true},  // str x19, [sp], #16
		{0xf8236841, "STR", false}, // str x1, [x2, x3]: register offset, not a prologue's
		{0xf9400bf3, "LDR", false}, // ldr x19, [sp, #16]
		{0xa8c17bfd, "LDP", false}, // ldp x29, x30, [sp], #16
		{0xaa0003f3, "MOV", false}, // mov x19, x0
		{0x90000015, "ADRP", false},
		{0xf85f83a0, "LDUR", false}, // ldur x0, [x29, #-8]
		{0x3dc007e0, "LDR", false},  // ldr q0, [sp, #16]
		{0x39400020, "LDRB", false}, // ldrb w0, [x1]
	} {
		in, err := DecodeWord(c.w)
		if err != nil || in.Op.String() != c.op {
			t.Errorf("%08x: x/arch decodes %v (%v), want %s", c.w, in, err, c.op)
		}
		if got := IsStore(c.w); got != c.want {
			t.Errorf("%08x %v: IsStore %v, want %v", c.w, in, got, c.want)
		}
	}
}

// TestARM64MayWriteX0: what gcc schedules between `mov x0, x30` and `bl
// _mcount` leaves x0 alone; a write to x0 (as x/arch decodes it) does not.
func TestARM64MayWriteX0(t *testing.T) {
	for _, c := range []struct {
		w    uint32
		asm  string // as x/arch prints it (GNU syntax)
		want bool
	}{
		{0x2a0203f3, "mov w19, w2", false},
		{0xa9048be1, "stp x1, x2, [sp,#72]", false},
		{0x3d801fe0, "str q0, [sp,#112]", false},
		{0xd50320ff, "hint #0x7", false}, // xpaclri
		{0xf100043f, "cmp x1, #0x1", false},
		{0xf9400bf3, "ldr x19, [sp,#16]", false},
		{0xaa0103e0, "mov x0, x1", true},
		{0xf9400be0, "ldr x0, [sp,#16]", true},
		{0xa94103f3, "ldp x19, x0, [sp,#16]", true},
		{0x91000400, "add x0, x0, #0x1", true},
		{0x52800000, "mov w0, #0x0", true},
	} {
		in, err := DecodeWord(c.w)
		if err != nil || arm64asm.GNUSyntax(in) != c.asm {
			t.Errorf("%08x: x/arch decodes %q (%v), want %q", c.w, arm64asm.GNUSyntax(in), err, c.asm)
		}
		if got := MayWriteX0(c.w); got != c.want {
			t.Errorf("%08x %s: may write x0 %v, want %v", c.w, c.asm, got, c.want)
		}
	}
}

// TestLiteralAt: the literal needs its 8 bytes at an 8-aligned place
// of a section aligned to 8 at least.
func TestLiteralAt(t *testing.T) {
	for _, c := range []struct {
		at    uint64
		size  int
		align uint64
		want  bool
	}{
		{0x1000, 8, 8, true}, {0x1008, 8, 16, true}, {0x1004, 8, 8, false}, {0x1000, 8, 4, false}, {0x1000, 4, 8, false}, {0x1000, 16, 8, false},
	} {
		if got := LiteralAt(c.at, c.size, c.align); got != c.want {
			t.Errorf("LiteralAt(%#x, %d, %d) = %v, want %v", c.at, c.size, c.align, got, c.want)
		}
	}
}

// TestCallReloc: `bl` is a site, `b` a tail call, anything else no call.
func TestCallReloc(t *testing.T) {
	for r, want := range map[elf.R_AARCH64]CallRelocKind{
		elf.R_AARCH64_CALL26: BLCall, elf.R_AARCH64_JUMP26: TailCall, elf.R_AARCH64_ABS64: NotCall, elf.R_AARCH64_ADR_PREL_PG_HI21: NotCall,
	} {
		if got := CallReloc(uint32(r)); got != want {
			t.Errorf("CallReloc(%v) = %d, want %d", r, got, want)
		}
	}
}
