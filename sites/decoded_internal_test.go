package sites

import (
	"debug/elf"
	"encoding/hex"
	"path/filepath"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/arch"
	"ftpatch/elfx"
)

// TestX86Fast: every form x86Fast recognises by its bytes is, as x/arch
// decodes it, the instruction its comment names, of the length x86Fast
// says, and one x86Class takes for a prologue's.
func TestX86Fast(t *testing.T) {
	for _, c := range []struct{ hex, asm string }{
		{"55", "push %rbp"},
		{"53", "push %rbx"},
		{"50", "push %rax"},
		{"4157", "push %r15"},
		{"4154", "push %r12"},
		{"4883ec18", "sub $0x18,%rsp"},
		{"4881ecd0000000", "sub $0xd0,%rsp"},
		{"89fb", "mov %edi,%ebx"},
		{"4189fe", "mov %edi,%r14d"},
		{"4989f6", "mov %rsi,%r14"},
		{"4889e5", "mov %rsp,%rbp"},
		{"897dfc", "mov %edi,-0x4(%rbp)"},
		{"8955d4", "mov %edx,-0x2c(%rbp)"},
		{"48897de8", "mov %rdi,-0x18(%rbp)"},
		{"4c8945c0", "mov %r8,-0x40(%rbp)"},
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := x86Fast(b)
		in, err := x86asm.Decode(b, 64)
		if err != nil {
			t.Errorf("%s: %v", c.hex, err)
			continue
		}
		if got := x86asm.GNUSyntax(in, 0, nil); !ok || n != in.Len || n != len(b) || got != c.asm || x86Class(in) != classPrologue {
			t.Errorf("%s: x86Fast %d %v; x/arch: %q, %d bytes, class %d; want %q, %d bytes, a prologue's", c.hex, n, ok, got, in.Len, x86Class(in), c.asm, len(b))
		}
	}
	// Look-alikes it must leave to the decoder: rm 5 with REX.B is %r13,
	// not %rbp; a load is not a store.
	for _, h := range []string{"41897dfc", "8b7dfc", "488b45e8", "4883c418", "90"} {
		b, _ := hex.DecodeString(h)
		if n, ok := x86Fast(b); ok {
			t.Errorf("%s: x86Fast took it (%d bytes)", h, n)
		}
	}
}

// TestX86FastAgrees decodes the first instructions of every function in
// the x86-64 fixture objects (gcc and clang, -O0 to -O3) and checks that
// wherever x86Fast recognises an instruction, x/arch decodes the same
// length and a prologue's instruction.
func TestX86FastAgrees(t *testing.T) {
	objs, err := filepath.Glob("testdata/*x86_64*.o")
	if err != nil || len(objs) == 0 {
		t.Fatalf("no x86-64 fixtures: %v", err)
	}
	seen := 0
	for _, path := range objs {
		f, err := elfx.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Arch != arch.X86_64 {
			t.Fatalf("%s: not x86-64", path)
		}
		_, syms, err := f.Symtab()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range syms {
			if s.Type() != elf.STT_FUNC || !s.Defined() || s.Size == 0 {
				continue
			}
			text := f.SectionData(f.Sections[s.Shndx])
			code := text[s.Value : uint64(s.Value)+s.Size]
			for pos, i := 0, 0; pos < len(code) && i < 64; i++ {
				in, err := x86Decode(code[pos:])
				if err != nil {
					break
				}
				if n, ok := x86Fast(code[pos:]); ok {
					seen++
					if n != in.Len || (in.Op != 0 && x86Class(in) != classPrologue) {
						t.Errorf("%s: %s+%d: x86Fast says %d bytes; x/arch %q, %d bytes, class %d", filepath.Base(path), s.Name, pos, n, in, in.Len, x86Class(in))
					}
				}
				pos += in.Len
			}
		}
	}
	if seen < 100 {
		t.Errorf("only %d instructions took the fast path: the fixtures no longer exercise it", seen)
	}
}

// TestPLTSlot reads the slot of the PLT stubs the linkers write, and
// refuses other code.
func TestPLTSlot(t *testing.T) {
	for _, c := range []struct {
		arch arch.Arch
		hex  string
		pc   uint64
		slot uint64 // 0: not a PLT stub
	}{
		{arch.X86_64, "ff25e22f0000", 0x1030, 0x1030 + 6 + 0x2fe2},                          // jmp *0x2fe2(%rip)
		{arch.X86_64, "f30f1efaf2ff25ad2f0000", 0x1060, 0x1060 + 11 + 0x2fad},               // endbr64; bnd jmp *0x2fad(%rip)
		{arch.X86_64, "f30f1efaff25ad2f0000", 0x1060, 0x1060 + 10 + 0x2fad},                 // endbr64; jmp *0x2fad(%rip)
		{arch.X86_64, "e9e22f0000", 0x1030, 0},                                              // jmp rel32
		{arch.X86_64, "ff24c5e22f0000", 0x1030, 0},                                          // jmp *0x2fe2(,%rax,8)
		{arch.ARM64, "900000b0110a40f9104200911f0220d6", 0x400600, 0x411000 + 0x10},         // adrp x16, 0x411000; ldr x17, [x16, #16]; add; br x17
		{arch.ARM64, "5f2403d5900000b0110a40f9104200911f0220d6", 0x400600, 0x411000 + 0x10}, // bti c; the same
		{arch.ARM64, "900000b0110a40f9", 0x401ffc, 0x412000 + 0x10},                         // from pc's page, not pc
		{arch.ARM64, "900000d0110a40f9", 0x400600, 0x412000 + 0x10},                         // adrp x16, 18 pages on
		{arch.ARM64, "910000b0310a40f9", 0x400600, 0},                                       // adrp x17; ldr x17, [x17]
		{arch.ARM64, "1f2003d5", 0x400600, 0},                                               // nop
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		var slot uint64
		var ok bool
		if c.arch == arch.X86_64 {
			slot, ok = x86PLTSlot(b, c.pc)
		} else {
			slot, ok = arm64PLTSlot(b, c.pc)
		}
		if ok != (c.slot != 0) || slot != c.slot {
			t.Errorf("%v %s at %#x: slot %#x %v, want %#x", c.arch, c.hex, c.pc, slot, ok, c.slot)
		}
	}
}

// TestLoopHead: an x86-64 NOP is a loop's padding when it ends 8-aligned
// and a later jump (of any form) comes back to its end.
func TestLoopHead(t *testing.T) {
	for _, c := range []struct {
		arch  arch.Arch
		hex   string // the function from the NOP's end on
		start uint64 // address of the NOP's end
		want  bool
	}{
		{arch.X86_64, "ffcb75fc", 0x1010, true},          // dec %ebx; jne back
		{arch.X86_64, "ffcb75fc", 0x1014, false},         // the same, not 8-aligned: not padding
		{arch.X86_64, "ffcbebfc", 0x1010, true},          // dec %ebx; jmp back
		{arch.X86_64, "ffcb0f85f8ffffff", 0x1010, true},  // dec %ebx; jne back (rel32)
		{arch.X86_64, "ffcbe2fc", 0x1010, true},          // dec %ebx; loop back
		{arch.X86_64, "ffcb75fdc3", 0x1010, false},       // a jump elsewhere
		{arch.X86_64, "ffcbe8f9ffffffc3", 0x1010, false}, // a call back is no loop
		{arch.X86_64, "ffcb0f0b", 0x1010, false},         // ud2 decodes
		{arch.X86_64, "ffcbd6", 0x1010, true},            // undecodable: unsure, so padding
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		// The NOP itself is not part of what is searched: head is 0 in
		// these bytes.
		if got := x86LoopHead(b, c.start, 0); got != c.want {
			t.Errorf("%v %s ending at %#x: loop head %v, want %v", c.arch, c.hex, c.start, got, c.want)
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
		in, err := arm64Op(c.w)
		if err != nil || in.Op.String() != c.op {
			t.Errorf("%08x: x/arch decodes %v (%v), want %s", c.w, in, err, c.op)
		}
		if got := arm64IsStore(c.w); got != c.want {
			t.Errorf("%08x %v: arm64IsStore %v, want %v", c.w, in, got, c.want)
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
		in, err := arm64Op(c.w)
		if err != nil || arm64asm.GNUSyntax(in) != c.asm {
			t.Errorf("%08x: x/arch decodes %q (%v), want %q", c.w, arm64asm.GNUSyntax(in), err, c.asm)
		}
		if got := arm64MayWriteX0(c.w); got != c.want {
			t.Errorf("%08x %s: may write x0 %v, want %v", c.w, c.asm, got, c.want)
		}
	}
}
