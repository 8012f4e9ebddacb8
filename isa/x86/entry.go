package x86

import (
	"bytes"
	"fmt"
)

// What may stand between an x86-64 function's entry and its call of
// __fentry__. A site is "at the entry" when the stack there is the one
// the caller left: the return address on top. Compilers put three things
// before the call that keep it so, and gcc one that does not:
//
//	endbr64                 -fcf-protection: the landing pad, first
//	NOPs                    -fpatchable-function-entry=N[,M] or the
//	                        patchable_function_entry attribute together with
//	                        -pg -mfentry: the area the user asked for, then
//	                        the compiler's call
//	push %r10 ... pop %r10  a GNU C nested function: gcc saves the static
//	                        chain around the call, so at the call the return
//	                        address is one word higher, above the saved r10
//
// gcc writes the last as its profiler's text: `push %r10`, then what
// the profiler puts first (endbr64 in gcc 12, which it emits after the
// push, and the NOPs of a patchable area, one-byte `90`s), the call,
// `pop %r10`. A chain site is recognised from those bytes alone, so
// that the runtime, which may not know where the function starts, tells
// it the same way (runtime/src/arch/x86_64/site.c mirrors ChainPush and
// SiteLead byte for byte).

// Endbr64 is the landing pad of a function built with -fcf-protection:
// an indirect call or jump may only land on it. golang.org/x/arch reads it
// as a lone REP prefix, so it is recognised by its bytes.
var Endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa} // endbr64

// PushR10 and PopR10 are what gcc puts around the -mfentry call of
// a GNU C nested function, which receives its static chain (the frame of
// the function it is nested in) in r10, a register the call may clobber.
var (
	PushR10 = []byte{0x41, 0x52} // push %r10
	PopR10  = []byte{0x41, 0x5a} // pop %r10
)

// x86OnePad is the NOP gcc fills a patchable area with: one byte each.
const x86OnePad = 0x90 // nop

// x86MaxInsn is the longest x86 instruction: 15 bytes.
const x86MaxInsn = 15

// EntryNop returns the length of the NOP that b starts with if it is
// one of the forms compilers put in a function's patchable area (gcc
// `90`s, clang's long NOPs) and ftpatch writes: `90` or `0f 1f /0` (nopl,
// nopw) with any addressing, behind any number of 0x66 operand-size
// prefixes and at most one 0x2e (cs); 0 for anything else, or a NOP that
// runs past b. Every NOP it accepts decodes as one NOP of that length
// with golang.org/x/arch (tested).
func EntryNop(b []byte) int {
	p := 0
	for p < len(b) && p < x86MaxInsn && b[p] == 0x66 { // data16
		p++
	}
	if p < len(b) && b[p] == 0x2e { // cs
		p++
	}
	switch {
	case p < len(b) && b[p] == 0x90: // nop, xchg %ax,%ax
		p++
	case p+3 <= len(b) && b[p] == 0x0f && b[p+1] == 0x1f && b[p+2]>>3&7 == 0: // nop{l,w} r/m
		m := b[p+2]
		mod, rm := m>>6, m&7
		p += 3
		if mod != 3 && rm == 4 { // a SIB byte
			if p >= len(b) {
				return 0
			}
			if mod == 0 && b[p]&7 == 5 { // no base: disp32
				p += 4
			}
			p++
		}
		switch {
		case mod == 0 && rm == 5: // rip-relative disp32
			p += 4
		case mod == 1:
			p++
		case mod == 2:
			p += 4
		}
	default:
		return 0
	}
	if p > len(b) || p > x86MaxInsn {
		return 0
	}
	return p
}

// ChainPush reports where the `push %r10` of a chain site is: the
// n-byte site at off in code is followed by `pop %r10` and preceded by
// `push %r10`, endbr64 and one-byte NOPs (`90`) in that order, each but
// the push optional. It returns the push's offset in code, or -1 when the
// site is no chain site. It reads nothing before code[0], so code may
// start where the reader's knowledge of the bytes does: the function's
// start, or its segment's.
func ChainPush(code []byte, off uint64, n int) int {
	end := off + uint64(n)
	if off > uint64(len(code)) || end+2 > uint64(len(code)) || !bytes.Equal(code[end:end+2], PopR10) {
		return -1
	}
	p := off
	for p > 0 && code[p-1] == x86OnePad {
		p--
	}
	if p >= 4 && bytes.Equal(code[p-4:p], Endbr64) {
		p -= 4
	}
	if p < 2 || !bytes.Equal(code[p-2:p], PushR10) {
		return -1
	}
	return int(p - 2)
}

// An Lead is what precedes a site in its function, which fixes where
// the function's return address is when the site's call runs.
type Lead uint8

// The leads of a site.
const (
	// LeadNone: anything else (-pg's prologue): the site is not at the
	// entry.
	LeadNone Lead = iota
	// LeadEntry: nothing, endbr64, entry NOPs (EntryNop) or both, in
	// that order: the return address is on top of the stack.
	LeadEntry
	// LeadChain: [endbr64] push %r10 [endbr64] [90...] before the site
	// and pop %r10 after it (ChainPush): the return address is one word
	// above the saved r10.
	LeadChain
)

var x86LeadNames = [...]string{LeadNone: "none", LeadEntry: "entry", LeadChain: "chain"}

func (l Lead) String() string {
	if int(l) < len(x86LeadNames) {
		return x86LeadNames[l]
	}
	return fmt.Sprintf("Lead(%d)", uint8(l))
}

// SiteLead says what precedes the n-byte site at off in fn, a
// function's bytes from its first on (reaching at least 2 bytes past
// the site for a chain site's pop).
func SiteLead(fn []byte, off uint64, n int) Lead {
	if off > uint64(len(fn)) {
		return LeadNone
	}
	endbr := bytes.HasPrefix(fn, Endbr64)
	p := uint64(0)
	if endbr && off >= 4 {
		p = 4
	}
	for p < off {
		k := EntryNop(fn[p:off])
		if k == 0 {
			break
		}
		p += uint64(k)
	}
	if p == off {
		return LeadEntry
	}
	if q := ChainPush(fn, off, n); q == 0 || (q == 4 && endbr) {
		return LeadChain
	}
	return LeadNone
}

// AreaStart reports whether a patchable area (an entry of
// __patchable_function_entries) that starts off bytes into the function
// fn starts at its entry: at its start, after its endbr64, or, in a GNU C
// nested function built with -pg -mfentry as well, after the `push %r10`
// gcc puts first (and the endbr64 gcc 12 puts after the push).
func AreaStart(fn []byte, off uint64) bool {
	if off > uint64(len(fn)) {
		return false
	}
	lead := fn[:off]
	lead = bytes.TrimPrefix(lead, Endbr64)
	if len(lead) == 0 {
		return true
	}
	lead, ok := bytes.CutPrefix(lead, PushR10)
	return ok && (len(lead) == 0 || bytes.Equal(lead, Endbr64))
}
