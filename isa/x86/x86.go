// Package x86 holds ftpatch's knowledge of x86-64 instructions: the NOPs
// it writes at function-entry sites (by size and CPU), the calls and
// jumps and their reach, what may come before a site (endbr64, entry
// NOPs, a nested function's push %r10), the call forms a site holds and
// the PLT stubs a call goes through. Encoders are pure functions of
// their arguments and build on every host; every encoding is checked in
// its tests against golang.org/x/arch and objdump
// (isa/testdata/insns.txt).
package x86

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"ftpatch/nops"
	"math"
)

// NOP5 is the 5-byte NOP for a `-mfentry -fno-pie` or
// `-fpatchable-function-entry=5` site: one instruction, so no thread can
// be stopped inside it when the site is turned into `e8 rel32`. It is the
// P6 long NOP, which every x86-64 CPU executes. Callers must not modify it;
// Nop returns a fresh copy.
var NOP5 = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00} // nopl 0x0(%rax,%rax,1)

// NOP6 is the 6-byte NOP for a PIE `-mfentry` site, which gcc emits as
// `ff 15 disp32` (call *__fentry__@GOTPCREL(%rip)). One 6-byte instruction
// and not a 5-byte NOP plus a 1-byte one: a thread that returns from the
// original call lands at site+6, and a thread stopped between two NOPs
// would resume mid-instruction once the site became a call again.
var NOP6 = []byte{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00} // nopw 0x0(%rax,%rax,1)

// An NopStyle names a family of NOP instructions, chosen by what the CPU
// (or emulator) running the patched code can execute. Linux probed for the
// P6 long NOP with fault handling and fell back to the other two; ftpatch
// keeps the same three so a user can pick one for an odd machine.
//
// The zero value is P6, which every x86-64 CPU runs.
type NopStyle uint8

const (
	// P6 is the `0f 1f /0` long NOP (Intel's recommended sequences),
	// 1 to 8 bytes as one instruction.
	P6 NopStyle = iota
	// K8 is 0x90 behind 0x66 operand-size prefixes (`66 66 66 66 90`),
	// 1 to 8 bytes as one instruction; for CPUs without `0f 1f`.
	K8
	// JmpPad is a short jump over 0x90 padding (`eb 03 90 90 90`): the
	// last resort, for machines that run neither form above. The padding
	// is 0x90 and never 0x00, so that a disassembler, a debugger or a
	// thread that somehow lands in it still sees NOPs, not `add` opcodes.
	JmpPad
)

var x86NopStyleNames = [...]string{P6: "p6", K8: "k8", JmpPad: "jmp"}

// String returns the style's name as used on command lines: "p6", "k8" or
// "jmp".
func (s NopStyle) String() string {
	if int(s) < len(x86NopStyleNames) {
		return x86NopStyleNames[s]
	}
	return fmt.Sprintf("NopStyle(%d)", uint8(s))
}

// MaxNop is the longest NOP of the P6 and K8 styles: the sequences
// below stop at 8 bytes, and no entry site is longer.
const MaxNop = 8

// MaxJmpNop is the longest JmpPad NOP: `eb` reaches 127 bytes of
// padding past its own 2 bytes.
const MaxJmpNop = 2 + math.MaxInt8

// x86Nops holds, per style, the one-instruction NOP of each length; index 0
// is unused. JmpPad is built by x86JmpNop instead.
var x86Nops = [...][MaxNop + 1][]byte{
	P6: {
		1: {0x90},                                           // nop
		2: {0x66, 0x90},                                     // xchg %ax,%ax
		3: {0x0f, 0x1f, 0x00},                               // nopl (%rax)
		4: {0x0f, 0x1f, 0x40, 0x00},                         // nopl 0x0(%rax)
		5: {0x0f, 0x1f, 0x44, 0x00, 0x00},                   // nopl 0x0(%rax,%rax,1)
		6: {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},             // nopw 0x0(%rax,%rax,1)
		7: {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},       // nopl 0x0(%rax)
		8: {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}, // nopl 0x0(%rax,%rax,1)
	},
	K8: {
		1: {0x90},                                           // nop
		2: {0x66, 0x90},                                     // xchg %ax,%ax
		3: {0x66, 0x66, 0x90},                               // data16 xchg %ax,%ax
		4: {0x66, 0x66, 0x66, 0x90},                         // data16 data16 xchg %ax,%ax
		5: {0x66, 0x66, 0x66, 0x66, 0x90},                   // data16 data16 data16 xchg %ax,%ax
		6: {0x66, 0x66, 0x66, 0x66, 0x66, 0x90},             // data16 data16 data16 data16 xchg %ax,%ax
		7: {0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90},       // data16 data16 data16 data16 data16 xchg %ax,%ax
		8: {0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90}, // data16 data16 data16 data16 data16 data16 xchg %ax,%ax
	},
}

// Nop returns one NOP of exactly n bytes in the given style, as a fresh
// slice the caller may keep or modify.
//
// For P6 and K8, n is 1 to 8 and the result is a single instruction.
// For JmpPad, n is 1 to 129: n == 1 is the plain `90` (which every x86 CPU
// runs), and n >= 2 is `eb n-2` followed by n-2 bytes of 0x90. That is two
// or more instructions, but it behaves as one: control enters only at the
// jump and leaves only at the end of the padding, so patching it to a call
// can never strand a thread in the middle. Other sizes are an error: a site
// must be one instruction, never a sequence of NOPs.
func Nop(n int, style NopStyle) ([]byte, error) {
	switch style {
	case P6, K8:
		if n < 1 || n > MaxNop {
			return nil, fmt.Errorf("no single %v NOP of %d bytes (want 1..%d)", style, n, MaxNop)
		}
		return bytes.Clone(x86Nops[style][n]), nil
	case JmpPad:
		if n < 1 || n > MaxJmpNop {
			return nil, fmt.Errorf("no %v NOP of %d bytes (want 1..%d)", style, n, MaxJmpNop)
		}
		if n == 1 {
			return []byte{0x90}, nil // nop
		}
		b := bytes.Repeat([]byte{0x90}, n) // nop padding
		b[0], b[1] = 0xeb, byte(n-2)       // jmp .+n
		return b, nil
	}
	return nil, fmt.Errorf("unknown x86 NOP style %v", style)
}

// IsNop reports whether b begins with a NOP this package produces, in
// any style and size (including the whole of an JmpPad jump-and-padding),
// and returns its length in bytes. It recognises exactly these encodings,
// not every x86 NOP (clang's `0f 1f 44 00 08` is a NOP but not one of
// ours), so true means the bytes are what ftpatch itself writes.
func IsNop(b []byte) (n int, ok bool) {
	for _, table := range x86Nops {
		for _, nop := range table {
			if len(nop) > 0 && bytes.HasPrefix(b, nop) {
				return len(nop), true
			}
		}
	}
	// JmpPad: `eb NN` with a forward NN and exactly NN bytes of 0x90 after it.
	if len(b) >= 2 && b[0] == 0xeb && b[1] <= math.MaxInt8 {
		n := 2 + int(b[1])
		if len(b) >= n && isAll(b[2:n], 0x90) {
			return n, true
		}
	}
	return 0, false
}

func isAll(b []byte, c byte) bool {
	for _, x := range b {
		if x != c {
			return false
		}
	}
	return true
}

// Call returns `e8 rel32`, a 5-byte near call from site to target, with
// rel32 = target - (site+5). A target more than ±2 GiB away is a
// *nops.RangeError.
func Call(site, target uint64) ([]byte, error) {
	return x86Rel32(nil, 0xe8, site, target)
}

// Jmp returns `e9 rel32`, a 5-byte near jump from site to target, with
// the same reach as Call.
func Jmp(site, target uint64) ([]byte, error) {
	return x86Rel32(nil, 0xe9, site, target)
}

// Call6 returns a call from a 6-byte site (the PIE `-mfentry` form
// `ff 15 disp32`) to target: `67 e8 rel32` with rel32 = target - (site+6),
// the form GNU ld itself relaxes that call to.
//
// It is one 6-byte instruction rather than `e8 rel32` plus a `90`, so the
// return address the call pushes is site+6 in every state of the site:
// the original `ff 15`, this call and NOP6 all end there. With `e8`+`90`
// a thread still inside the traced function when the site is disabled
// again would return to site+5, the last byte of NOP6, and execute
// `00 ...` as an `add`. The 0x67 address-size prefix has no effect on a
// rel32 call in 64-bit mode.
func Call6(site, target uint64) ([]byte, error) {
	return x86Rel32([]byte{0x67}, 0xe8, site, target) // addr32 call rel32
}

// x86Rel32 encodes prefix, op and a rel32 reaching target from an
// instruction at site; rel32 counts from the end of the instruction.
func x86Rel32(prefix []byte, op byte, site, target uint64) ([]byte, error) {
	end := site + uint64(len(prefix)) + 5
	rel := int64(target - end) // wraps like the CPU's 64-bit RIP arithmetic
	if rel < math.MinInt32 || rel > math.MaxInt32 {
		return nil, &nops.RangeError{From: site, To: target, Max: 1 << 31}
	}
	b := append(bytes.Clone(prefix), op, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[len(b)-4:], uint32(int32(rel)))
	return b, nil
}
