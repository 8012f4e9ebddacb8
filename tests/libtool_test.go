package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// libtoolBuild builds tests/libtool, a program and the libtool library
// it links, with `CC="ftpatch cc gcc"` alone (configure's extra
// arguments: configure), once per set of tools (cachedBuild), and
// returns the tree, which the caller must not write (traces and
// programs go to directories of the test's own): the wrapper scripts
// name it by its absolute path.
func libtoolBuild(t *testing.T, kind string, configure string) string {
	t.Helper()
	need(t, "gcc", "make", "autoreconf", "automake", "libtoolize")
	src, err := filepath.Abs("libtool")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"configure.ac", "Makefile.am", "greet.c", "hello.c"}
	key := []string{"recipe 2", kind, configure} // change the recipe number with the recipe
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		key = append(key, string(b))
	}
	b := cachedBuild(t, "libtool-"+kind, key, func(dir string) {
		for _, f := range files {
			run(t, dir, "cp", filepath.Join(src, f), dir)
		}
		// The compiler command stays in the build (a relinking script
		// runs it again): ftpatch from a copy that lives as long as it.
		run(t, dir, "cp", tool("ftpatch"), filepath.Join(dir, "ftpatch"))
		shell(t, dir, []string{"CC=" + filepath.Join(dir, "ftpatch") + " cc gcc", "CFLAGS=-g -O2"}, "autoreconf -i && ./configure -q "+configure+" && make")
	})
	return b
}

// ftpatchIn runs ftpatch with args in dir and returns its output and
// exit status.
func ftpatchIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	out, stderr, code, err := runStatus(dir, append([]string{tool("ftpatch")}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out, stderr, code
}

// expectRun fails the test unless the command ended with code and its
// stderr has each of want.
func expectRun(t *testing.T, what, stderr string, code, wantCode int, want ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: exit %d, want %d; stderr:\n%s", what, code, wantCode, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr does not say %q:\n%s", what, w, stderr)
		}
	}
}

// TestLibtoolWrapper: on a libtool build made with ftpatch cc, the
// wrapper script libtool leaves at ./hello (it runs .libs/hello with the
// library's directory in LD_LIBRARY_PATH) is named as such by sites,
// verify, enable and disable, with the program to give them; record runs
// it, checking and naming the program it runs, whose trace has the
// library's function too, and --auto-args reads the program's DWARF.
// A filter or an enable glob that matches only the library's function
// is answered with the library, found as the loader finds it (the
// wrapper's LD_LIBRARY_PATH): record's already applies there, which the
// trace shows; enable's is done by the command it prints.
func TestLibtoolWrapper(t *testing.T) {
	t.Parallel()
	dir := libtoolBuild(t, "needless", "")
	tmp := t.TempDir()
	at := func(name string) string { return filepath.Join(tmp, name) }
	script := "it runs .libs/hello; give that to ftpatch "
	for _, args := range [][]string{{"sites", "./hello"}, {"verify", "./hello"}, {"enable", "./hello", "greet_*"}, {"disable", "./hello"}} {
		_, stderr, code := ftpatchIn(t, dir, args...)
		expectRun(t, strings.Join(args, " "), stderr, code, 1, "./hello: a libtool wrapper script, not the program (not an ELF file): "+script+args[0])
	}

	replay := func(trace string) string {
		out, _ := run(t, dir, tool("ftpatch"), "replay", trace)
		return out
	}
	wrapperNote := "ftpatch: note: ./hello is a libtool wrapper script for .libs/hello: running the script, which runs it"
	out, stderr, code := ftpatchIn(t, dir, "record", "-d", at("t1"), "./hello")
	expectRun(t, "record ./hello", stderr, code, 0, wrapperNote, "the trace is in "+at("t1"))
	if out != "hello, world\n" {
		t.Errorf("record ./hello: the program printed %q", out)
	}
	// A leaf shows as "f();", or "f() {" when it holds a time off the
	// CPU (ftpatch record records scheduler events).
	if r := replay(at("t1")); !regexp.MustCompile(`main\(\) \{[\s\S]*greet_world\(\) \{[\s\S]*puts\(\)( \{|;)[\s\S]*add\(\)( \{|;)`).MatchString(r) {
		t.Errorf("the trace through the wrapper lacks main, greet_world (in the library) and its call of puts, or add:\n%s", r)
	}

	_, stderr, code = ftpatchIn(t, dir, "record", "-d", at("t2"), "--auto-args", "--filter", "add", "./hello")
	expectRun(t, "record --auto-args", stderr, code, 0, wrapperNote)
	if r := replay(at("t2")); !regexp.MustCompile(`add\(1, 2\) = 3;|add\(1, 2\) \{\n(.*/\* (off-CPU|pre-empted) .*\n)+.*\} = 3; /\* add \*/`).MatchString(r) {
		t.Errorf("record --auto-args through the wrapper: no add(1, 2) = 3 in the trace:\n%s", r)
	}

	for _, c := range []struct{ flag, trace string }{{"--filter", "t3"}, {"-F", "t4"}} {
		_, stderr, code = ftpatchIn(t, dir, "record", "-d", at(c.trace), c.flag, "greet_*", "./hello")
		expectRun(t, "record "+c.flag+" greet_*", stderr, code, 0,
			"ftpatch: note: "+c.flag+` "greet_*" matches no function of .libs/hello, but greet_world in .libs/libgreet.so.0, which it links: the runtime applies `+c.flag+" there as well")
		if r := replay(at(c.trace)); !strings.Contains(r, "greet_world()") || strings.Contains(r, "main()") {
			t.Errorf("record %s greet_*: the trace is not greet_world's alone:\n%s", c.flag, r)
		}
	}

	hint := `ftpatch: "greet_*" matches greet_world in .libs/libgreet.so.0, which .libs/hello links: enable it there: ftpatch enable .libs/libgreet.so.0 'greet_*'`
	_, stderr, code = ftpatchIn(t, dir, "enable", "-o", at("out"), ".libs/hello", "greet_*")
	expectRun(t, "enable .libs/hello greet_*", stderr, code, 1, `.libs/hello: the list chooses no function: argument "greet_*": 0 functions matched "greet_*"`, hint)
	_, stderr, code = ftpatchIn(t, dir, "enable", "-o", at("out"), ".libs/hello", "add", "greet_*")
	expectRun(t, "enable .libs/hello add greet_*", stderr, code, 0, `ftpatch: warning: argument "greet_*": 0 functions matched "greet_*"`,
		strings.Replace(hint, "ftpatch: ", "ftpatch: note: ", 1))
	_, stderr, code = ftpatchIn(t, dir, "enable", "-o", at("lib.out"), ".libs/libgreet.so.0", "greet_*")
	expectRun(t, "the enable the hint gives", stderr, code, 0)
	_, stderr, code = ftpatchIn(t, dir, "disable", "-o", at("out"), ".libs/hello", "greet_*")
	expectRun(t, "disable .libs/hello greet_*", stderr, code, 1, "disable it there: ftpatch disable .libs/libgreet.so.0 'greet_*'")
	_, stderr, code = ftpatchIn(t, dir, "enable", "-o", at("out"), ".libs/hello", "puts")
	expectRun(t, "enable .libs/hello puts", stderr, code, 1, `ftpatch: "puts" matches puts in `, "libc.so.6, which .libs/hello links, but that object was not built for tracing")
}

// TestLibtoolRelinkingWrapper: where libtool relinks the program for
// the build tree (a wrapper script that runs .libs/lt-hello, made when
// it first runs), the script is named with the program it will run,
// and until then the one to read; record runs it, the program it
// checks and whose DWARF --auto-args reads being the one the script
// runs.
func TestLibtoolRelinkingWrapper(t *testing.T) {
	t.Parallel()
	// A copy of the tree: the script writes .libs/lt-hello when it runs.
	dir := filepath.Join(t.TempDir(), "build")
	run(t, "", "cp", "-a", libtoolBuild(t, "fast-install", "lt_cv_shlibpath_overrides_runpath=no"), dir)
	if _, err := os.Stat(filepath.Join(dir, ".libs", "lt-hello")); err == nil {
		t.Fatal(".libs/lt-hello is there before the script ran")
	}
	_, stderr, code := ftpatchIn(t, dir, "sites", "./hello")
	expectRun(t, "sites ./hello before a run", stderr, code, 1, "./hello: a libtool wrapper script, not the program (not an ELF file): it runs .libs/lt-hello, which it makes, relinked from the same objects, when it runs next; give .libs/hello to ftpatch sites")
	_, stderr, code = ftpatchIn(t, dir, "enable", "./hello", "add")
	expectRun(t, "enable ./hello before a run", stderr, code, 1, "it runs .libs/lt-hello, which it makes, relinked, when it runs next: run ./hello once, then give .libs/lt-hello to ftpatch enable")

	trace := filepath.Join(t.TempDir(), "t1")
	_, stderr, code = ftpatchIn(t, dir, "record", "-d", trace, "--auto-args", "--filter", "add,greet_*", "./hello")
	expectRun(t, "record --auto-args ./hello", stderr, code, 0, "ftpatch: note: ./hello is a libtool wrapper script for .libs/lt-hello: running the script, which runs it")
	if out, _ := run(t, dir, tool("ftpatch"), "replay", trace); !strings.Contains(out, "add(1, 2) = 3;") || !strings.Contains(out, "greet_world();") {
		t.Errorf("record --auto-args through the relinking wrapper: the trace lacks add(1, 2) = 3 or greet_world:\n%s", out)
	}
	_, stderr, code = ftpatchIn(t, dir, "sites", "./hello")
	expectRun(t, "sites ./hello after a run", stderr, code, 1, "it runs .libs/lt-hello; give that to ftpatch sites")
	if out, stderr, code := ftpatchIn(t, dir, "sites", ".libs/lt-hello"); code != 0 || !strings.Contains(out, " add ") {
		t.Errorf("sites .libs/lt-hello: exit %d, no site in add:\n%s%s", code, out, stderr)
	}
}
