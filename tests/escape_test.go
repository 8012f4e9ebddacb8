package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileNames are progs/hostile.c's placeholders and the names the test
// gives them in the linked program: each the same length.
var hostileNames = []struct{ placeholder, name, shown string }{
	{"cls_XXX", "cls\x1b[2J", `cls\x1b[2J`},
	{"clip_XXXXXXXXXXXXXXX", "clip\x1b]52;c;ZXZpbA==\a", `clip\x1b]52;c;ZXZpbA==\a`},
	{"c1_X", "c1\u009b", `c1\u009b`},
}

// TestHostileNames: a traced program whose symbols are terminal escape
// sequences (one clears the screen, one writes the clipboard through OSC
// 52, one holds a C1 CSI), which names itself and its thread with one
// and passes one as a string argument: every view ftpatch prints of it
// (sites, replay, report, graph, info, the folded stacks, the SVG and the
// Chrome JSON) shows each name escaped, and no command writes a control
// character other than a newline or tab, on stdout or stderr; nor does
// the error naming an executable whose path holds one.
func TestHostileNames(t *testing.T) {
	t.Parallel()
	tg, dir := gccTest(t)
	prog := traced(t, tg, dir, "-pg -mfentry", true, "hostile.c")
	b, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hostileNames {
		if len(h.placeholder) != len(h.name) || bytes.Count(b, []byte(h.placeholder)) != 1 {
			t.Fatalf("%q: %d times in %s, want it once, as long as %q", h.placeholder, bytes.Count(b, []byte(h.placeholder)), prog, h.name)
		}
		b = bytes.Replace(b, []byte(h.placeholder), []byte(h.name), 1)
	}
	if err := os.WriteFile(prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "ftrace.data")
	out, _ := run(t, dir, "env", "FTRACE=function_graph", "FTRACE_OUT="+data, "FTRACE_ARGS=show@arg1/s", prog)
	if out != "98\n" {
		t.Fatalf("the program printed %q, want 98", out)
	}
	ftpatch := tool("ftpatch")
	for _, c := range []struct {
		name  string
		argv  []string
		funcs bool     // it names functions: each hostile name shows, escaped
		want  []string // and these regular expressions
	}{
		{"sites", []string{"sites", prog}, true, nil},
		{"replay", []string{"replay", data}, true, []string{regexp.QuoteMeta(`show("arg\x1b[2J")`)}},
		{"report", []string{"report", data}, true, nil},
		{"graph", []string{"graph", data}, true, nil},
		{"info", []string{"info", data}, false, []string{`pid: +\d+ \(name(\\x1b|\?)\[2J\)`, `thread: +pid \d+ tid \d+ \(name\\x1b\[2J\): `, `task list: +\d+\(name\\x1b\[2J\)`}},
		{"flame-graph", []string{"dump", "--flame-graph", data}, true, nil},
		{"svg", []string{"dump", "--svg", data}, true, nil},
		{"chrome", []string{"dump", "--chrome", data}, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr := run(t, dir, append([]string{ftpatch}, c.argv...)...)
			for _, o := range []struct{ what, text string }{{"stdout", stdout}, {"stderr", stderr}} {
				if bad := rawControl(o.text); bad != "" {
					t.Errorf("%s: %s on %s:\n%s", strings.Join(c.argv, " "), bad, o.what, o.text)
				}
			}
			var want []string
			for _, h := range hostileNames {
				if !c.funcs {
					break
				}
				if c.name == "chrome" {
					h.shown = strings.ReplaceAll(h.shown, `\`, `\\`) // in JSON
				}
				want = append(want, h.shown)
			}
			for _, w := range want {
				if !strings.Contains(stdout, w) {
					t.Errorf("%s: no %s in:\n%s", strings.Join(c.argv, " "), w, stdout)
				}
			}
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(stdout) {
					t.Errorf("%s: no %s in:\n%s", strings.Join(c.argv, " "), w, stdout)
				}
			}
		})
	}
	t.Run("error", func(t *testing.T) {
		meta, err := os.ReadFile(filepath.Join(image(t, data), "meta"))
		if err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(dir, "bad.data")
		if err := os.Mkdir(bad, 0o755); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(string(meta), "\n") {
			if strings.HasPrefix(l, "exe ") {
				l = "exe /nonexistent/" + hostileNames[0].name
			}
			lines = append(lines, l)
		}
		if err := os.WriteFile(filepath.Join(bad, "meta"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code, err := runStatus(dir, ftpatch, "replay", bad)
		if err != nil || code == 0 || !strings.Contains(stderr, "/nonexistent/"+hostileNames[0].shown) {
			t.Fatalf("replay of a trace naming a missing executable: exit %d, %v, stderr:\n%s", code, err, stderr)
		}
		if bad := rawControl(stderr); bad != "" {
			t.Errorf("%s in the error:\n%s", bad, stderr)
		}
	})
}

// rawControl names the first control character in s other than a
// newline or a tab (C0, DEL, C1) or byte that is not UTF-8; or says "".
func rawControl(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Sprintf("byte %#x, not UTF-8,", s[i])
		case r == '\n' || r == '\t':
		case r < 0x20 || r >= 0x7f && r < 0xa0:
			return fmt.Sprintf("control character %U", r)
		}
	}
	return ""
}
