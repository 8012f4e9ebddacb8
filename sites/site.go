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
)

var kindNames = [...]string{
	KindUnknown:    "unknown",
	X86Fentry:      "fentry",
	X86Mcount:      "mcount",
	X86Patchable:   "patchable",
	ARM64Patchable: "patchable",
	ARM64CallOps:   "callops",
	ARM64Mcount:    "mcount",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// AtEntry reports whether sites of this kind sit at the function's entry
// (where the return address is still on top of the stack or in the link
// register), rather than after the prologue.
func (k Kind) AtEntry() bool { return k != X86Mcount && k != ARM64Mcount }

// MarshalText makes kinds print by name in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// A State is what a site's bytes hold now.
type State uint8

// The states of a site.
const (
	StateUnknown State = iota
	// StateCall: the compiler's call to the hook (or, in a linked file,
	// any call or branch-with-link).
	StateCall
	// StateNop: one NOP instruction covering the whole site, ready to be
	// patched.
	StateNop
	// StateNops: several NOPs covering the site, as the compiler emits for
	// -fpatchable-function-entry on x86-64; they must become one NOP
	// before any thread can run them while the site is being enabled.
	StateNops
)

var stateNames = [...]string{StateUnknown: "unknown", StateCall: "call", StateNop: "nop", StateNops: "nops"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// MarshalText makes states print by name in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// A Site is one function-entry patch site. Objects hold 100k of them,
// so the fields are ordered and sized to keep a Site at 88 bytes.
type Site struct {
	Off      uint64 // offset of the site in its section (objects) or its address (linked files)
	FuncOff  uint64 // bytes from the function's symbol to the site
	SecName  string // name of the section holding the site
	Func     string // the function the site belongs to
	Section  int    // index of that section (objects)
	Len      int    // bytes that patching may change
	Rela     int32  // index of the SHT_RELA section holding the hook relocation, or -1
	RelaIdx  int32  // index of that relocation in its section
	Group    int32  // index of the SHT_GROUP the site's section belongs to, or 0
	Pre      int32  // bytes of NOPs before the function symbol (-fpatchable-function-entry=N,M)
	Kind     Kind
	State    State
	Weak     bool   // the function is weak: a linker may discard it for a strong one
	Discover Source // where the site was found
}

// Hook is the symbol a site calls while it holds the compiler's call:
// __fentry__, mcount or _mcount; "" for NOPs and patchable areas.
func (s *Site) Hook() string {
	if s.State != StateCall {
		return ""
	}
	switch s.Kind {
	case X86Fentry:
		return "__fentry__"
	case X86Mcount:
		return "mcount"
	case ARM64Mcount:
		return "_mcount"
	}
	return ""
}

// A Source says where a site was found.
type Source uint8

// The sources of sites.
const (
	FromReloc     Source = iota + 1 // a relocation against a hook symbol
	FromPatchable                   // __patchable_function_entries
	FromTable                       // an existing __mcount_loc table
	// FromDecode: decoding each function's entry in a linked file that has
	// no table, the call checked against the symbol table (FindDecoded).
	FromDecode
)

var sourceNames = [...]string{0: "unknown", FromReloc: "reloc", FromPatchable: "patchable_function_entries", FromTable: "mcount_loc", FromDecode: "decode"}

func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("source(%d)", uint8(s))
}

// MarshalText makes sources print by name in JSON.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON writes a site with the fields users read, in a stable form.
func (s Site) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Section  string `json:"section"`
		Offset   uint64 `json:"offset"`
		Len      int    `json:"len"`
		Kind     Kind   `json:"kind"`
		State    State  `json:"state"`
		Function string `json:"function"`
		FuncOff  uint64 `json:"func_offset"`
		Hook     string `json:"hook,omitempty"`
		Pre      int32  `json:"pre,omitempty"`
		Weak     bool   `json:"weak,omitempty"`
		Source   Source `json:"source"`
	}{s.SecName, s.Off, s.Len, s.Kind, s.State, s.Func, s.FuncOff, s.Hook(), s.Pre, s.Weak, s.Discover})
}
