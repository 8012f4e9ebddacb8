package sites

import (
	"ftpatch/arch"
	"ftpatch/elfx"
	"ftpatch/isa/arm64"
	"ftpatch/isa/x86"
	"slices"
)

// A siteISA is what finding and classifying sites does differently per
// instruction set: the names of the hooks and trampolines, and the
// steps that read a site's instructions (asking the ISA packages for
// every byte). siteISAOf chooses one from a file's architecture, the
// one place in this package that does.
type siteISA struct {
	hooks  map[string]Kind   // the compiler hooks, by symbol name
	tramps map[string]callee // the runtime's trampolines, by symbol name
	kinds  []Kind            // the kinds of site of this ISA
	// entry is where an entry site starts in text: the function start,
	// or after its landing pad.
	entry func(text []byte, start uint64) uint64
	// areaStart reports whether a patchable area at e starts the entry
	// of the function at start.
	areaStart func(text []byte, start, e uint64) bool
	// reloc turns a relocation against a hook in an object into a site.
	reloc func(s *objScan, t *elfx.Section, text []byte, r elfx.Rela, hook hookSym) (Site, bool, error)
	// patchSite checks a patchable area of an object (see
	// objScan.patchSite).
	patchSite func(s *objScan, t *elfx.Section, text []byte, e, site uint64, pre int, fun fn) (*Site, error)
	// classify reads an object's table entry (see objScan.classify).
	classify func(s *objScan, t *elfx.Section, text []byte, off uint64, fun fn) (*Site, error)
	// linked reads a linked file's table entry (see classifyLinked).
	linked func(code []byte, off uint64, fun fn, site *Site, areas map[uint64]bool, calls *callResolver, bad func(string, ...any) error) (*Site, error)
	// dead reads a table entry outside every function (see classifyDead).
	dead func(code []byte, site *Site, calls *callResolver)
	// findFunc finds the site of a function by decoding its entry (see
	// FindDecoded).
	findFunc func(d *decoder, fn []byte, start uint64) (found, bool)
}

var x86Sites = siteISA{
	hooks:  x86HookKinds,
	tramps: x86Trampolines,
	kinds:  []Kind{X86Fentry, X86Mcount, X86Patchable, X86Chain},
	entry:  x86.Entry,
	areaStart: func(text []byte, start, e uint64) bool {
		return x86.AreaStart(text[start:], e-start)
	},
	reloc: func(s *objScan, t *elfx.Section, text []byte, r elfx.Rela, hook hookSym) (Site, bool, error) {
		return s.x86Reloc(t, text, r, hook.name, hook.kind)
	},
	patchSite: x86PatchSite,
	classify:  x86Classify,
	linked:    x86Linked,
	dead:      x86Dead,
	findFunc:  (*decoder).x86Func,
}

var arm64Sites = siteISA{
	hooks:  arm64HookKinds,
	tramps: arm64Trampolines,
	kinds:  []Kind{ARM64Patchable, ARM64CallOps, ARM64Mcount},
	entry:  arm64.Entry,
	areaStart: func(text []byte, start, e uint64) bool {
		return e == start || e == arm64.Entry(text, start)
	},
	reloc: func(s *objScan, t *elfx.Section, text []byte, r elfx.Rela, hook hookSym) (Site, bool, error) {
		return s.arm64Reloc(t, text, r, hook.name)
	},
	patchSite: arm64PatchSite,
	classify:  arm64Classify,
	linked:    arm64Linked,
	dead:      arm64Dead,
	findFunc:  (*decoder).arm64Func,
}

// noSites answers for an architecture without sites: no hooks, so no
// file of it has any.
var noSites = siteISA{}

// siteISAs is the table of siteISA by architecture.
var siteISAs = map[arch.Arch]*siteISA{
	arch.X86_64: &x86Sites,
	arch.ARM64:  &arm64Sites,
}

// siteISAOf returns what finding sites does for architecture a.
func siteISAOf(a arch.Arch) *siteISA {
	if si, ok := siteISAs[a]; ok {
		return si
	}
	return &noSites
}

// kindArch is the architecture of the sites of kind k; arch.Default for
// a kind no ISA lists (KindUnknown).
func kindArch(k Kind) arch.Arch {
	for a, si := range siteISAs {
		if slices.Contains(si.kinds, k) {
			return a
		}
	}
	return arch.Default
}
