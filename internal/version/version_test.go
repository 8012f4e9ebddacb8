package version

import "testing"

// TestString: the lines every --version begins with, for a stamped
// build, one with changes, and a plain go build without VCS information.
func TestString(t *testing.T) {
	for _, c := range []struct {
		name string
		i    Info
		want string
	}{
		{"stamped", Info{Version: "v1.2.0-3-gabc", Revision: "abc123", Go: "go1.26.8 linux/amd64"},
			"tool v1.2.0-3-gabc\nrevision: abc123\nbuilt with: go1.26.8 linux/amd64\n"},
		{"modified", Info{Version: "abc-dirty", Revision: "abc123", Modified: true, Go: "go1.26.8 linux/amd64"},
			"tool abc-dirty\nrevision: abc123, with uncommitted changes\nbuilt with: go1.26.8 linux/amd64\n"},
		{"plain go build", Info{Version: "(devel)", Go: "go1.26.8 linux/amd64"},
			"tool (devel)\nrevision: unknown (built without VCS information: make build stamps it)\nbuilt with: go1.26.8 linux/amd64\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.i.String("tool"); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
	// A test binary is built without the Makefile's stamps.
	if v := Get().Version; v != "(devel)" {
		t.Errorf("Get().Version = %q in a test binary, want (devel)", v)
	}
}
