// Package isa chooses what ftpatch knows of an instruction set from a
// file's architecture: For(a) is the one place an arch.Arch becomes
// per-ISA behaviour, so the packages that handle files of any
// architecture (elfx, sites, record, patch, runtime) ask it instead of
// comparing architectures. The instructions themselves live in the ISA
// packages isa/x86 and isa/arm64; a new ISA is a new package beside them
// and one more entry in the table here.
package isa

import (
	"debug/elf"
	"fmt"
	"strings"

	"ftpatch/arch"
	"ftpatch/isa/arm64"
	"ftpatch/isa/move"
	"ftpatch/isa/x86"
	"ftpatch/runtime/abi"
)

// An ISA holds the facts and operations of one instruction set that
// callers need without knowing which it is.
type ISA struct {
	Arch   arch.Arch
	Relocs Relocs
	// PLTSlot decodes the PLT stub at b, at address pc, and returns the
	// pointer slot it jumps through; false for other code.
	PLTSlot func(b []byte, pc uint64) (slot uint64, ok bool)
	// NopFoundAgain reports whether a site after the prologue (-pg's) at
	// offset off of code, once made a NOP, is still found by decoding a
	// file that has no site table; nil: always.
	NopFoundAgain func(code []byte, off uint64) bool
	// Veneer decodes the linker's (or the runtime's) veneer at b, at
	// address pc, a stub that takes a branch beyond its reach the rest
	// of the way, and returns where it leads; nil where calls need none.
	Veneer func(b []byte, pc uint64) (target uint64, ok bool)
	// CallTarget reads the n-byte call at b, at address pc, that a site
	// holds: the address it names and whether that is a pointer slot
	// the call goes through (x86-64's `ff 15`) rather than the target.
	CallTarget func(b []byte, pc uint64, n int) (addr uint64, viaSlot bool, err error)
	// SiteNop returns the one NOP that disables a call site of n bytes.
	SiteNop func(n int) ([]byte, error)
	// SiteCall returns the call that enables a site of n bytes at pc,
	// to target; a target out of the call's reach is a *nops.RangeError.
	SiteCall func(pc, target uint64, n int) ([]byte, error)
	// NopsDisabled says whether a site of several NOPs (a patchable area)
	// already holds its disabled form: on arm64 each slot of the area is
	// one instruction and stays a NOP; on x86-64 the compiler's padding
	// is several NOPs that ftpatch turns into one.
	NopsDisabled bool

	// Runtime says whether the runtime has a port to the ISA, so that an
	// enabled site has something to call.
	Runtime bool
	// PostLink says whether ftpatch enable and disable write the ISA's
	// sites into a linked file (the runtime's load-time pass writes them
	// wherever Runtime says).
	PostLink bool
	// Hooks are the compiler's hooks the runtime defines, and Tramps the
	// trampolines an enabled site calls (runtime/abi's names: the
	// runtime's entry points on this ISA).
	Hooks, Tramps []string
	// Tramp is the index in Tramps of the trampoline an enabled site of
	// n bytes calls: at a function's entry (entry) or after its prologue,
	// a nested function's chain site (chain), or the empty tracer's
	// (nop), as the runtime writes them.
	Tramp func(entry, chain bool, n int, nop bool) int
	// RuntimeCFlags are the ISA's flags for compiling the runtime itself.
	RuntimeCFlags []string
	// CFlags are the flags that give a program patch sites the runtime
	// handles.
	CFlags []string
	// CC is the default C compiler for the ISA.
	CC []string

	// PlanPrologue plans a prologue site for the function at addr whose
	// bytes are code[:size] (code may go on with the padding before the
	// next function: NOP or int3 bytes only, which a short function may
	// use); read, if not nil, reads n bytes of the file's memory at an
	// address, for jump tables (nil when it cannot). A refusal wraps one
	// of package move's reasons. nil: the ISA makes no prologue sites.
	PlanPrologue func(code []byte, addr uint64, size int, read func(addr uint64, n int) []byte) (move.Plan, error)
	// Trampoline returns the trampoline of plan p placed at address t:
	// the disabled site (at offset 0), the moved instructions rewritten
	// for t, the jump back to p.Resume(). An operand t puts out of reach
	// is a *nops.RangeError.
	Trampoline func(p *move.Plan, t uint64) ([]byte, error)
	// PrologueJump returns the p.Len bytes written at p.Patch: the jump
	// to the trampoline at t (padded with traps on x86-64).
	PrologueJump func(p *move.Plan, t uint64) ([]byte, error)
	// TrampolineMax bounds a trampoline's length, and TrampolineSite is
	// the length of the site at its start.
	TrampolineMax, TrampolineSite int
	// PrologueTramp is the index in Tramps of the entry point an enabled
	// prologue site calls (nop: the empty tracer's), and PrologueSiteCall
	// the call that enables one at pc, where its form is not SiteCall's
	// (arm64: `mov x17, x30; bl`, which keeps x9, a register callers of
	// a function built without tracing flags may keep values in); nil
	// where a prologue site is an entry site like any other (x86-64).
	PrologueTramp    func(nop bool) int
	PrologueSiteCall func(pc, target uint64) ([]byte, error)
	// Disasm returns the instruction at the start of b, at pc, as
	// objdump prints it: a moved instruction listed (move.Plan.Bytes).
	Disasm func(b []byte, pc uint64) string
	// TrampolineFixed says a trampoline's length does not depend on
	// where it is placed (x86-64: every rewritten operand is a rel32 or
	// a disp32), so trampolines can be packed before their place is
	// known; arm64's may (an adr within reach, or adrp and add).
	TrampolineFixed bool
}

// Relocs are the relocation types of the ISA's psABI that ftpatch reads
// or writes.
type Relocs struct {
	Abs64     uint32 // stores a symbol's 64-bit address: an address table's entries
	Relative  uint32 // the loader adds the load address (R_*_RELATIVE)
	GlobDat   uint32 // fills a GOT slot with a symbol's address
	JumpSlot  uint32 // fills a PLT's GOT slot with a symbol's address
	IRelative uint32 // fills a slot with what an ifunc resolver returns
	// SlotAddend says whether GlobDat and JumpSlot add the addend: not on
	// x86-64 (S), yes on AArch64 (S + A).
	SlotAddend bool
	// Name names a relocation type, for messages.
	Name func(uint32) string
}

// IsSlot reports whether t fills a pointer slot with a symbol's address
// (GlobDat, JumpSlot, Abs64).
func (r Relocs) IsSlot(t uint32) bool { return t == r.GlobDat || t == r.JumpSlot || t == r.Abs64 }

var x86ISA = ISA{
	Arch: arch.X86_64,
	Relocs: Relocs{
		Abs64: uint32(elf.R_X86_64_64), Relative: uint32(elf.R_X86_64_RELATIVE),
		GlobDat: uint32(elf.R_X86_64_GLOB_DAT), JumpSlot: uint32(elf.R_X86_64_JMP_SLOT), IRelative: uint32(elf.R_X86_64_IRELATIVE),
		Name: x86.RelocName,
	},
	PLTSlot: x86.PLTSlot,
	CallTarget: func(b []byte, pc uint64, n int) (uint64, bool, error) {
		if c, ok := x86.CallAt(b[:min(n, len(b))], pc); ok && c.Len == n {
			return c.Addr, c.Form == x86.FormRIP, nil
		}
		return 0, false, fmt.Errorf("call % x: not e8, 67 e8 or ff 15", b[:min(n, len(b))])
	},
	SiteNop:  x86.SiteNop,
	SiteCall: x86.SiteCall,
	Runtime:  true,
	PostLink: true,
	Hooks:    []string{abi.Fentry, abi.Mcount},
	Tramps:   []string{abi.Caller5, abi.Caller6, abi.McountCaller5, abi.McountCaller6, abi.ChainCaller5, abi.ChainCaller6, abi.Stub},
	Tramp: func(entry, chain bool, n int, nop bool) int {
		six := 0
		if n == 6 {
			six = 1
		}
		switch {
		case nop:
			return 6
		case chain:
			return 4 + six
		case entry:
			return six
		}
		return 2 + six
	},
	RuntimeCFlags: []string{"-mgeneral-regs-only"},
	CFlags:        []string{"-pg", "-mfentry"},
	CC:            []string{"cc"},

	PlanPrologue:    x86.PlanPrologue,
	Disasm:          x86.Disasm,
	Trampoline:      x86.Trampoline,
	PrologueJump:    x86.PrologueJump,
	TrampolineMax:   x86.TrampolineMax,
	TrampolineFixed: true,
	TrampolineSite:  x86.TrampolineSite,
}

var arm64ISA = ISA{
	Arch: arch.ARM64,
	Relocs: Relocs{
		Abs64: uint32(elf.R_AARCH64_ABS64), Relative: uint32(elf.R_AARCH64_RELATIVE),
		GlobDat: uint32(elf.R_AARCH64_GLOB_DAT), JumpSlot: uint32(elf.R_AARCH64_JUMP_SLOT), IRelative: uint32(elf.R_AARCH64_IRELATIVE),
		SlotAddend: true,
		Name:       arm64.RelocName,
	},
	PLTSlot:       arm64.PLTSlot,
	Veneer:        arm64.Veneer,
	NopFoundAgain: arm64.McountNopFound,
	CallTarget: func(b []byte, pc uint64, n int) (uint64, bool, error) {
		if n == 4 && len(b) >= 4 {
			if t, _, ok := arm64.BranchTarget(pc, arm64.Word(b, 0)); ok {
				return t, false, nil
			}
		}
		return 0, false, fmt.Errorf("call % x: not bl", b[:min(n, len(b))])
	},
	SiteNop:      arm64.SiteNop,
	SiteCall:     arm64.SiteCall,
	NopsDisabled: true,
	Runtime:      true,
	PostLink:     true,
	Hooks:        []string{abi.ARM64Mcount},
	Tramps:       []string{abi.ARM64Caller, abi.ARM64McountCaller, abi.Stub, abi.PrologueCaller, abi.PrologueStub},
	PrologueTramp: func(nop bool) int {
		if nop {
			return 4
		}
		return 3
	},
	PrologueSiteCall: arm64.PrologueSiteCall,
	Disasm: func(b []byte, _ uint64) string {
		if len(b) < 4 {
			return fmt.Sprintf(".byte % x", b)
		}
		return arm64.Text(arm64.Word(b, 0))
	},
	Tramp: func(entry, chain bool, n int, nop bool) int {
		switch {
		case nop:
			return 2
		case entry:
			return 0
		}
		return 1
	},
	RuntimeCFlags: []string{"-mgeneral-regs-only"},
	CFlags:        []string{"-fpatchable-function-entry=4,2", "-falign-functions=8"},
	CC:            []string{"aarch64-linux-gnu-gcc"},

	PlanPrologue:   arm64.PlanPrologue,
	Trampoline:     arm64.Trampoline,
	PrologueJump:   arm64.PrologueJump,
	TrampolineMax:  arm64.TrampolineMax,
	TrampolineSite: arm64.TrampolineSite,
}

// isas is the table: one entry per supported architecture.
var isas = map[arch.Arch]*ISA{
	arch.X86_64: &x86ISA,
	arch.ARM64:  &arm64ISA,
}

// unknown answers for an architecture ftpatch does not support: no
// relocation, stub or call is its, and names are numbers.
var unknown = ISA{
	Relocs:     Relocs{Name: func(t uint32) string { return fmt.Sprintf("reloc(%d)", t) }},
	PLTSlot:    func([]byte, uint64) (uint64, bool) { return 0, false },
	CallTarget: func([]byte, uint64, int) (uint64, bool, error) { return 0, false, fmt.Errorf("unknown architecture") },
	SiteNop:    func(n int) ([]byte, error) { return nil, fmt.Errorf("no NOP for a %d-byte site", n) },
	Tramp:      func(bool, bool, int, bool) int { return -1 },
	SiteCall: func(pc, _ uint64, n int) ([]byte, error) {
		return nil, fmt.Errorf("site 0x%x: no call for a %d-byte site of an unknown architecture", pc, n)
	},
}

// For returns the ISA of architecture a; for arch.Unknown or another
// unsupported value, one that recognises nothing (its Arch is a).
func For(a arch.Arch) *ISA {
	if i, ok := isas[a]; ok {
		return i
	}
	u := unknown
	u.Arch = a
	return &u
}

// IsPLT reports whether a section of that name holds PLT stubs, which
// jump through a pointer slot: GNU ld's and lld's .plt, .plt.sec (with
// IBT), .plt.got and .plt.bnd (with -z bndplt), and .iplt in static
// programs.
func IsPLT(name string) bool {
	return name == ".plt" || name == ".iplt" || strings.HasPrefix(name, ".plt.")
}
