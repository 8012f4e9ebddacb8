package pass

import "testing"

func TestOne(t *testing.T) { t.Log("a log line") }

func TestSub(t *testing.T) {
	for _, n := range []string{"a", "b"} {
		t.Run(n, func(t *testing.T) { t.Parallel() })
	}
}
