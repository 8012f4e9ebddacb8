package argspec

import (
	"errors"
	"ftpatch/elfx"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestReadLibrary: a shared object's exported functions are read from
// its own DWARF, or, once stripped, from its debug file where the
// distribution puts it (elfx.DebugRoot/.build-id/NN/REST.debug); only the
// names asked for; ErrNoDWARF with neither.
func TestReadLibrary(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "lib.c")
	if err := os.WriteFile(src, []byte("int lib_scale(int x, const char *tag) { return x + tag[0]; }\nlong lib_other(long a) { return a; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "lib.so")
	for _, argv := range [][]string{{"gcc", "-O2", "-g", "-fPIC", "-shared", "-Wl,--build-id", "-o", lib, src}} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	check := func(what string) {
		t.Helper()
		m, err := ReadLibrary(lib, []string{"lib_scale"}, NewEnums())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(m.Funcs) != 1 || m.Funcs[0].Name != "lib_scale" || len(m.Funcs[0].Args) != 2 {
			t.Fatalf("%s: %+v, want lib_scale with its two arguments alone", what, m.Funcs)
		}
		if args, _ := Settings(m.Funcs); args != "lib_scale@arg1/i32,arg2/s" {
			t.Errorf("%s: FTRACE_ARGS %q", what, args)
		}
	}
	check("its own DWARF")
	id, err := BuildID(lib)
	if err != nil || len(id) < 3 {
		t.Fatalf("build-id %q, %v", id, err)
	}
	was := elfx.DebugRoot
	elfx.DebugRoot = filepath.Join(dir, "debug")
	defer func() { elfx.DebugRoot = was }()
	dbg := elfx.DebugPath(id)
	if err := os.MkdirAll(filepath.Dir(dbg), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"objcopy", "--only-keep-debug", lib, dbg}, {"strip", "--strip-debug", lib}} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	check("its debug file")
	if err := os.Remove(dbg); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLibrary(lib, []string{"lib_scale"}, NewEnums()); !errors.Is(err, ErrNoDWARF) {
		t.Errorf("stripped, no debug file: %v, want ErrNoDWARF", err)
	}
}
