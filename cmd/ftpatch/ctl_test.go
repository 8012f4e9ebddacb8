package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCtlRequest: each ctl command's protocol line, and usage errors
// (exit 2) for what no process could take.
func TestCtlRequest(t *testing.T) {
	abs, _ := filepath.Abs("snap")
	for _, c := range []struct {
		verb string
		args []string
		want string // "": a usage error
	}{
		{"status", nil, "status"},
		{"status", []string{"x"}, ""},
		{"enable", []string{"a*", "!b"}, "enable a* !b"},
		{"enable", nil, ""},
		{"enable", []string{"a b"}, ""},
		{"disable", []string{"a,b"}, ""},
		{"tracer", []string{"function"}, "tracer function"},
		{"tracer", nil, ""},
		{"on", nil, "on"},
		{"off", nil, "off"},
		{"snapshot", nil, "snapshot"},
		{"snapshot", []string{"snap"}, "snapshot " + abs},
		{"snapshot", []string{"a", "b"}, ""},
		{"bogus", nil, ""},
	} {
		got, err := request(c.verb, c.args)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s %v: %q, want an error", c.verb, c.args, got)
			}
		} else if err != nil || got != c.want {
			t.Errorf("%s %v: %q, %v; want %q", c.verb, c.args, got, err, c.want)
		}
	}
	for _, args := range [][]string{{"ctl", "x", "status"}, {"ctl", "1"}, {"ctl", "1", "bogus"}} {
		if _, err := ftpatch(args...); exitCode(err) != exitUsage {
			t.Errorf("ftpatch %s: %v, exit %d; want exit %d", strings.Join(args, " "), err, exitCode(err), exitUsage)
		}
	}
}
