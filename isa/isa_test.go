package isa

import (
	"debug/elf"
	"errors"
	"testing"

	"ftpatch/arch"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
	"ftpatch/nops"
)

// TestIsPLT: every section the linkers put PLT stubs in, and nothing
// else. .plt.bnd (GNU ld -z bndplt: `bnd jmp` stubs, which PLTSlot
// reads) is one, so a name list that misses it loses the calls that go
// through it.
func TestIsPLT(t *testing.T) {
	for name, want := range map[string]bool{
		".plt": true, ".plt.sec": true, ".plt.got": true, ".plt.bnd": true, ".iplt": true,
		".got.plt": false, ".pltx": false, ".text": false, "": false, ".rela.plt": false,
	} {
		if got := IsPLT(name); got != want {
			t.Errorf("IsPLT(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestFor: every architecture has its ISA, with its own relocation
// types; an unknown one gets an ISA that recognises nothing.
func TestFor(t *testing.T) {
	for _, c := range []struct {
		a        arch.Arch
		abs64    uint32
		relative uint32
		runtime  bool
	}{
		{arch.X86_64, uint32(elf.R_X86_64_64), uint32(elf.R_X86_64_RELATIVE), true},
		{arch.ARM64, uint32(elf.R_AARCH64_ABS64), uint32(elf.R_AARCH64_RELATIVE), true},
	} {
		i := For(c.a)
		if i.Arch != c.a || i.Relocs.Abs64 != c.abs64 || i.Relocs.Relative != c.relative || i.Runtime != c.runtime {
			t.Errorf("For(%v) = %v, abs64 %d, relative %d, runtime %v", c.a, i.Arch, i.Relocs.Abs64, i.Relocs.Relative, i.Runtime)
		}
		if !i.Relocs.IsSlot(i.Relocs.GlobDat) || !i.Relocs.IsSlot(i.Relocs.JumpSlot) || i.Relocs.IsSlot(i.Relocs.Relative) {
			t.Errorf("For(%v): IsSlot wrong", c.a)
		}
	}
	u := For(arch.Unknown)
	if u.Arch != arch.Unknown || u.Runtime || u.Relocs.Name(7) != "reloc(7)" {
		t.Errorf("For(Unknown) = %+v", u)
	}
	if _, ok := u.PLTSlot([]byte{0xff, 0x25, 0, 0, 0, 0}, 0); ok {
		t.Error("For(Unknown).PLTSlot read a stub")
	}
	if _, _, err := u.CallTarget([]byte{0xe8, 0, 0, 0, 0}, 0, 5); err == nil {
		t.Error("For(Unknown).CallTarget read a call")
	}
}

// TestCallTarget: each ISA reads its site calls, checked against
// x/arch by the ISA packages' tests, and refuses other bytes.
func TestCallTarget(t *testing.T) {
	for _, c := range []struct {
		a       arch.Arch
		b       []byte
		pc      uint64
		n       int
		addr    uint64
		viaSlot bool
		ok      bool
	}{
		{arch.X86_64, []byte{0xe8, 0xfb, 0x0f, 0, 0}, 0x1000, 5, 0x2000, false, true},
		{arch.X86_64, []byte{0x67, 0xe8, 0xfa, 0x0f, 0, 0}, 0x1000, 6, 0x2000, false, true},
		{arch.X86_64, []byte{0xff, 0x15, 0xfa, 0x0f, 0, 0}, 0x1000, 6, 0x2000, true, true},
		{arch.X86_64, []byte{0xe8, 0xfb, 0x0f, 0, 0, 0x90}, 0x1000, 6, 0, false, false}, // e8 is 5 bytes, not 6
		{arch.X86_64, []byte{0x0f, 0x1f, 0x44, 0, 0}, 0x1000, 5, 0, false, false},
		{arch.ARM64, []byte{0x00, 0x04, 0x00, 0x94}, 0x1000, 4, 0x2000, false, true}, // bl .+0x1000
		{arch.ARM64, []byte{0x1f, 0x20, 0x03, 0xd5}, 0x1000, 4, 0, false, false},     // nop
	} {
		addr, via, err := For(c.a).CallTarget(c.b, c.pc, c.n)
		if (err == nil) != c.ok || addr != c.addr || via != c.viaSlot {
			t.Errorf("%v % x at %#x (%d): %#x %v %v; want %#x %v ok %v", c.a, c.b, c.pc, c.n, addr, via, err, c.addr, c.viaSlot, c.ok)
		}
	}
}

// TestSiteNop: the disabled form of each ISA's call site.
func TestSiteNop(t *testing.T) {
	for _, c := range []struct {
		a  arch.Arch
		n  int
		ok bool
	}{{arch.X86_64, 5, true}, {arch.X86_64, 6, true}, {arch.X86_64, 4, false}, {arch.ARM64, 4, true}, {arch.ARM64, 8, true}, {arch.ARM64, 12, false}} {
		b, err := For(c.a).SiteNop(c.n)
		if (err == nil) != c.ok || (c.ok && len(b) != c.n) {
			t.Errorf("%v SiteNop(%d) = % x, %v", c.a, c.n, b, err)
		}
	}
}

// TestSiteCall: the enabled form of each ISA's call site, decoded back
// with x/arch as the one call instruction of the site's length (on
// arm64's 8-byte entry site, `mov x9, x30` and then the call), reaching
// the target (read again by CallTarget); a site of another length and a
// target out of reach are errors, never a truncated call.
func TestSiteCall(t *testing.T) {
	const pc, target = 0x401000, 0x402000
	for _, c := range []struct {
		a    arch.Arch
		n    int
		lead string // what comes before the call, as x/arch prints it
		op   string
	}{{arch.X86_64, 5, "", "CALL"}, {arch.X86_64, 6, "", "CALL"}, {arch.ARM64, 4, "", "BL"}, {arch.ARM64, 8, "MOV X9, X30", "BL"}} {
		i := For(c.a)
		b, err := i.SiteCall(pc, target, c.n)
		if err != nil || len(b) != c.n {
			t.Errorf("%v SiteCall(%d) = % x, %v", c.a, c.n, b, err)
			continue
		}
		call, at := b, uint64(pc)
		if c.lead != "" {
			in, err := arm64.Decode(b)
			if err != nil || in.String() != c.lead {
				t.Errorf("%v SiteCall(%d) = % x starts %q (%v), want %q", c.a, c.n, b, in.String(), err, c.lead)
			}
			call, at = b[4:], pc+4
		}
		var op string
		var n int
		if c.a == arch.X86_64 {
			in, err := x86.Decode(call)
			op, n = in.Op.String(), in.Len
			if err != nil {
				t.Errorf("%v % x: %v", c.a, call, err)
			}
		} else {
			in, err := arm64.Decode(call)
			op, n = in.Op.String(), 4
			if err != nil {
				t.Errorf("%v % x: %v", c.a, call, err)
			}
		}
		if op != c.op || n != len(call) {
			t.Errorf("%v SiteCall(%d) = % x: the call decodes as %s of %d bytes, want %s of %d", c.a, c.n, b, op, n, c.op, len(call))
		}
		if got, via, err := i.CallTarget(call, at, len(call)); err != nil || via || got != target {
			t.Errorf("%v % x reaches %#x (via slot %v, %v), want %#x", c.a, b, got, via, err, uint64(target))
		}
		if b, err := i.SiteCall(pc, target, c.n+2); err == nil {
			t.Errorf("%v SiteCall(%d) = % x, want an error", c.a, c.n+2, b)
		}
		if b, err := i.SiteCall(pc, pc+1<<40, c.n); !errors.Is(err, nops.ErrRange) {
			t.Errorf("%v SiteCall out of reach = % x, %v; want ErrRange", c.a, b, err)
		}
	}
	if b, err := For(arch.Unknown).SiteCall(pc, target, 5); err == nil {
		t.Errorf("For(Unknown).SiteCall = % x", b)
	}
}
