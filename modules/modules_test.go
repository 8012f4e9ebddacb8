package modules

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/funclist"
	"ftpatch/ldso"
	"ftpatch/record"
	ftrt "ftpatch/runtime"
)

// sh runs a command in dir, failing the test with its output.
func sh(t *testing.T, dir string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// The program of the tests and its libraries: libtraced.so built for
// tracing (sites, their table, the module stub) but for one function
// the compiler left without a site; libplain.so, which the program
// needs through libtraced.so, built without; libdecoded.so, with sites
// and the module stub but no table (no recordmcount); the program,
// which finds them by its run path ($ORIGIN).
const (
	tracedSrc = `int plain_add(int, int);
int traced_sum(int a, int b) { return plain_add(a, b); }
int traced_twice(int a) { return traced_sum(a, a); }
__attribute__((no_instrument_function)) int traced_nosite(int a) { return a; }
`
	plainSrc   = "int plain_add(int a, int b) { return a + b; }\n"
	decodedSrc = "int decoded_one(int a) { return a + 1; }\n"
	mainSrc    = `int traced_twice(int);
int decoded_one(int);
int main_helper(int a) { return traced_twice(a) + decoded_one(a); }
int main(int argc, char **argv) { (void)argv; return main_helper(argc); }
`
)

// build makes the program and its libraries in a new directory and
// returns the program's path.
func build(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is not installed: run `make deps` or `apt-get install gcc`")
	}
	dir := t.TempDir()
	lib, err := ftrt.Cached(context.Background(), ftrt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if lib.Scratch != "" { // a cache another user could change: a build of its own
		t.Cleanup(func() { os.RemoveAll(lib.Scratch) })
	}
	for name, src := range map[string]string{"traced.c": tracedSrc, "plain.c": plainSrc, "decoded.c": decodedSrc, "main.c": mainSrc} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh(t, dir, "gcc", "-O2", "-fpic", "-shared", "-o", "libplain.so", "plain.c")
	sh(t, dir, "gcc", "-O2", "-fpic", "-pg", "-mfentry", "-c", "traced.c")
	sh(t, dir, "gcc", "-O2", "-fpie", "-pg", "-mfentry", "-c", "main.c")
	sh(t, dir, append([]string{"gcc", "-O2", "-fpic", "-pg", "-mfentry", "-shared", "-o", "libdecoded.so", "decoded.c"}, ftrt.ModuleLinkFlags(lib.Archive)...)...)
	for _, r := range record.Files([]string{filepath.Join(dir, "traced.o"), filepath.Join(dir, "main.o")}, record.Options{}, 1) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	sh(t, dir, append([]string{"gcc", "-shared", "-o", "libtraced.so", "traced.o", "-L.", "-lplain", "-Wl,-rpath,$ORIGIN"}, ftrt.ModuleLinkFlags(lib.Archive)...)...)
	sh(t, dir, append([]string{"gcc", "-pie", "-o", "prog", "main.o", "-L.", "-ltraced", "-ldecoded", "-Wl,-rpath,$ORIGIN"}, ftrt.LinkFlags(lib.Archive)...)...)
	return filepath.Join(dir, "prog")
}

// globs makes globs as the command line gives them.
func globs(t *testing.T, gs ...string) []funclist.Glob {
	t.Helper()
	l := &funclist.List{}
	for _, g := range gs {
		if err := l.Add(g, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return l.Globs
}

// TestMissingAndFind: of a program's globs, those matching no function
// with a site in it, and where they match among the objects it links:
// traced where the object was built for tracing and the functions have
// sites, not traced otherwise; a glob matching nowhere, nothing.
func TestMissingAndFind(t *testing.T) {
	prog := build(t)
	gs := globs(t, "main*", "traced_*", "plain_*", "traced_nosite", "decoded_*", "nowhere_*", "!main")
	missing, err := Missing(prog, gs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range missing {
		names = append(names, g.String())
	}
	if got, want := strings.Join(names, " "), "traced_* plain_* traced_nosite decoded_* nowhere_*"; got != want {
		t.Errorf("Missing = %s, want %s", got, want)
	}
	hits, err := Find(prog, ldso.Env{Cache: filepath.Join(t.TempDir(), "none")}, missing)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&got, "%s in %s: %s (%d) traced=%v decoded=%v\n", h.Glob.Pattern, filepath.Base(h.Object.Path), strings.Join(h.Funcs, ","), h.Matched, h.Traced, h.Decoded)
	}
	want := `traced_* in libtraced.so: traced_sum,traced_twice (2) traced=true decoded=false
plain_* in libplain.so: plain_add (1) traced=false decoded=false
traced_nosite in libtraced.so: traced_nosite (1) traced=false decoded=false
decoded_* in libdecoded.so: decoded_one (1) traced=true decoded=true
`
	if got.String() != want {
		t.Errorf("Find:\n%swant:\n%s", got.String(), want)
	}
}

// TestFindErrors: a program that cannot be read is an error; one whose
// library cannot be found has no hits there.
func TestFindErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	g := globs(t, "x*")
	if _, err := Find(script, ldso.Env{}, g); err == nil {
		t.Error("Find on a script: no error")
	}
	if _, err := Missing(script, g); err == nil {
		t.Error("Missing on a script: no error")
	}
	// The program without libtraced.so beside it.
	prog := filepath.Join(dir, "prog")
	b, err := os.ReadFile(build(t))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(prog, b, 0o755)
	hits, err := Find(prog, ldso.Env{Cache: filepath.Join(dir, "none")}, globs(t, "traced_*"))
	if err != nil || len(hits) != 0 {
		t.Errorf("Find with its library gone: %v, %v; want nothing", hits, err)
	}
}
