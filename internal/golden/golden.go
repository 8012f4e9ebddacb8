// Package golden compares test output with golden files checked in beside
// the tests, and rewrites them when a test is run with -update:
//
//	go test ./sites -update
//
// It is the one place the -update flag is registered, so every package's
// goldens are refreshed the same way.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with the output the tests produce")

// Update reports whether the test binary was run with -update.
func Update() bool { return *update }

// Check compares got with the golden file at path. With -update it writes
// got to path instead (creating the directory) and passes. Otherwise a
// missing file or any difference fails t, showing the first lines that
// differ.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	t.Errorf("output differs from %s (run with -update to accept it):\n%s", path, Diff(string(want), string(got)))
}

// diffContext is how many equal lines Diff shows around the differing ones.
const diffContext = 3

// maxDiffLines bounds each side of Diff's output: a golden that differs
// everywhere is better read with -update and git diff.
const maxDiffLines = 20

// Diff returns a unified-style line diff of want and got: the block of
// lines from the first difference to the last, with a few equal lines
// around it, "-" marking want's lines and "+" got's (at most maxDiffLines
// of each). It trims the longest common prefix and suffix rather than
// finding a minimal edit script, which is enough to show where a dump
// changed. Equal inputs give "".
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	w, g := splitLines(want), splitLines(got)
	pre := 0
	for pre < len(w) && pre < len(g) && w[pre] == g[pre] {
		pre++
	}
	suf := 0
	for suf < len(w)-pre && suf < len(g)-pre && w[len(w)-1-suf] == g[len(g)-1-suf] {
		suf++
	}
	from := max(pre-diffContext, 0)
	var b strings.Builder
	fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", from+1, len(w)-suf-from, from+1, len(g)-suf-from)
	lines := func(mark byte, ls []string) {
		for i, l := range ls {
			if i == maxDiffLines {
				fmt.Fprintf(&b, "%c... (%d more lines)\n", mark, len(ls)-i)
				break
			}
			fmt.Fprintf(&b, "%c%s\n", mark, l)
		}
	}
	lines(' ', w[from:pre])
	lines('-', w[pre:len(w)-suf])
	lines('+', g[pre:len(g)-suf])
	lines(' ', w[len(w)-suf:min(len(w)-suf+diffContext, len(w))])
	return b.String()
}

// splitLines splits s into lines, marking a missing final newline so a
// difference in it alone still shows.
func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		return lines[:len(lines)-1]
	}
	lines[len(lines)-1] += " (no newline at end)"
	return lines
}
