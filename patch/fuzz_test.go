package patch

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/elfx"
	"ftpatch/funclist"
	"ftpatch/internal/fuzzing"
)

// FuzzPatch runs the whole patcher on arbitrary bytes: Load, Plan (enable
// a list), Apply, Verify. Nothing may panic. Whatever ftpatch writes must
// load again and pass Verify, and planning the same request on it must
// find nothing to change.
//
// Seeded with programs built here (gcc, the runtime linked: as linked,
// and enabled), so mutations reach the site table, the config record and
// the trampolines rather than stopping at the ELF header.
//
//	go test -run '^$' -fuzz '^FuzzPatch$' -fuzztime 3m -fuzzminimizetime 5s ./patch
func FuzzPatch(f *testing.F) {
	dir := f.TempDir()
	for i, b := range []build{builds[1], builds[4]} { // -no-pie and -fpatchable-function-entry: small, two shapes
		d := filepath.Join(dir, string(rune('a'+i)))
		if err := os.Mkdir(d, 0o755); err != nil {
			f.Fatal(err)
		}
		prog := b.make(f, d)
		data, err := os.ReadFile(prog)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		out := filepath.Join(d, "enabled")
		if _, err := Run(Options{Path: prog, Out: out, Request: Request{Op: Enable, List: list(f, "fib\nhelper\n"), Inputs: "list"}}); err != nil {
			f.Fatal(err)
		}
		if data, err = os.ReadFile(out); err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	l, err := funclist.Parse("list", strings.NewReader("*\n!main\n"))
	if err != nil {
		f.Fatal(err)
	}
	req := Request{Op: Enable, Tracer: TracerGraph, List: l, Inputs: "list"}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzing.FailOnPanic(t)
		ef, err := elfx.Parse("fuzz", data)
		if err != nil {
			return
		}
		b, err := Load(ef, nil)
		if err != nil {
			return
		}
		b.Verify()
		p, err := b.Plan(req)
		if err != nil {
			return
		}
		var img bytes.Buffer
		if err := b.Apply(p, &img, nil); err != nil {
			t.Fatalf("Plan succeeded, Apply failed: %v", err)
		}
		ef2, err := elfx.Parse("fuzz-out", img.Bytes())
		if err != nil {
			t.Fatalf("the patched image does not parse: %v", err)
		}
		b2, err := Load(ef2, nil)
		if err != nil {
			t.Fatalf("the patched image does not load: %v", err)
		}
		if r := b2.Verify(); !r.OK() {
			t.Fatalf("the patched image fails verify: %v", r.Problems)
		}
		if p2, err := b2.Plan(req); err != nil || !p2.Unchanged {
			t.Fatalf("planning the same request again: %v, %d writes", err, len(p2.Writes))
		}
	})
}
