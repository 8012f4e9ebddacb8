package patch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"ftpatch/arch"
	"ftpatch/record"
	ftrt "ftpatch/runtime"
)

// Test programs are built here with the system's compilers, the runtime
// and recordmcount, as a user builds them. A missing compiler fails the
// test with the package to install (as tests/ does): a skipped test would
// prove nothing.

var (
	libOnce sync.Once
	libPath string
	libErr  error
	libDir  string

	a64Once sync.Once
	a64Path string
	a64Err  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "patch-test-")
	if err != nil {
		panic(err)
	}
	libDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runtimeLib builds libftrt.a once per test run.
func runtimeLib(t testing.TB) string {
	t.Helper()
	libOnce.Do(func() {
		libPath, libErr = ftrt.Build(context.Background(), ftrt.Options{Dir: libDir})
	})
	if libErr != nil {
		t.Fatal(libErr)
	}
	return libPath
}

// runtimeLibArm64 builds arm64's libftrt.a once per test run.
func runtimeLibArm64(t testing.TB) string {
	t.Helper()
	a64Once.Do(func() {
		a64Path, a64Err = ftrt.Build(context.Background(), ftrt.Options{Dir: filepath.Join(libDir, "arm64"), Arch: arch.ARM64})
	})
	if a64Err != nil {
		t.Fatal(a64Err)
	}
	return a64Path
}

var packages = map[string]string{"gcc": "gcc", "clang": "clang", "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu"}

func need(t testing.TB, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Fatalf("%s is not installed: run `make deps` or `apt-get install %s`", tool, packages[tool])
	}
}

func sh(t testing.TB, dir string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// A build is one way of making a test program.
type build struct {
	name   string
	cc     string
	flags  string // site flags
	link   string // -pie, -no-pie, -static or -shared
	record bool   // run recordmcount (else the compiler wrote the table)
	noRT   bool   // link without the runtime (the stub hooks instead)
}

// arm64Builds are the arm64 programs the patcher must handle: each site
// form, a program and a shared object.
var arm64Builds = []build{
	{"arm64-patchable-pie", "aarch64-linux-gnu-gcc", "-fpatchable-function-entry=2", "-pie", true, false},
	{"arm64-callops-nopie", "aarch64-linux-gnu-gcc", "-fpatchable-function-entry=4,2 -falign-functions=8", "-no-pie", true, false},
	{"arm64-mcount-pie", "aarch64-linux-gnu-gcc", "-pg -mbranch-protection=standard", "-pie", true, false},
	{"arm64-patchable-shared", "aarch64-linux-gnu-gcc", "-fpatchable-function-entry=2", "-shared", true, false},
}

// builds are the ways the patcher must handle.
var builds = []build{
	{"gcc-fentry-pie", "gcc", "-pg -mfentry", "-pie", true, false},
	{"gcc-fentry-nopie", "gcc", "-pg -mfentry", "-no-pie", true, false},
	{"gcc-fentry-static", "gcc", "-pg -mfentry", "-static", true, false},
	{"gcc-mcount-pie", "gcc", "-pg", "-pie", true, false},
	{"gcc-patchable-pie", "gcc", "-fpatchable-function-entry=5", "-pie", true, false},
	{"gcc-recordmcount-nopie", "gcc", "-pg -mfentry -mrecord-mcount", "-no-pie", false, false},
	{"gcc-cet-pie", "gcc", "-pg -mfentry -fcf-protection", "-pie", true, false},
	{"gcc-fentry-shared", "gcc", "-pg -mfentry", "-shared", true, false},
	{"clang-fentry-pie", "clang", "-pg -mfentry", "-pie", true, false},
	{"clang-patchable-nopie", "clang", "-fpatchable-function-entry=5", "-no-pie", true, false},
}

// progSrc are the sources of tests/progs every build compiles: calls
// across files, a weak function the linker discards (a dead site), static
// functions, varargs, recursion.
var progSrc = []string{"main.c", "other.c"}

// make builds the program into dir and returns its path.
func (b build) make(t testing.TB, dir string) string {
	t.Helper()
	need(t, b.cc)
	pic := "-fPIE"
	switch b.link {
	case "-no-pie", "-static":
		pic = "-fno-pie"
	case "-shared":
		pic = "-fPIC"
	}
	lib := runtimeLib
	if strings.HasPrefix(b.cc, "aarch64-") {
		lib = runtimeLibArm64
	}
	var objs []string
	for _, src := range progSrc {
		abs, err := filepath.Abs(filepath.Join("..", "tests", "progs", src))
		if err != nil {
			t.Fatal(err)
		}
		obj := filepath.Join(dir, strings.TrimSuffix(src, ".c")+".o")
		sh(t, dir, append([]string{b.cc, "-O2", pic, "-c", abs, "-o", obj}, strings.Fields(b.flags)...)...)
		objs = append(objs, obj)
	}
	if b.record {
		for _, r := range record.Files(objs, record.Options{}, 1) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	out := filepath.Join(dir, "prog")
	if b.link == "-shared" {
		out = filepath.Join(dir, "libprog.so")
	}
	argv := append([]string{b.cc, b.link, "-o", out}, objs...)
	if b.noRT {
		hooks, err := filepath.Abs(filepath.Join("..", "runtime", "stub", "hooks_x86_64.S"))
		if err != nil {
			t.Fatal(err)
		}
		argv = append(argv, hooks)
	} else if b.link == "-shared" {
		// A shared object links the module stub; the runtime, whose start
		// is in the .preinit_array, links into a program only.
		argv = append(argv, ftrt.ModuleLinkFlags(lib(t))...)
	} else {
		argv = append(argv, ftrt.LinkFlags(lib(t))...)
	}
	sh(t, dir, argv...)
	return out
}
