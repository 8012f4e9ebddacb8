package asksock

import (
	"strings"
	"testing"
)

// TestQuestion: the runtime's question, "BUILD-ID PATH\n", read; "-"
// for no build-id; a line without the space, or not ended, refused.
func TestQuestion(t *testing.T) {
	for _, c := range []struct {
		in       string
		id, path string
		ok       bool
	}{
		{"3f2a /usr/bin/sort\n", "3f2a", "/usr/bin/sort", true},
		{"- /tmp/a b\n", "", "/tmp/a b", true},
		{"nospace\n", "", "", false},
		{"3f2a /usr/bin/sort", "", "", false},
		{strings.Repeat("x", 9<<10) + " /p\n", "", "", false},
	} {
		id, path, ok := Question(Reader(strings.NewReader(c.in)))
		if id != c.id || path != c.path || ok != c.ok {
			t.Errorf("Question(%.20q): %q, %q, %v; want %q, %q, %v", c.in, id, path, ok, c.id, c.path, c.ok)
		}
	}
}
