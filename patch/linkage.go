package patch

import (
	"debug/elf"
	"errors"
	"fmt"

	"ftpatch/elfx"
	"ftpatch/runtime/abi"
)

// A Linkage is which part of the runtime a linked file holds.
type Linkage uint8

// The linkages.
const (
	// LinksNothing: no runtime; the file's sites, if any, stay the
	// compiler's calls and nothing is traced.
	LinksNothing Linkage = iota
	// LinksRuntime: the runtime, whose load-time pass runs from the
	// program's .preinit_array: a program that traces.
	LinksRuntime
	// LinksModule: the module stub, which registers the file's sites
	// with its program's runtime: a shared object.
	LinksModule
)

var linkageNames = [...]string{LinksNothing: "no runtime", LinksRuntime: "the runtime", LinksModule: "the module stub"}

func (l Linkage) String() string {
	if int(l) < len(linkageNames) {
		return linkageNames[l]
	}
	return fmt.Sprintf("linkage(%d)", uint8(l))
}

// Linked says which part of the runtime the linked file f holds, and
// its config record (whether ftpatch enable patched it, and with which
// tracer), reading only section headers and symbol tables: what a
// command that is about to run a program checks first, without the cost
// of Load. The runtime and the stub both carry the config record
// (ConfigSection); which one is linked is told by its entry point in the
// symbol table (ftrt_init or ftrt_module_init), or in a stripped file by
// the registration the runtime exports (ftrt_module_register), or last
// by a .preinit_array, where the runtime's load-time pass is entered and
// which a shared object cannot have.
func Linked(f *elfx.File) (Linkage, Config, error) {
	if f.Type == elf.ET_REL {
		return LinksNothing, Config{}, fmt.Errorf("a relocatable object, not a linked program")
	}
	_, cfg, err := findConfig(f)
	if errors.Is(err, ErrNoRuntime) {
		return LinksNothing, Config{}, nil
	}
	if err != nil {
		return LinksNothing, Config{}, err
	}
	if _, syms, err := f.Symtab(); err == nil {
		rt, stub := defines(syms, abi.Init), defines(syms, abi.ModuleInit)
		switch {
		case rt && stub:
			return LinksNothing, cfg, fmt.Errorf("%w: both the runtime (%s) and the module stub (%s) are linked: link one, the runtime into a program, the stub into a shared object", ErrNoRuntime, abi.Init, abi.ModuleInit)
		case rt:
			return LinksRuntime, cfg, nil
		case stub:
			return LinksModule, cfg, nil
		}
		return LinksNothing, cfg, fmt.Errorf("%w: %s section present but neither %s nor %s: %s", ErrNoRuntime, ConfigSection, abi.Init, abi.ModuleInit, hintLink)
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_DYNSYM {
			continue
		}
		if syms, err := f.Symbols(s); err == nil && defines(syms, abi.ModuleRegister) {
			return LinksRuntime, cfg, nil
		}
	}
	if f.Section(".preinit_array") != nil {
		return LinksRuntime, cfg, nil
	}
	return LinksModule, cfg, nil
}

// defines reports whether syms defines name.
func defines(syms []elfx.Symbol, name string) bool {
	for i := range syms {
		if syms[i].Name == name && syms[i].Defined() {
			return true
		}
	}
	return false
}
