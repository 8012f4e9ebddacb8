// Package sites finds function-entry patch sites: in relocatable objects
// (from relocations against the tracing hooks, from the compiler's
// __patchable_function_entries, or from an existing __mcount_loc table)
// and in linked files (from their __mcount_loc table).
//
// Every site is checked before it is returned: decoded with
// golang.org/x/arch at an instruction boundary of a named function, and
// found to hold the instruction its kind says. Discovery only reads: it is
// a deterministic function of the file's bytes.
package sites

import (
	"encoding/json"
	"fmt"

	"ftpatch/arch"
	"ftpatch/runtime/abi"
	"ftpatch/srcline"
)

// A Kind says how the compiler made a site, which fixes where it is in its
// function and what may be written there.
type Kind uint8

// The kinds of site.
const (
	KindUnknown Kind = iota
	// X86Fentry: `call __fentry__` as the first instruction (after
	// endbr64), from -pg -mfentry. Len 5 (`e8 rel32`) or 6 (`ff 15
	// disp32`, the PIE form through the GOT).
	X86Fentry
	// X86Mcount: `call mcount` after the frame is set up, from -pg
	// without -mfentry. Len 5 or 6 as for X86Fentry.
	X86Mcount
	// X86Patchable: at least 5 bytes of NOPs at entry from
	// -fpatchable-function-entry; the site is the first 5 bytes.
	X86Patchable
	// ARM64Patchable: two NOPs at entry (after `bti c`), from
	// -fpatchable-function-entry=2 (or =N,M without a usable literal).
	ARM64Patchable
	// ARM64CallOps: as ARM64Patchable, plus two NOPs just before the
	// function that are 8-byte aligned, from -fpatchable-function-entry=4,2:
	// the slot for a per-function ops pointer.
	ARM64CallOps
	// ARM64Mcount: `bl _mcount` after the prologue, from -pg.
	ARM64Mcount
	// X86Chain: `call __fentry__` of a GNU C nested function, which gcc
	// brackets with `push %r10` and `pop %r10` to keep the static chain
	// (after endbr64 and a patchable area's NOPs, if any: see
	// x86.SiteLead). The stack is the entry's with one word pushed:
	// the return address is above the saved r10, so the site calls
	// trampolines of its own, and function_graph hijacks its return as
	// at an mcount site. Len 5 or 6 as for X86Fentry.
	X86Chain
)

var kindNames = [...]string{
	KindUnknown:    "unknown",
	X86Fentry:      "fentry",
	X86Mcount:      "mcount",
	X86Patchable:   "patchable",
	ARM64Patchable: "patchable",
	ARM64CallOps:   "callops",
	ARM64Mcount:    "mcount",
	X86Chain:       "chain",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// AtEntry reports whether sites of this kind sit at the function's entry
// (where the return address is still on top of the stack or in the link
// register), rather than after the prologue (mcount) or a push (chain).
func (k Kind) AtEntry() bool { return k != X86Mcount && k != ARM64Mcount && k != X86Chain }

// MarshalText makes kinds print by name in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// A State is what a site's bytes hold now, and so what the site does
// when it runs: the one word for it that discovery, recordmcount's
// listing and patching share.
type State uint8

// The states of a site.
const (
	StateUnknown State = iota
	// StateNop: one NOP instruction covering the whole site, ready to be
	// patched; the site costs (almost) nothing until it is enabled.
	StateNop
	// StateNops: several NOPs covering the site, as the compiler emits for
	// -fpatchable-function-entry on x86-64; they must become one NOP
	// before any thread can run them while the site is being enabled.
	StateNops
	// StateHook: the compiler's call to its hook (__fentry__, mcount or
	// _mcount); the runtime turns it into a NOP at load. Every call of a
	// site in an object is one.
	StateHook
	// StateTraced: a call into one of the runtime's trampolines
	// (trampolines in decoded.go: ftrace_caller5, ftrace_stub, ...): the
	// site is enabled for the runtime's tracers.
	StateTraced
	// StateDirect: a call to any other function: a user trampoline
	// called directly, bypassing the runtime's tracers.
	StateDirect
	numStates
)

var stateNames = [...]string{StateUnknown: "unknown", StateNop: "nop", StateNops: "nops", StateHook: "hook", StateTraced: "traced", StateDirect: "direct"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// IsCall reports whether the site holds a call (to a hook, a trampoline
// or elsewhere).
func (s State) IsCall() bool { return s == StateHook || s == StateTraced || s == StateDirect }

// Insn names the instruction a site holds, as object listings and the
// JSON of Site print it: "call" for any call, else the state's name.
func (s State) Insn() string {
	if s.IsCall() {
		return "call"
	}
	return s.String()
}

// Effect names what the site does when it runs, as the STATE column of a
// linked file's listing prints it: "nop" for NOPs of any count, else the
// state's name.
func (s State) Effect() string {
	if s == StateNops {
		return StateNop.String()
	}
	return s.String()
}

// A Site is one function-entry patch site. Objects hold 100k of them,
// so the fields are ordered and sized to keep a Site small (128 bytes);
// what only linked files have (Call, Literal, Source) costs objects 40
// bytes.
type Site struct {
	Off     uint64 // offset of the site in its section (objects) or its address (linked files)
	FuncOff uint64 // bytes from the function's symbol to the site
	SecName string // name of the section holding the site
	Func    string // the function the site belongs to
	Section int    // index of that section (objects)
	Len     int    // bytes that patching may change
	Rela    int32  // index of the SHT_RELA section holding the hook relocation, or -1
	RelaIdx int32  // index of that relocation in its section
	Group   int32  // index of the SHT_GROUP the site's section belongs to, or 0
	Pre     int32  // bytes of NOPs before the function symbol (-fpatchable-function-entry=N,M)
	Kind    Kind
	State   State
	Weak    bool   // the function is weak: a linker may discard it for a strong one
	Origin  Origin // where the site was found
	// Call is where the site's call leads, in linked files (nil for NOPs
	// and in objects, where the call is the compiler's, to its hook).
	Call *Call
	// Literal is what an arm64 callops site's pre-function literal holds
	// in a linked file (the address of an ops record, once written); 0
	// while it holds the compiler's two NOPs, as every file does until
	// the runtime fills it at load.
	Literal uint64
	// Source is the site's file and line from the file's DWARF line
	// table (linked files, see AddSources); zero when unknown.
	Source srcline.Pos
}

// A Call is where a site that holds a call leads, in a linked file: read
// from the instruction (`e8 rel32`, `67 e8 rel32`, arm64 `bl`) or from the
// pointer slot it calls through (`ff 15`, or a PLT stub's `jmp *slot`),
// as the loader fills the slot.
type Call struct {
	// Addr is the called address, before any load bias; 0 when the file
	// does not say (a slot the loader binds to a symbol this file does
	// not define, or an ifunc, whose resolver chooses at load).
	Addr uint64
	// Name is the function at Addr, or the symbol the loader binds the
	// slot to; "" when none is known.
	Name string
	Off  uint64 // bytes from Name's start to Addr
	Via  Via    // how the call gets there
}

// A Via says how a call reaches its target.
type Via uint8

// The ways a call reaches its target.
const (
	ViaDirect Via = iota // the instruction names the target
	ViaGOT               // through a pointer slot (`ff 15`)
	ViaPLT               // through a PLT stub and its slot
	ViaIfunc             // through a slot that an ifunc resolver (Call.Name) fills at load
	ViaVeneer            // through the linker's veneer (arm64: a target beyond bl's reach)
)

var viaNames = [...]string{ViaDirect: "", ViaGOT: "got", ViaPLT: "plt", ViaIfunc: "ifunc", ViaVeneer: "veneer"}

// String names the path as TARGET shows it after an @; "" for a direct
// call.
func (v Via) String() string {
	if int(v) < len(viaNames) {
		return viaNames[v]
	}
	return fmt.Sprintf("via(%d)", uint8(v))
}

// String writes the target as users read it: `name`, `name+0x4`, the
// address when no symbol names it, "?" when the file does not say, with
// the path (`@plt`, `@got`, `@ifunc`) when the call goes through a slot.
func (c *Call) String() string {
	var s string
	switch {
	case c.Name != "" && c.Off != 0:
		s = fmt.Sprintf("%s+0x%x", c.Name, c.Off)
	case c.Name != "":
		s = c.Name
	case c.Addr != 0:
		s = fmt.Sprintf("0x%x", c.Addr)
	default:
		s = "?"
	}
	if c.Via != ViaDirect {
		s += "@" + c.Via.String()
	}
	return s
}

// Arch is the architecture of the site's instructions, from its kind.
func (k Kind) Arch() arch.Arch { return kindArch(k) }

// callState is the state of a linked file's site that holds call c, of
// an architecture whose hooks and trampolines these are (siteISA's): a
// call to the start of a hook or a trampoline, or elsewhere.
func callState(hooks map[string]Kind, tramps map[string]callee, c *Call) State {
	if c.Off == 0 {
		if _, ok := hooks[c.Name]; ok {
			return StateHook
		}
		if _, ok := tramps[c.Name]; ok {
			return StateTraced
		}
	}
	return StateDirect
}

// Hook is the symbol a site calls while it holds the compiler's call:
// __fentry__, mcount or _mcount; "" for NOPs, patchable areas and (in a
// linked file) calls elsewhere.
func (s *Site) Hook() string {
	if s.State != StateHook {
		return ""
	}
	if s.Call != nil {
		return s.Call.Name
	}
	switch s.Kind {
	case X86Fentry, X86Chain:
		return abi.Fentry
	case X86Mcount:
		return abi.Mcount
	case ARM64Mcount:
		return abi.ARM64Mcount
	}
	return ""
}

// An Origin says where a site was found (beside Site.Source, its source line).
type Origin uint8

// The origins of sites.
const (
	FromReloc     Origin = iota + 1 // a relocation against a hook symbol
	FromPatchable                   // __patchable_function_entries
	FromTable                       // an existing __mcount_loc table
	// FromDecode: decoding each function's entry in a linked file that has
	// no table, the call checked against the symbol table (FindDecoded).
	FromDecode
	// FromPrologue: the table of the trampolines ftpatch instrument made
	// from functions' prologues (PrologueName).
	FromPrologue
)

var originNames = [...]string{0: "unknown", FromReloc: "reloc", FromPatchable: "patchable_function_entries", FromTable: "mcount_loc", FromDecode: "decode", FromPrologue: "prologue"}

func (s Origin) String() string {
	if int(s) < len(originNames) {
		return originNames[s]
	}
	return fmt.Sprintf("source(%d)", uint8(s))
}

// MarshalText makes origins print by name in JSON.
func (s Origin) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON writes a site with the fields users read, in a stable form;
// "state" is the instruction the site holds (State.Insn).
func (s Site) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Section  string `json:"section"`
		Offset   uint64 `json:"offset"`
		Len      int    `json:"len"`
		Kind     Kind   `json:"kind"`
		State    string `json:"state"`
		Function string `json:"function"`
		FuncOff  uint64 `json:"func_offset"`
		Hook     string `json:"hook,omitempty"`
		Pre      int32  `json:"pre,omitempty"`
		Weak     bool   `json:"weak,omitempty"`
		Source   Origin `json:"source"`
	}{s.SecName, s.Off, s.Len, s.Kind, s.State.Insn(), s.Func, s.FuncOff, s.Hook(), s.Pre, s.Weak, s.Origin})
}
