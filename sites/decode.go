package sites

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
)

// ErrBadSite: something that should be a patch site is not one (wrong
// instruction, not at an instruction boundary, outside every function).
// Returned wrapped in a *SiteError.
var ErrBadSite = errors.New("bad patch site")

// A SiteError places a bad site: section, offset and, when known, the
// function.
type SiteError struct {
	Section string
	Off     uint64
	Func    string
	Msg     string
	Err     error // the cause, when another error is one: shown after Msg
}

func (e *SiteError) Error() string {
	msg := e.Msg
	if e.Err != nil {
		if msg != "" {
			msg += ": "
		}
		msg += e.Err.Error()
	}
	if e.Func != "" {
		return fmt.Sprintf("section %q+0x%x (in %s): %s", e.Section, e.Off, e.Func, msg)
	}
	return fmt.Sprintf("section %q+0x%x: %s", e.Section, e.Off, msg)
}

// Is makes errors.Is(err, ErrBadSite) true.
func (e *SiteError) Is(target error) bool { return target == ErrBadSite }

// Unwrap returns the cause, so errors.Is and errors.As see through to it.
func (e *SiteError) Unwrap() error { return e.Err }

// isEndbr64 reports whether b starts with endbr64, which x/arch's
// decoder does not know (it reads a lone REP prefix).
func isEndbr64(b []byte) bool { return bytes.HasPrefix(b, x86.Endbr64) }

// x86Decode decodes one instruction at b, with endbr64 understood.
func x86Decode(b []byte) (x86asm.Inst, error) {
	if isEndbr64(b) {
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

// x86Boundary checks that decoding from `from` reaches `to` exactly: the
// site starts an instruction rather than sitting inside one.
func x86Boundary(text []byte, from, to uint64) error {
	for at := from; at < to; {
		in, err := x86Decode(text[at:])
		if err != nil {
			return fmt.Errorf("decoding at +0x%x from the function start: %v", at-from, err)
		}
		at += uint64(in.Len)
		if at > to {
			return fmt.Errorf("not at an instruction boundary: the instruction at +0x%x spans it", at-uint64(in.Len)-from)
		}
	}
	return nil
}

// x86Call checks that b starts with a call instruction of n bytes: `e8
// rel32` (5), `ff 15 disp32`, a call through a RIP-relative pointer (6),
// or `67 e8 rel32`, what the linker relaxes that to when the target is
// local (6).
func x86Call(b []byte, n int) error {
	in, err := x86Decode(b)
	if err != nil {
		return err
	}
	return x86CallOf(in, b, n)
}

// x86CallOf is x86Call for b's first instruction already decoded as in:
// a linked file's 100k sites are each decoded once, not once per check.
func x86CallOf(in x86asm.Inst, b []byte, n int) error {
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

// x86Nops reports how b's first n bytes decode: as exactly one NOP, as
// several whole NOPs, or not as NOPs ending at n.
func x86Nops(b []byte, n int) (State, error) {
	count := 0
	for at := 0; at < n; {
		in, err := x86Decode(b[at:])
		if err != nil {
			return StateUnknown, err
		}
		if in.Op != x86asm.NOP {
			return StateUnknown, fmt.Errorf("found %q at +%d, want NOPs", in.String(), at)
		}
		at += in.Len
		count++
		if at > n {
			return StateUnknown, fmt.Errorf("the NOP at +%d runs past the %d-byte site", at-in.Len, n)
		}
	}
	if count == 1 {
		return StateNop, nil
	}
	return StateNops, nil
}

// arm64 words the sites are made of.
const (
	arm64NOP   = 0xd503201f // nop
	arm64BTIc  = 0xd503245f // bti c
	arm64BTIjc = 0xd50324df // bti jc
)

func word(b []byte, off uint64) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// arm64Op decodes one instruction word.
func arm64Op(w uint32) (arm64asm.Inst, error) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], w)
	return arm64.Decode(b[:])
}

func arm64IsNop(w uint32) bool {
	in, err := arm64Op(w)
	return err == nil && in.Op == arm64asm.NOP
}

func arm64IsBTI(w uint32) bool { return w == arm64BTIc || w == arm64BTIjc }

func arm64IsBL(w uint32) bool {
	in, err := arm64Op(w)
	return err == nil && in.Op == arm64asm.BL
}
