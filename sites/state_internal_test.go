package sites

import (
	"testing"

	"ftpatch/runtime/abi"
)

// TestCallState: a linked file's call site is the compiler's when it
// reaches the start of a hook, enabled when it reaches the start of a
// trampoline, and direct otherwise: a call into the middle of a hook or
// trampoline is neither.
func TestCallState(t *testing.T) {
	for _, c := range []struct {
		call Call
		want State
	}{
		{Call{Name: abi.Fentry}, StateHook},
		{Call{Name: abi.Mcount, Via: ViaPLT}, StateHook},
		{Call{Name: abi.Caller5}, StateTraced},
		{Call{Name: abi.Stub, Via: ViaGOT}, StateTraced},
		{Call{Name: abi.Fentry, Off: 4}, StateDirect},
		{Call{Name: abi.Caller6, Off: 1}, StateDirect},
		{Call{Name: "helper"}, StateDirect},
		{Call{}, StateDirect},
	} {
		if got := callState(x86HookKinds, x86Trampolines, &c.call); got != c.want {
			t.Errorf("a call to %v: %v, want %v", &c.call, got, c.want)
		}
	}
	if got := callState(arm64HookKinds, arm64Trampolines, &Call{Name: abi.ARM64Mcount}); got != StateHook {
		t.Errorf("arm64 _mcount: %v", got)
	}
}
