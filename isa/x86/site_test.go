package x86

import (
	"encoding/hex"
	"testing"

	"debug/elf"
	"golang.org/x/arch/x86/x86asm"
)

// TestX86Fast: every form Fast recognises by its bytes is, as x/arch
// decodes it, the instruction its comment names, of the length Fast
// says, and one Class takes for a prologue's.
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
		n, ok := Fast(b)
		in, err := x86asm.Decode(b, 64)
		if err != nil {
			t.Errorf("%s: %v", c.hex, err)
			continue
		}
		if got := x86asm.GNUSyntax(in, 0, nil); !ok || n != in.Len || n != len(b) || got != c.asm || Class(in) != ClassPrologue {
			t.Errorf("%s: Fast %d %v; x/arch: %q, %d bytes, class %d; want %q, %d bytes, a prologue's", c.hex, n, ok, got, in.Len, Class(in), c.asm, len(b))
		}
	}
	// Look-alikes it must leave to the decoder: rm 5 with REX.B is %r13,
	// not %rbp; a load is not a store.
	for _, h := range []string{"41897dfc", "8b7dfc", "488b45e8", "4883c418", "90"} {
		b, _ := hex.DecodeString(h)
		if n, ok := Fast(b); ok {
			t.Errorf("%s: Fast took it (%d bytes)", h, n)
		}
	}
}

// TestPLTSlot reads the slot of the PLT stubs the linkers write, and
// refuses other code.
func TestPLTSlot(t *testing.T) {
	for _, c := range []struct {
		hex  string
		pc   uint64
		slot uint64 // 0: not a PLT stub
	}{
		{"ff25e22f0000", 0x1030, 0x1030 + 6 + 0x2fe2},            // jmp *0x2fe2(%rip)
		{"f30f1efaf2ff25ad2f0000", 0x1060, 0x1060 + 11 + 0x2fad}, // endbr64; bnd jmp *0x2fad(%rip)
		{"f30f1efaff25ad2f0000", 0x1060, 0x1060 + 10 + 0x2fad},   // endbr64; jmp *0x2fad(%rip)
		{"e9e22f0000", 0x1030, 0},                                // jmp rel32
		{"ff24c5e22f0000", 0x1030, 0},                            // jmp *0x2fe2(,%rax,8)
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

// TestLoopHead: an x86-64 NOP is a loop's padding when it ends 8-aligned
// and a later jump (of any form) comes back to its end.
func TestLoopHead(t *testing.T) {
	for _, c := range []struct {
		hex   string // the function from the NOP's end on
		start uint64 // address of the NOP's end
		want  bool
	}{
		{"ffcb75fc", 0x1010, true},          // dec %ebx; jne back
		{"ffcb75fc", 0x1014, false},         // the same, not 8-aligned: not padding
		{"ffcbebfc", 0x1010, true},          // dec %ebx; jmp back
		{"ffcb0f85f8ffffff", 0x1010, true},  // dec %ebx; jne back (rel32)
		{"ffcbe2fc", 0x1010, true},          // dec %ebx; loop back
		{"ffcb75fdc3", 0x1010, false},       // a jump elsewhere
		{"ffcbe8f9ffffffc3", 0x1010, false}, // a call back is no loop
		{"ffcb0f0b", 0x1010, false},         // ud2 decodes
		{"ffcbd6", 0x1010, true},            // undecodable: unsure, so padding
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		// The NOP itself is not part of what is searched: head is 0 in
		// these bytes.
		if got := LoopHead(b, c.start, 0); got != c.want {
			t.Errorf("%s ending at %#x: loop head %v, want %v", c.hex, c.start, got, c.want)
		}
	}
}

// TestCallAt reads each call form, checks that x/arch decodes it as the
// call of that length CallAt says (CheckCall), and refuses the rest.
func TestCallAt(t *testing.T) {
	for _, c := range []struct {
		hex  string
		pc   uint64
		ok   bool
		want CallInsn
	}{
		{"e8fb0f0000", 0x1000, true, CallInsn{FormRel32, 5, 0x2000}},    // call 0x2000
		{"67e8fa0f0000", 0x1000, true, CallInsn{FormAddr32, 6, 0x2000}}, // addr32 call 0x2000
		{"ff15fa0f0000", 0x1000, true, CallInsn{FormRIP, 6, 0x2000}},    // call *0xffa(%rip)
		{"e8fbffffff", 0x1000, true, CallInsn{FormRel32, 5, 0x1000}},    // call to itself
		{"e9fb0f0000", 0x1000, false, CallInsn{}},                       // jmp
		{"ff25fa0f0000", 0x1000, false, CallInsn{}},                     // jmp *0xffa(%rip)
		{"e8fb0f00", 0x1000, false, CallInsn{}},                         // cut short
		{"0f1f440000", 0x1000, false, CallInsn{}},                       // nopl
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := CallAt(b, c.pc)
		if ok != c.ok || got != c.want {
			t.Errorf("CallAt(%s, %#x) = %+v, %v; want %+v, %v", c.hex, c.pc, got, ok, c.want, c.ok)
		}
		if ok {
			if err := CheckCall(b, got.Len); err != nil {
				t.Errorf("%s: x/arch disagrees: %v", c.hex, err)
			}
		}
	}
}

// TestSiteNop: the NOP of each site length decodes as one NOP of that
// length, and SiteNopAt and CountNops read it back.
func TestSiteNop(t *testing.T) {
	for _, n := range []int{5, 6} {
		b, err := SiteNop(n)
		if err != nil {
			t.Fatal(err)
		}
		if in, err := x86asm.Decode(b, 64); err != nil || in.Op != x86asm.NOP || in.Len != n {
			t.Errorf("SiteNop(%d) = % x: x/arch %v, %v", n, b, in, err)
		}
		if m, ok := SiteNopAt(b); !ok || m != n {
			t.Errorf("SiteNopAt(% x) = %d, %v", b, m, ok)
		}
		if k, err := CountNops(b, n); k != 1 || err != nil {
			t.Errorf("CountNops(% x) = %d, %v; want 1", b, k, err)
		}
	}
	if _, err := SiteNop(4); err == nil {
		t.Error("SiteNop(4): no error")
	}
	if k, err := CountNops([]byte{0x90, 0x90, 0x90, 0x66, 0x90}, 5); k != 4 || err != nil {
		t.Errorf("CountNops(gcc padding) = %d, %v; want 4", k, err)
	}
}

// TestIsNopInsn: a NOP as Decode returns it is one; endbr64, which
// Decode returns without an Op, and a call are not.
func TestIsNopInsn(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want bool
	}{{NOP5, true}, {NOP6, true}, {[]byte{0x90}, true}, {Endbr64, false}, {[]byte{0xe8, 0, 0, 0, 0}, false}} {
		in, err := Decode(c.b)
		if err != nil {
			t.Fatalf("% x: %v", c.b, err)
		}
		if got := IsNopInsn(in); got != c.want {
			t.Errorf("IsNopInsn(% x) = %v, want %v", c.b, got, c.want)
		}
	}
}

// TestCallReloc: the relocations of a call of a hook in an object, and
// where each puts the call.
func TestCallReloc(t *testing.T) {
	for _, c := range []struct {
		t    elf.R_X86_64
		back uint64
		n    int
		ok   bool
	}{
		{elf.R_X86_64_PLT32, 1, 5, true}, {elf.R_X86_64_PC32, 1, 5, true},
		{elf.R_X86_64_GOTPCRELX, 2, 6, true}, {elf.R_X86_64_GOTPCREL, 2, 6, true},
		{elf.R_X86_64_64, 0, 0, false}, {elf.R_X86_64_REX_GOTPCRELX, 0, 0, false},
	} {
		back, n, ok := CallReloc(uint32(c.t))
		if back != c.back || n != c.n || ok != c.ok {
			t.Errorf("CallReloc(%v) = %d, %d, %v; want %d, %d, %v", c.t, back, n, ok, c.back, c.n, c.ok)
		}
	}
}
