package argspec

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRead: the items of each parameter shape, from the DWARF gcc -g
// writes for testdata/funcs.c: ints, strings (through a typedef), doubles
// and a float counted apart from the integers, a 16-byte struct of
// integers as two registers, a pointer, a char; a struct too big for
// registers, or mixed, ends the function's items; the return values'
// formats; globs and !globs choose.
func TestRead(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "funcs")
	if out, err := exec.Command("gcc", "-g", "-O0", "-o", prog, filepath.Join("testdata", "funcs.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	funcs, err := Read(prog, []string{"*", "!main"})
	if err != nil {
		t.Fatal(err)
	}
	args, ret := Settings(funcs)
	wantArgs := "hex@arg1/x;name_of@arg1/c,arg2/p;parse@arg1/d,arg2/s;ratio@fparg1,arg1/d,fparg2;sum@arg1/x,arg2/x,arg3/x"
	wantRet := "hex/x;name_of/s;parse/d;ratio/f;sum/d"
	if args != wantArgs || ret != wantRet {
		t.Errorf("FTRACE_ARGS %q\nwant        %q\nFTRACE_RETVAL %q\nwant          %q", args, wantArgs, ret, wantRet)
	}
	if f, _ := Read(prog, []string{"parse"}); len(f) != 1 || f[0].Name != "parse" {
		t.Errorf("parse alone: %+v", f)
	}
	if _, err := Read(filepath.Join("testdata", "funcs.c"), nil); err == nil {
		t.Errorf("a C source read as a program")
	}
	stripped := prog + "-stripped"
	if out, err := exec.Command("strip", "-g", "-o", stripped, prog).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, out)
	}
	if _, err := Read(stripped, nil); err == nil {
		t.Errorf("a program without DWARF: no error")
	}
}
