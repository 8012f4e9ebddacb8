// Package sitetest opens ELF files and finds their sites and symbols for
// the tests of several packages (the end-to-end tests, recordmcount's and
// ftpatch's), failing the test with the file's name when a step fails:
// the plumbing those tests start with, in one place.
package sitetest

import (
	"testing"

	"ftpatch/elfx"
	"ftpatch/sites"
)

// Open parses the ELF file at path; an error fails t.
func Open(t testing.TB, path string) *elfx.File {
	t.Helper()
	f, err := elfx.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Parse parses data, the bytes of the ELF file named name; an error
// fails t.
func Parse(t testing.TB, name string, data []byte) *elfx.File {
	t.Helper()
	f, err := elfx.Parse(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Object opens the relocatable object at path and finds its sites
// (sites.FindObject); an error fails t.
func Object(t testing.TB, path string) (*elfx.File, *sites.Object) {
	t.Helper()
	f := Open(t, path)
	return f, Find(t, f, sites.FindObject)
}

// Linked opens the linked program or shared object at path and reads its
// site table (sites.FindLinked); an error fails t.
func Linked(t testing.TB, path string) (*elfx.File, *sites.Linked) {
	t.Helper()
	f := Open(t, path)
	return f, Find(t, f, sites.FindLinked)
}

// Decoded opens the linked file at path and finds its sites by decoding
// its function entries (sites.FindDecoded); an error fails t.
func Decoded(t testing.TB, path string) (*elfx.File, *sites.Linked) {
	t.Helper()
	f := Open(t, path)
	return f, Find(t, f, sites.FindDecoded)
}

// Find runs finder, one of sites' Find functions, on f (from Open or
// Parse) and returns what it found; an error fails t, naming the file.
func Find[T any](t testing.TB, f *elfx.File, finder func(*elfx.File) (T, error)) T {
	t.Helper()
	found, err := finder(f)
	if err != nil {
		t.Fatalf("%s: %v", f.Path, err)
	}
	return found
}

// Symbols returns the value of each symbol of f's symbol table, by name
// (of several symbols with one name, the last); an error fails t.
func Symbols(t testing.TB, f *elfx.File) map[string]uint64 {
	t.Helper()
	_, syms, err := f.Symtab()
	if err != nil {
		t.Fatal(err)
	}
	addr := make(map[string]uint64, len(syms))
	for _, s := range syms {
		addr[s.Name] = uint64(s.Value)
	}
	return addr
}

// Symbol returns the value of the first symbol of f's symbol table named
// name; an error, or no such symbol, fails t.
func Symbol(t testing.TB, f *elfx.File, name string) uint64 {
	t.Helper()
	_, syms, err := f.Symtab()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return uint64(s.Value)
		}
	}
	t.Fatalf("no symbol %q", name)
	return 0
}
