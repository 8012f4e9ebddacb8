// Package nops holds what every ISA shares about changing code:
// Modify, the verify-then-modify primitive every byte change goes
// through, the Text it works on, and the errors of the branch encoders
// (ErrRange, ErrAlign). The instructions themselves, the bytes ftpatch
// writes and recognises, live in the ISA packages isa/x86 and isa/arm64.
package nops

import (
	"errors"
	"fmt"
)

// ErrRange is the sentinel matched by every *RangeError, for callers that
// only need to know that a site must be reached another way (a trampoline
// in range, or the arm64 ops literal).
var ErrRange = errors.New("branch target out of range")

// ErrAlign is returned (wrapped) by the arm64 branch encoders when the
// instruction address or the target is not a multiple of 4: such a branch
// cannot be encoded, and a misaligned address means the caller computed it
// wrongly, so nothing is rounded.
var ErrAlign = errors.New("branch address not 4-byte aligned")

// A RangeError reports a call or branch whose target lies beyond what the
// instruction's displacement can reach. It matches ErrRange with errors.Is.
type RangeError struct {
	From uint64 // address of the branch instruction
	To   uint64 // requested target
	// Max is the reach in bytes: displacements in [-Max, Max) from the
	// instruction's reference point are encodable (the end of the
	// instruction on x86-64, its start on arm64). 1<<31 for x86-64 rel32,
	// 1<<27 for arm64 B/BL.
	Max int64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s: %#x to %#x exceeds ±%#x bytes", ErrRange, e.From, e.To, e.Max)
}

// Is reports whether target is ErrRange, so callers can branch on the
// sentinel without knowing the structured type.
func (e *RangeError) Is(target error) bool { return target == ErrRange }
