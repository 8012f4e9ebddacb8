package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ftpatch/elfx"
)

// wrapperTree lays out a libtool build tree in a new directory: the
// wrapper script libtool wrote (libtool/testdata/KIND/hello) at
// src/hello, and programs under src/.libs (empty files, named by libs).
func wrapperTree(t *testing.T, kind string, libs ...string) string {
	t.Helper()
	root := t.TempDir()
	script, err := os.ReadFile(filepath.Join("..", "..", "libtool", "testdata", kind, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "src", ".libs"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "src", "hello"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		os.WriteFile(filepath.Join(root, "src", ".libs", l), nil, 0o755)
	}
	return root
}

// TestWrapperGiven: a libtool wrapper script given to sites, verify,
// enable or disable is named as such, with the program it runs to give
// instead (exit status 1, a problem with the file); to record
// --auto-args, whose program is not built, an error that says so
// before anything runs.
func TestWrapperGiven(t *testing.T) {
	needless := wrapperTree(t, "needless")
	fast := wrapperTree(t, "fast-install", "hello") // no lt-hello yet
	ran := wrapperTree(t, "fast-install", "hello", "lt-hello")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(ran, "src", "hello"), old, old) // lt-hello newer: made by a run
	for _, c := range []struct {
		root string
		args []string // the script is the last
		want string   // with the tree's root as $T
	}{
		{needless, []string{"sites"}, "$T/src/hello: a libtool wrapper script, not the program (not an ELF file): it runs $T/src/.libs/hello; give that to ftpatch sites"},
		{needless, []string{"verify"}, "it runs $T/src/.libs/hello; give that to ftpatch verify"},
		{needless, []string{"enable", "-o", "$T/out", "--", "main"}, "it runs $T/src/.libs/hello; give that to ftpatch enable"},
		{needless, []string{"disable"}, "it runs $T/src/.libs/hello; give that to ftpatch disable"},
		{fast, []string{"sites"}, "it runs $T/src/.libs/lt-hello, which it makes, relinked from the same objects, when it runs next; give $T/src/.libs/hello to ftpatch sites"},
		{fast, []string{"enable", "--", "main"}, "it runs $T/src/.libs/lt-hello, which it makes, relinked, when it runs next: run $T/src/hello once, then give $T/src/.libs/lt-hello to ftpatch enable ($T/src/.libs/hello is the program as linked for installing)"},
		{ran, []string{"enable", "--", "main"}, "it runs $T/src/.libs/lt-hello; give that to ftpatch enable"},
		{ran, []string{"verify"}, "it runs $T/src/.libs/lt-hello; give that to ftpatch verify"},
	} {
		script := filepath.Join(c.root, "src", "hello")
		var args []string
		for _, a := range c.args {
			args = append(args, strings.ReplaceAll(a, "$T", c.root))
		}
		// The script goes before the globs (after "--", if any).
		if i := slices.Index(args, "--"); i >= 0 {
			args = append(append(append([]string{}, args[:i]...), script), args[i+1:]...)
		} else {
			args = append(args, script)
		}
		_, err := ftpatch(args...)
		want := strings.ReplaceAll(c.want, "$T", c.root)
		if err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != exitProblem || !errors.Is(err, elfx.ErrNotELF) {
			t.Errorf("ftpatch %s:\n got %v (exit %d)\nwant %q (exit %d)", strings.Join(args, " "), err, exitCode(err), want, exitProblem)
		}
	}
	// record --auto-args reads the DWARF of the program the script runs:
	// here, none is built.
	_, err := ftpatch("record", "--auto-args", "--filter", "main", "-d", filepath.Join(needless, "t"), filepath.Join(needless, "src", "hello"))
	want := "--auto-args: " + filepath.Join(needless, "src", "hello") + " is a libtool wrapper script for " + filepath.Join(needless, "src", ".libs", "hello") + ", which is not built yet"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("record --auto-args on a wrapper whose program is not built: %v\nwant %q", err, want)
	}
}
