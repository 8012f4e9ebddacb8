package argspec

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/golden"
)

// TestRead: the items of every parameter shape and return value of
// testdata/funcs.c, built with -g for each architecture, as --auto-args
// makes them (testdata/funcs-ARCH.golden: FTRACE_ARGS's entries, then
// FTRACE_RETVAL's, then the enums, a line each, reviewed against the
// System V and AAPCS64 rules callconv.go follows); main and the static
// helper are left out by the globs, a function with neither arguments
// nor a return value shows nothing. Without DWARF, an error.
func TestRead(t *testing.T) {
	for _, c := range []struct {
		arch  string
		cc    []string
		strip string
	}{
		{"x86_64", []string{"gcc", "-pg", "-mfentry", "-mrecord-mcount"}, "strip"},
		{"arm64", []string{"aarch64-linux-gnu-gcc", "-pg"}, "aarch64-linux-gnu-strip"},
	} {
		t.Run(c.arch, func(t *testing.T) {
			if _, err := exec.LookPath(c.cc[0]); err != nil {
				t.Fatalf("package argspec's test needs %s (scripts/deps.sh installs it): %v", c.cc[0], err)
			}
			prog := filepath.Join(t.TempDir(), "funcs")
			args := append(append([]string{}, c.cc[1:]...), "-g", "-O0", "-o", prog, filepath.Join("testdata", "funcs.c"))
			if out, err := exec.Command(c.cc[0], args...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c.cc[0], err, out)
			}
			enums := NewEnums()
			m, err := Read(prog, []string{"*", "!main", "!hidden_helper"}, enums)
			if err != nil {
				t.Fatal(err)
			}
			args2, ret := Settings(m.Funcs)
			var b strings.Builder
			for _, e := range strings.Split(args2, ";") {
				fmt.Fprintf(&b, "args %s\n", e)
			}
			for _, e := range strings.Split(ret, ";") {
				fmt.Fprintf(&b, "ret %s\n", e)
			}
			for _, e := range enums.List() {
				fmt.Fprintf(&b, "enum %+v\n", e)
			}
			fmt.Fprintf(&b, "ambiguous %v\n", m.Ambiguous)
			golden.Check(t, filepath.Join("testdata", "funcs-"+c.arch+".golden"), []byte(b.String()))

			if one, err := Read(prog, []string{"ints"}, NewEnums()); err != nil || len(one.Funcs) != 1 || one.Funcs[0].Name != "ints" {
				t.Errorf("ints alone: %+v, %v", one, err)
			}
			stripped := prog + "-stripped"
			if out, err := exec.Command(c.strip, "-g", "-o", stripped, prog).CombinedOutput(); err != nil {
				t.Fatalf("strip: %v\n%s", err, out)
			}
			if _, err := Read(stripped, nil, NewEnums()); err == nil {
				t.Errorf("a program without DWARF: no error")
			}
		})
	}
	if _, err := Read(filepath.Join("testdata", "funcs.c"), nil, NewEnums()); err == nil {
		t.Errorf("a C source read as a program")
	}
}
