// Package fuzzing holds what the module's fuzz targets share beyond their
// seeds (those come from internal/fixture).
package fuzzing

import (
	"runtime/debug"
	"testing"
)

// FailOnPanic turns a panic into a test failure with its stack, so one
// crashing input is reported as that input's failure rather than ending
// the test binary. Defer it directly, first thing in the fuzz function:
//
//	f.Fuzz(func(t *testing.T, data []byte) {
//		defer fuzzing.FailOnPanic(t)
//		...
//	})
//
// (recover only stops a panic when called by the deferred function
// itself, which is why this is the deferred function and not a helper it
// calls.)
func FailOnPanic(t testing.TB) {
	if r := recover(); r != nil {
		t.Fatalf("panic: %v\n%s", r, debug.Stack())
	}
}
