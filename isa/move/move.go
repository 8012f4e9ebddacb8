// Package move holds what a prologue site is made of, whatever the
// instruction set: the plan that moves a function's first instructions
// out of the way of a jump, and the reasons a function is left alone.
//
// A function built without any tracing flag has no site. One is made by
// replacing its first instructions (after an x86-64 endbr64 or an arm64
// bti, which stay where the function's callers land) with a jump to a
// trampoline. The trampoline holds an ordinary disabled site, then the
// moved instructions, rewritten for their new address, then a jump back
// to the first instruction not moved:
//
//	func:   [endbr64 | bti c]      kept: indirect calls land here
//	        jmp tramp              Patch: Len bytes replaced
//	resume: ...                    the function goes on
//
//	tramp:  site (NOP)             what the runtime enables as any other
//	        moved instructions     rewritten for tramp's address
//	        jmp resume
//
// The ISA packages (isa/x86, isa/arm64) decode and plan (PlanPrologue)
// and write a plan's moved instructions at a trampoline's address
// (Moved); package isa chooses between them.
package move

import (
	"errors"
	"fmt"
)

// A Plan says how a function's prologue is moved.
type Plan struct {
	Func  uint64 // the function's address
	Patch uint64 // where the jump to the trampoline is written (after endbr64/bti)
	Len   int    // bytes at Patch the jump replaces: whole instructions
	// Orig are the Len original bytes at Patch, which the writer checks
	// before it writes the jump, and which undo puts back.
	Orig []byte
	// Insns are the moved instructions, in order, each with how it is
	// rewritten.
	Insns []Insn
}

// Resume is where the trampoline jumps back to: the first instruction
// not moved.
func (p *Plan) Resume() uint64 { return p.Patch + uint64(p.Len) }

// An Insn is one moved instruction.
type Insn struct {
	Off int // its offset from Patch: its bytes are the plan's Orig[Off:Off+Len]
	Len int // its length in bytes
	How How // what moving it takes
}

// Bytes returns the i-th moved instruction's original bytes and
// address, for a disassembly (the ISA's Disasm) when one is listed:
// a plan is made for every function before a program starts, and
// listed rarely, so no plan carries text.
func (p *Plan) Bytes(i int) ([]byte, uint64) {
	in := p.Insns[i]
	return p.Orig[in.Off : in.Off+in.Len], p.Patch + uint64(in.Off)
}

// How says what moving an instruction takes.
type How uint8

const (
	Copy      How = iota // position-independent: copied as it is
	PCRel                // a PC-relative operand (RIP-relative memory, adr, adrp, a literal load): rewritten for the new address
	Branch               // a relative jump or call: retargeted, widened if it no longer reaches
	CondJump             // a conditional branch (jcc, b.cond, cbz, tbz): retargeted, or inverted over an absolute jump
	Authorize            // arm64 paciasp/pacibsp: copied, the site placed before it so that tracers see the unsigned return address
)

var howNames = [...]string{"copy", "pc-relative", "branch", "conditional", "pac"}

func (h How) String() string {
	if int(h) < len(howNames) {
		return howNames[h]
	}
	return fmt.Sprintf("how(%d)", h)
}

// The reasons a function gets no prologue site; PlanPrologue's errors
// wrap one of them (errors.Is), with the detail (the instruction, the
// branch's address) in the message.
var (
	// ErrTooShort: the function ends before the bytes the jump needs.
	ErrTooShort = errors.New("shorter than the jump")
	// ErrBranchInto: a branch in the function targets the moved
	// instructions (it would land in the middle of the jump) or the
	// function's first bytes (a loop back to the start would enter the
	// site again, as a second call).
	ErrBranchInto = errors.New("a branch in the function targets the moved bytes")
	// ErrUnmovable: an instruction among those moved cannot run
	// elsewhere (loop, jrcxz, a branch to a register-relative table, a
	// system call with its restart address, or one x/arch does not know).
	ErrUnmovable = errors.New("an instruction that cannot be moved")
	// ErrJumpTable: an indirect jump through a table whose entries may
	// point into the moved bytes.
	ErrJumpTable = errors.New("a jump table may reach the moved bytes")
	// ErrUndecodable: bytes of the function do not decode, so branches
	// into the moved bytes cannot be ruled out.
	ErrUndecodable = errors.New("bytes that do not decode")
)

// Reasons lists the refusal reasons in the order listings count them.
var Reasons = []error{ErrTooShort, ErrBranchInto, ErrUnmovable, ErrJumpTable, ErrUndecodable}
