// Package arch names the instruction set architectures ftpatch supports.
//
// Every other package that needs to branch on the architecture (ELF
// reading, site discovery, instruction encoding) uses this one type, so a
// machine number read from a file and an encoder chosen for a site cannot
// disagree.
package arch

import (
	"debug/elf"
	"fmt"
)

// An Arch is a supported instruction set architecture.
type Arch uint8

// The supported architectures. The zero value is not an architecture, so a
// forgotten assignment is caught as Unknown rather than taken for x86-64.
const (
	Unknown Arch = iota
	X86_64       // AMD64, ELF machine EM_X86_64 (62)
	ARM64        // AArch64, ELF machine EM_AARCH64 (183)
)

var names = [...]string{Unknown: "unknown", X86_64: "x86_64", ARM64: "arm64"}

// String returns the name used on command lines and in output: "x86_64" or "arm64".
func (a Arch) String() string {
	if int(a) < len(names) {
		return names[a]
	}
	return fmt.Sprintf("arch(%d)", uint8(a))
}

// Parse turns a name as printed by String (or a common alias: amd64,
// x86-64, aarch64) into an Arch.
func Parse(s string) (Arch, error) {
	switch s {
	case "x86_64", "x86-64", "amd64":
		return X86_64, nil
	case "arm64", "aarch64":
		return ARM64, nil
	}
	return Unknown, fmt.Errorf("unknown architecture %q (want x86_64 or arm64)", s)
}

// machines are the ELF machine numbers of the architectures.
var machines = [...]elf.Machine{X86_64: elf.EM_X86_64, ARM64: elf.EM_AARCH64}

// FromELF returns the architecture of ELF machine m, or Unknown for a
// machine ftpatch does not handle.
func FromELF(m elf.Machine) Arch {
	for a, am := range machines {
		if Arch(a) != Unknown && am == m {
			return Arch(a)
		}
	}
	return Unknown
}

// Default is the architecture assumed where none is given: that of
// the only runtime port so far.
const Default = X86_64
