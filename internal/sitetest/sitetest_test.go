package sitetest_test

import (
	"testing"

	"ftpatch/internal/sitetest"
)

// TestFinders: on a checked-in object and a linked program built from
// the same kind of source, each helper returns what its finder finds:
// sites from the object's table, the program's table and its decoded
// entries (the same count), and symbols by name, Symbol agreeing with
// Symbols.
func TestFinders(t *testing.T) {
	_, obj := sitetest.Object(t, "../../sites/testdata/basic-x86_64-gcc-O2-pg-mfentry.o")
	if len(obj.Sites) == 0 {
		t.Error("Object: no sites in a -pg -mfentry object")
	}
	const prog = "../../sites/testdata/linked/prog-x86_64-gcc-O2-g-pg-mfentry-rec"
	f, l := sitetest.Linked(t, prog)
	_, d := sitetest.Decoded(t, prog)
	if len(l.Sites) == 0 || len(d.Sites) != len(l.Sites) {
		t.Errorf("Linked: %d sites, Decoded: %d; want the same number, not 0", len(l.Sites), len(d.Sites))
	}
	syms := sitetest.Symbols(t, f)
	main, ok := syms["main"]
	if !ok || main == 0 {
		t.Fatalf("Symbols: main at 0x%x (%v)", main, ok)
	}
	if got := sitetest.Symbol(t, f, "main"); got != main {
		t.Errorf("Symbol(main) = 0x%x, Symbols says 0x%x", got, main)
	}
}
