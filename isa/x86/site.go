package x86

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// What a patch site holds and what surrounds it, read back: the three
// call forms, the NOPs, the PLT stubs a call goes through, and the
// instructions of a -pg prologue. sites, record and patch ask these
// functions; none of them matches x86 bytes itself.

// IsEndbr64 reports whether b starts with endbr64, which x/arch's
// decoder does not know (it reads a lone REP prefix).
func IsEndbr64(b []byte) bool { return bytes.HasPrefix(b, Endbr64) }

// Entry is where an entry site starts in text when nothing but endbr64
// comes before it: the function start, or just after its endbr64
// (-fcf-protection).
func Entry(text []byte, start uint64) uint64 {
	if start < uint64(len(text)) && IsEndbr64(text[start:]) {
		return start + 4
	}
	return start
}

// Decode decodes one instruction at b, with endbr64 understood (as an
// instruction of 4 bytes and no Op). An instruction x/arch cannot name
// is an error.
func Decode(b []byte) (x86asm.Inst, error) {
	if IsEndbr64(b) {
		return x86asm.Inst{Len: 4}, nil
	}
	in, err := x86asm.Decode(b, 64)
	if err != nil {
		return in, err
	}
	if in.Op == 0 {
		return in, fmt.Errorf("undecodable instruction % x", b[:min(len(b), in.Len)])
	}
	return in, nil
}

// IsNopInsn reports whether in, decoded by Decode, is a NOP.
func IsNopInsn(in x86asm.Inst) bool { return in.Op == x86asm.NOP }

// Boundary checks that decoding text from `from` reaches `to` exactly:
// a site at `to` starts an instruction rather than sitting inside one.
func Boundary(text []byte, from, to uint64) error {
	for at := from; at < to; {
		in, err := Decode(text[at:])
		if err != nil {
			return fmt.Errorf("decoding at +0x%x from the function start: %w", at-from, err)
		}
		at += uint64(in.Len)
		if at > to {
			return fmt.Errorf("not at an instruction boundary: the instruction at +0x%x spans it", at-uint64(in.Len)-from)
		}
	}
	return nil
}

// CheckCall checks that b starts with a call instruction of n bytes: `e8
// rel32` (5), `ff 15 disp32`, a call through a RIP-relative pointer (6),
// or `67 e8 rel32`, what the linker relaxes that to when the target is
// local (6).
func CheckCall(b []byte, n int) error {
	in, err := Decode(b)
	if err != nil {
		return err
	}
	return CheckCallOf(in, b, n)
}

// CheckCallOf is CheckCall for b's first instruction already decoded as
// in: a linked file's 100k sites are each decoded once, not once per
// check.
func CheckCallOf(in x86asm.Inst, b []byte, n int) error {
	if in.Op != x86asm.CALL || in.Len != n {
		return fmt.Errorf("found %q (%d bytes), want a %d-byte call", in.String(), in.Len, n)
	}
	if n == 6 {
		m, isMem := in.Args[0].(x86asm.Mem)
		_, isRel := in.Args[0].(x86asm.Rel)
		if !(isMem && m.Base == x86asm.RIP) && !(isRel && b[0] == 0x67) {
			return fmt.Errorf("found %q, want a call through a RIP-relative pointer or an addr32 call", in.String())
		}
	}
	return nil
}

// CountNops decodes b's first n bytes as NOPs and returns how many there
// are: 1 for a site that is one NOP, more for a compiler's padding. An
// error says what is not a NOP, or which NOP runs past n.
func CountNops(b []byte, n int) (int, error) {
	count := 0
	for at := 0; at < n; {
		in, err := Decode(b[at:])
		if err != nil {
			return 0, err
		}
		if in.Op != x86asm.NOP {
			return 0, fmt.Errorf("found %q at +%d, want NOPs", in.String(), at)
		}
		at += in.Len
		count++
		if at > n {
			return 0, fmt.Errorf("the NOP at +%d runs past the %d-byte site", at-in.Len, n)
		}
	}
	return count, nil
}

// A CallForm is one of the byte forms of a call at a site.
type CallForm uint8

// The call forms, in the order a site's bytes are tried.
const (
	FormRel32  CallForm = iota // e8 rel32: call rel32, 5 bytes
	FormAddr32                 // 67 e8 rel32: addr32 call rel32, 6 bytes
	FormRIP                    // ff 15 disp32: call *disp32(%rip), through a pointer slot, 6 bytes
	NumCallForms
)

// A CallInsn is a call at a site, read from its bytes.
type CallInsn struct {
	Form CallForm
	Len  int
	// Addr is the target the call names; for FormRIP, the pointer slot
	// it calls through.
	Addr uint64
}

// CallAt reads the call b starts with, at address pc, by its opcode
// bytes: ok is false when b does not start with one of the three forms.
// It does not decode the rest; CheckCall does (the opcode fixes how a
// call decodes, so a caller may check each form once).
func CallAt(b []byte, pc uint64) (c CallInsn, ok bool) {
	switch {
	case len(b) >= 5 && b[0] == 0xe8: // call rel32
		return CallInsn{FormRel32, 5, pc + 5 + rel32(b[1:])}, true
	case len(b) >= 6 && b[0] == 0x67 && b[1] == 0xe8: // addr32 call rel32
		return CallInsn{FormAddr32, 6, pc + 6 + rel32(b[2:])}, true
	case len(b) >= 6 && b[0] == 0xff && b[1] == 0x15: // call *disp32(%rip)
		return CallInsn{FormRIP, 6, pc + 6 + rel32(b[2:])}, true
	}
	return CallInsn{}, false
}

// CallReloc says where the call that an object's relocation of type t
// fills starts and how long it is: R_X86_64_PLT32 or PC32 fill the rel32
// of `e8 rel32` (back 1 byte from the relocation, 5 bytes long),
// R_X86_64_GOTPCRELX or GOTPCREL the disp32 of `ff 15 disp32` (back 2,
// 6 bytes). ok is false for any other type: no call of a site.
func CallReloc(t uint32) (back uint64, n int, ok bool) {
	switch elf.R_X86_64(t) {
	case elf.R_X86_64_PLT32, elf.R_X86_64_PC32:
		return 1, 5, true
	case elf.R_X86_64_GOTPCRELX, elf.R_X86_64_GOTPCREL:
		return 2, 6, true
	}
	return 0, 0, false
}

// CallAddend is the addend of a call's relocation: the displacement
// counts from the end of the instruction, 4 bytes past the field.
const CallAddend = -4

// RelocName names relocation type t, for messages.
func RelocName(t uint32) string { return elf.R_X86_64(t).String() }

// rel32 sign-extends the little-endian 32-bit displacement at b.
func rel32(b []byte) uint64 { return uint64(int64(int32(binary.LittleEndian.Uint32(b)))) }

// PLTSlot decodes the PLT stub at b (address pc) and returns the pointer
// slot it jumps through: `[endbr64] [bnd] jmp *disp32(%rip)`, the stubs
// of .plt, .plt.sec, .plt.got, .plt.bnd and .iplt.
func PLTSlot(b []byte, pc uint64) (uint64, bool) {
	p := 0
	if IsEndbr64(b) {
		p = 4
	}
	in, err := Decode(b[p:])
	if err != nil || in.Op != x86asm.JMP {
		return 0, false
	}
	m, ok := in.Args[0].(x86asm.Mem)
	if !ok || m.Base != x86asm.RIP || m.Index != 0 {
		return 0, false
	}
	return pc + uint64(p+in.Len) + uint64(m.Disp), true
}

// SiteNop returns the one NOP that disables an n-byte site (5 or 6
// bytes: NOP5, NOP6), as a fresh slice.
func SiteNop(n int) ([]byte, error) {
	switch n {
	case 5:
		return bytes.Clone(NOP5), nil
	case 6:
		return bytes.Clone(NOP6), nil
	}
	return nil, fmt.Errorf("no NOP for a %d-byte site", n)
}

// SiteCall returns the call an enabled site of n bytes holds, from site
// to target: `e8 rel32` for 5 bytes, `67 e8 rel32` for 6 (Call6 says why
// one instruction). A target beyond rel32's reach is a *nops.RangeError.
func SiteCall(site, target uint64, n int) ([]byte, error) {
	switch n {
	case 5:
		return Call(site, target)
	case 6:
		return Call6(site, target)
	}
	return nil, fmt.Errorf("site 0x%x: %d bytes, want 5 or 6", site, n)
}

// SiteNopAt reports whether b starts with a NOP this package writes
// that is 5 or 6 bytes long, the length of a site, and returns its
// length.
func SiteNopAt(b []byte) (int, bool) {
	// The first bytes of every NOP of ours of 5 or 6 bytes, tested first:
	// most bytes at a function's entry are no NOP.
	if len(b) < 5 || (b[0] != 0x0f && b[0] != 0x66 && b[0] != 0xeb) {
		return 0, false
	}
	if m, nop := IsNop(b); nop && (m == 5 || m == 6) {
		return m, true
	}
	return 0, false
}

// FrameSetup is how a -pg function without -mfentry starts (after any
// endbr64), before its mcount call: push %rbp; mov %rsp,%rbp.
var FrameSetup = []byte{0x55, 0x48, 0x89, 0xe5}
