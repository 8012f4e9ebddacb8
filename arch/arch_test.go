package arch

import (
	"debug/elf"
	"testing"
)

// TestFromELF: the two machines map to their architectures, anything
// else to Unknown.
func TestFromELF(t *testing.T) {
	for m, want := range map[elf.Machine]Arch{
		elf.EM_X86_64: X86_64, elf.EM_AARCH64: ARM64, elf.EM_NONE: Unknown, elf.EM_386: Unknown, elf.EM_RISCV: Unknown,
	} {
		if got := FromELF(m); got != want {
			t.Errorf("FromELF(%v) = %v, want %v", m, got, want)
		}
	}
}
