package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture gives the tree and the layer map of package callgraph's
// fixture name.
func fixture(name string) (src, layers string) {
	dir := filepath.Join("..", "..", "callgraph", "testdata", name)
	return filepath.Join(dir, "src"), filepath.Join(dir, "layers.txt")
}

// TestCheck: -check prints each call running up (where, from what, to
// what in which file) and each circle between layers, and fails on any;
// on a clean layering it prints nothing and passes.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name   string
		failed bool
		out    string
	}{
		{"clean", false, ""},
		{"upward", true, "running up: core/buf.c:15 buf_full → tracer_flush in tracers/flush.c\n" +
			"1 running up (1 calls, 0 references, 0 includes), 0 circles between layers\n"},
		{"circle", true, "running up: lo/a.c:7 lo_a → hi_b in hi/b.c\n" +
			"circle between layers: [lo hi]\n" +
			"1 running up (1 calls, 0 references, 0 includes), 1 circles between layers\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, layers := fixture(c.name)
			var out, errOut bytes.Buffer
			failed, err := run([]string{"-layers", layers, "-check", src}, &out, &errOut)
			if err != nil {
				t.Fatal(err)
			}
			if failed != c.failed || out.String() != c.out {
				t.Errorf("failed %v, output:\n%s\nwant failed %v, output:\n%s", failed, out.String(), c.failed, c.out)
			}
		})
	}
}

// TestReport: without -check the report never fails, whatever it finds,
// and -files adds each file's definitions and edges.
func TestReport(t *testing.T) {
	src, layers := fixture("circle")
	var out bytes.Buffer
	failed, err := run([]string{"-layers", layers, "-files", src}, &out, &bytes.Buffer{})
	if err != nil || failed {
		t.Fatalf("failed %v, %v", failed, err)
	}
	for _, want := range []string{"calls between files       2 ", "circles between layers    1\n  lo hi\n", "lo/a.c\n  defines lo_a (function, line 4)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestErrors: a missing tree or map, a malformed map, -check without a
// map and stray arguments are errors naming what is wrong.
func TestErrors(t *testing.T) {
	src, layers := fixture("clean")
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("arch arch/\ncore core/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no tree", []string{filepath.Join(t.TempDir(), "gone")}, "no such file or directory"},
		{"not a folder", []string{layers}, "layers.txt: not a directory"},
		{"no map", []string{"-layers", "gone.txt", src}, "gone.txt"},
		{"map misses a file", []string{"-layers", bad, src}, "bad.txt: no layer claims tracers/t.c"},
		{"check without map", []string{"-check", src}, "-check needs -layers"},
		{"two trees", []string{src, src}, "usage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := run(c.args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
