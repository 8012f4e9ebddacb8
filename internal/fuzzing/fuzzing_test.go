package fuzzing

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Fatalf was given.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// TestFailOnPanic checks a panic becomes one failure naming the value and
// the stack, and that a function that returns fails nothing.
func TestFailOnPanic(t *testing.T) {
	for _, c := range []struct {
		name  string
		body  func()
		wants []string
	}{
		{"panics", func() { panic("boom") }, []string{"panic: boom", "goroutine ", "fuzzing_test.go"}},
		{"returns", func() {}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{TB: t}
			func() {
				defer FailOnPanic(r)
				c.body()
			}()
			if c.wants == nil && r.msg != "" {
				t.Fatalf("failed with %q, want no failure", r.msg)
			}
			for _, w := range c.wants {
				if !strings.Contains(r.msg, w) {
					t.Errorf("failure %q does not contain %q", r.msg, w)
				}
			}
		})
	}
}
