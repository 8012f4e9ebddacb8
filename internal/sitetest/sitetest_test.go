package sitetest_test

import (
	"os"
	"testing"

	"ftpatch/internal/sitetest"
	"ftpatch/sites"
)

// TestFinders: on a checked-in object and a linked program built from
// the same kind of source, each helper returns what its finder finds:
// sites from the object's table (the same from its bytes through Parse
// and Find), the program's table and its decoded entries (the same
// count), and symbols by name, Symbol agreeing with Symbols.
func TestFinders(t *testing.T) {
	const objPath = "../../sites/testdata/basic-x86_64-gcc-O2-pg-mfentry.o"
	_, obj := sitetest.Object(t, objPath)
	if len(obj.Sites) == 0 {
		t.Error("Object: no sites in a -pg -mfentry object")
	}
	data, err := os.ReadFile(objPath)
	if err != nil {
		t.Fatal(err)
	}
	if parsed := sitetest.Find(t, sitetest.Parse(t, objPath, data), sites.FindObject); len(parsed.Sites) != len(obj.Sites) {
		t.Errorf("Find on the parsed bytes: %d sites, Object: %d", len(parsed.Sites), len(obj.Sites))
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
