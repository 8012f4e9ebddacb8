package arm64

import (
	"sync"

	"golang.org/x/arch/arm64/arm64asm"
)

// arm64Mu serialises arm64asm.Decode, which records every decode in a
// package-level coverage table (x86asm does so only under its own tests):
// harmless writes of `true`, but a data race between goroutines all the
// same, and sites decodes on several cores.
var arm64Mu sync.Mutex

// Decode decodes one AArch64 instruction from the first 4 bytes of b;
// safe for concurrent use.
func Decode(b []byte) (arm64asm.Inst, error) {
	arm64Mu.Lock()
	defer arm64Mu.Unlock()
	return arm64asm.Decode(b)
}
