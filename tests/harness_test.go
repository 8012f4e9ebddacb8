// Package tests holds ftpatch's end-to-end tests: C programs compiled with
// every site-producing flag set, passed through recordmcount, linked with
// GNU ld and lld, disassembled and run (natively on x86-64, under
// qemu-aarch64 for arm64).
//
// The toolchains they need are installed by `make deps` (which `make test`
// runs first). A missing tool fails the test with the Debian package to
// install: a test that silently skipped would prove nothing in CI.
package tests

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ftpatch/internal/asroot"
	ftrt "ftpatch/runtime"
)

// toolDir holds the ftpatch binaries built once for the whole run.
var toolDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ftpatch-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	toolDir = dir
	// The cross gcc driver looks for ld.lld only beside itself; -B points
	// it at a directory holding a link to the system's.
	if lld, err := exec.LookPath("ld.lld"); err == nil {
		os.Mkdir(filepath.Join(dir, "lld"), 0o755)
		os.Symlink(lld, filepath.Join(dir, "lld", "ld.lld"))
	}
	build := exec.Command("go", "build", "-o", dir, "../cmd/recordmcount", "../cmd/ftpatch")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the tools:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// tool is the path of the ftpatch tool name built for this run.
func tool(name string) string {
	inputsOnce.Do(declareInputs)
	return filepath.Join(toolDir, name)
}

var inputsOnce sync.Once

// declareInputs looks at every source file of the module (stat, which
// the testing package logs for the go command).
//
// The go command caches a package's test result by what it sees the
// tests depend on: the test binary, and the files of the module the
// tests look at while they run. These tests depend on more: the tools
// built for the run (whose sources the package does not import) and
// the C programs the compilers read. Looking at every source file makes
// go test run them again when any changed, rather than take their
// result from the cache. tool and need, which every test that builds
// calls, call it once.
func declareInputs() {
	filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "build", "docs":
				return filepath.SkipDir
			}
			return nil
		}
		os.Stat(path)
		return nil
	})
}

// packages maps each external tool the tests run to the Debian package
// that provides it.
var packages = map[string]string{
	"gcc":                       "gcc",
	"g++":                       "g++",
	"clang":                     "clang",
	"clang++":                   "clang",
	"ld.lld":                    "lld",
	"readelf":                   "binutils",
	"objdump":                   "binutils",
	"aarch64-linux-gnu-gcc":     "gcc-aarch64-linux-gnu",
	"aarch64-linux-gnu-objdump": "binutils-aarch64-linux-gnu",
	"qemu-aarch64":              "qemu-user",
	"qemu-x86_64":               "qemu-user",
	"prlimit":                   "util-linux",
	"make":                      "make",
	"cmake":                     "cmake",
	"setpriv":                   "util-linux",
	"autoreconf":                "autoconf",
	"automake":                  "automake",
	"libtoolize":                "libtool",
	"uftrace":                   "uftrace",
	"sqlite3":                   "sqlite3",
}

// need fails the test when a tool is missing, naming the package.
func need(t testing.TB, names ...string) {
	t.Helper()
	inputsOnce.Do(declareInputs) // see declareInputs
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("%s is not installed: run `make deps` or `apt-get install %s`", n, packages[n])
		}
	}
}

// needRoot fails the test unless it runs as root, which mounting a file
// system, making a setuid-root program and running a program as another
// user need (CI runs the tests as root).
func needRoot(t testing.TB) {
	t.Helper()
	asroot.Need(t, "needs root (to mount a file system, make setuid programs, run one as another user)")
}

// run runs a command in dir and returns its stdout and stderr; a failure
// to run or a non-zero exit fails the test with both.
func run(t testing.TB, dir string, argv ...string) (string, string) {
	t.Helper()
	out, errOut, code, err := runStatus(dir, argv...)
	if err != nil || code != 0 {
		t.Fatalf("%s: exit %d, %v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), code, err, out, errOut)
	}
	return out, errOut
}

// runStatus runs a command and returns its output and exit status; err is
// set only when the command could not be run at all.
func runStatus(dir string, argv ...string) (string, string, int, error) {
	return runStatusEnv(dir, nil, argv...)
}

// runStatusEnv is runStatus with variables added to the environment.
func runStatusEnv(dir string, env []string, argv ...string) (string, string, int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return capture(cmd)
}

// commandLimit bounds each command a test runs: one that runs longer
// (a program that hangs, or qemu-user, which hangs now and then on
// programs that mix threads, forks and signals) is killed, and the test
// fails saying so, rather than the whole package waiting for its time
// limit.
const commandLimit = 5 * time.Minute

// capture runs cmd, keeping its stdout and stderr, and returns them and
// its exit status (-1 for a signal, which cmd.ProcessState says); err is
// set only when the command could not be run at all, or ran longer than
// commandLimit.
func capture(cmd *exec.Cmd) (string, string, int, error) {
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		return "", "", 0, err
	}
	var killed atomic.Bool
	timer := time.AfterFunc(commandLimit, func() {
		killed.Store(true)
		cmd.Process.Kill()
	})
	err := cmd.Wait()
	timer.Stop()
	if killed.Load() {
		return o.String(), e.String(), -1, fmt.Errorf("%s ran longer than %v: killed", strings.Join(cmd.Args, " "), commandLimit)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return o.String(), e.String(), ee.ExitCode(), nil
	}
	return o.String(), e.String(), 0, err
}

// runCmd is capture for a command that must run: one that cannot be run
// at all fails the test.
func runCmd(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	o, e, code, err := capture(cmd)
	if err != nil {
		t.Fatalf("running %s: %v", strings.Join(cmd.Args, " "), err)
	}
	return o, e, code
}

// A target is a compiler setup for one architecture.
type target struct {
	name    string
	arch    string   // "x86_64" or "arm64"
	cc      []string // compiler command
	link    []string // link driver command
	exec    []string // prefix to run a program (qemu for arm64)
	objdump string
	tools   []string // what need() must find
}

var (
	x86GCC   = target{"gcc", "x86_64", []string{"gcc"}, []string{"gcc"}, nil, "objdump", []string{"gcc", "readelf", "objdump", "ld.lld"}}
	x86Clang = target{"clang", "x86_64", []string{"clang"}, []string{"clang"}, nil, "objdump", []string{"clang", "readelf", "objdump", "ld.lld"}}
	a64GCC   = target{"gcc", "arm64", []string{"aarch64-linux-gnu-gcc"}, []string{"aarch64-linux-gnu-gcc"},
		[]string{"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"}, "aarch64-linux-gnu-objdump",
		[]string{"aarch64-linux-gnu-gcc", "readelf", "aarch64-linux-gnu-objdump", "qemu-aarch64", "ld.lld"}}
	a64Clang = target{"clang", "arm64", []string{"clang", "--target=aarch64-linux-gnu"}, []string{"aarch64-linux-gnu-gcc"},
		[]string{"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"}, "aarch64-linux-gnu-objdump",
		[]string{"clang", "aarch64-linux-gnu-gcc", "readelf", "aarch64-linux-gnu-objdump", "qemu-aarch64", "ld.lld"}}
)

// flagSets are the site-producing compile flags per architecture.
var flagSets = map[string][]string{
	"x86_64": {"-pg -mfentry", "-pg", "-fpatchable-function-entry=5", "-pg -mfentry -fcf-protection"},
	"arm64":  {"-fpatchable-function-entry=2", "-fpatchable-function-entry=4,2 -falign-functions=8", "-pg", "-pg -mbranch-protection=standard"},
}

// preferred are the site flags each architecture's users are told to
// build with (ftpatch flags --cflags): arm64's with the pre-function
// literal.
var preferred = map[string]string{
	"x86_64": "-pg -mfentry",
	"arm64":  "-fpatchable-function-entry=4,2 -falign-functions=8",
}

// x86Traced are the x86-64 site flag sets the tracer tests run over.
var x86Traced = []string{"-pg -mfentry", "-pg", "-fpatchable-function-entry=5", "-pg -mfentry -fcf-protection"}

// gccTest starts a test of a program x86-64 gcc builds: it needs gcc's
// tools, and returns the target and a new directory.
func gccTest(t *testing.T) (target, string) {
	t.Helper()
	need(t, x86GCC.tools...)
	return x86GCC, t.TempDir()
}

// forX86Compilers runs test with each x86-64 compiler, as a parallel
// subtest named for it.
func forX86Compilers(t *testing.T, test func(t *testing.T, tg target)) {
	forCompilers(t, []target{x86GCC, x86Clang}, test)
}

// forCompilers runs test with each of tgs, as a parallel subtest named
// for its compiler (and, on arm64, "arm64/" first).
func forCompilers(t *testing.T, tgs []target, test func(t *testing.T, tg target)) {
	for _, tg := range tgs {
		name := tg.name
		if tg.arch != "x86_64" {
			name = tg.arch + "/" + name
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			test(t, tg)
		})
	}
}

// forTracedArchBuilds runs test on every build of the tracer tests'
// matrix: both x86-64 compilers by each of x86Traced, and both arm64
// compilers by each of its site flags (flagSets), run under qemu;
// position-independent or not.
func forTracedArchBuilds(t *testing.T, test func(t *testing.T, tg target, flags string, pie bool)) {
	forBuilds(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, test)
}

// forBuilds runs test on each target's builds: by each of its
// architecture's traced flags, position-independent or not, as a
// parallel subtest named [arch/]compiler/flags/-fPIE (or -fno-pie).
func forBuilds(t *testing.T, tgs []target, test func(t *testing.T, tg target, flags string, pie bool)) {
	for _, tg := range tgs {
		sets, prefix := x86Traced, ""
		if tg.arch != "x86_64" {
			sets, prefix = flagSets[tg.arch], tg.arch+"/"
		}
		for _, flags := range sets {
			for _, pie := range []bool{true, false} {
				t.Run(prefix+tg.name+"/"+slug(flags)+"/"+picFlag(pie), func(t *testing.T) {
					t.Parallel()
					need(t, tg.tools...)
					test(t, tg, flags, pie)
				})
			}
		}
	}
}

// forSites runs test on each of tgs by each of the site flags sites gives
// its architecture, as a parallel subtest named arch/compiler/flags.
func forSites(t *testing.T, tgs []target, sites map[string][]string, test func(t *testing.T, tg target, flags string)) {
	for _, tg := range tgs {
		for _, flags := range sites[tg.arch] {
			t.Run(tg.arch+"/"+tg.name+"/"+slug(flags), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				test(t, tg, flags)
			})
		}
	}
}

// slug turns flags into a name usable for files and subtests.
func slug(s string) string {
	r := strings.NewReplacer(" ", "", "-", "_", "=", "", ",", "_")
	return strings.Trim(r.Replace(s), "_")
}

// progSources are the C sources of the end-to-end program.
var progSources = []string{"main.c", "other.c"}

// progPath is the absolute path of src, one of the tests' C programs in
// progs/.
func progPath(t testing.TB, src string) string {
	t.Helper()
	d, err := filepath.Abs("progs")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, src)
}

// build compiles the program's sources with flags into dir and returns the
// object paths. pie selects -fPIE or -fno-pie.
func build(t *testing.T, tg target, dir, flags string, pie bool) []string {
	t.Helper()
	return buildSrc(t, tg, dir, flags, pie, progSources...)
}

// buildSrc compiles the given sources of progs/ like build. Each object
// is compiled once per test run (compiled) and copied into dir.
func buildSrc(t *testing.T, tg target, dir, flags string, pie bool, srcs ...string) []string {
	t.Helper()
	var objs []string
	for _, src := range srcs {
		name := strings.TrimSuffix(strings.TrimSuffix(src, ".c"), ".cc") + ".o"
		argv := append(append([]string{}, tg.cc...), "-O2", "-c", progPath(t, src), picFlag(pie))
		argv = append(argv, strings.Fields(flags)...)
		obj := filepath.Join(dir, name)
		copyFile(t, compiled(t, name, argv), obj, 0o644)
		objs = append(objs, obj)
	}
	return objs
}

// linkRecorded runs recordmcount on objs, then links them with the
// runtime into dir/prog (linkWithRuntime) and returns the program.
func linkRecorded(t *testing.T, dir string, driver, objs []string, flags ...string) string {
	t.Helper()
	run(t, dir, append([]string{tool("recordmcount")}, objs...)...)
	return linkWithRuntime(t, dir, driver, objs, flags...)
}

// linkRecordedOn is linkRecorded for target tg: its link driver and its
// architecture's runtime.
func linkRecordedOn(t *testing.T, tg target, dir string, objs []string, flags ...string) string {
	t.Helper()
	run(t, dir, append([]string{tool("recordmcount")}, objs...)...)
	return linkLib(t, dir, tg.link, runtimeArchiveFor(t, tg.arch), objs, flags...)
}

// linkWithRuntime links objs with the runtime into dir/prog, running the
// link driver (a command and its first arguments) with flags before the
// objects, and returns the program.
func linkWithRuntime(t *testing.T, dir string, driver, objs []string, flags ...string) string {
	t.Helper()
	return linkLib(t, dir, driver, runtimeArchive(t), objs, flags...)
}

// linkLib is linkWithRuntime with the runtime's archive lib.
func linkLib(t *testing.T, dir string, driver []string, lib string, objs []string, flags ...string) string {
	t.Helper()
	prog := filepath.Join(dir, "prog")
	argv := append(append(append([]string{}, driver...), "-o", prog), flags...)
	run(t, dir, append(append(argv, objs...), ftrt.LinkFlags(lib)...)...)
	return prog
}

// id is what tells tg from every other target: its commands.
func (tg target) id() string {
	return sharedKey(tg.arch, strings.Join(tg.cc, " "), strings.Join(tg.link, " "), strings.Join(tg.exec, " "))
}

// on is the command line that runs prog with args on target tg: under
// qemu for arm64.
func (tg target) on(prog string, args ...string) []string {
	return append(append(append([]string{}, tg.exec...), prog), args...)
}

// onSelf is on for a program that execs itself by its argv[0]
// (progs/exits.c): under qemu, argv[0] is made a script beside prog
// (prog.run, written here) that runs prog under qemu again, so that
// what it execs is a file this host can run, in the same process (the
// script execs qemu, which runs prog). Natively, on.
func (tg target) onSelf(t *testing.T, prog string, args ...string) []string {
	t.Helper()
	if tg.native() {
		return tg.on(prog, args...)
	}
	script := prog + ".run"
	var b strings.Builder
	b.WriteString("#!/bin/sh\nexec")
	for _, a := range append(append([]string{}, tg.exec...), "-0", script, prog) {
		b.WriteString(" '" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	b.WriteString(` "$@"` + "\n")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(append(append([]string{}, tg.exec...), "-0", script, prog), args...)
}

// linkShared runs recordmcount on objs and links them, then args (the
// libraries they need), with the module stub into the shared object
// dir/name, with tg's driver; it returns the object's path.
func linkShared(t *testing.T, tg target, dir, name string, objs []string, args ...string) string {
	t.Helper()
	run(t, dir, append([]string{tool("recordmcount")}, objs...)...)
	so := filepath.Join(dir, name)
	argv := append(append(append(append([]string{}, tg.link...), "-shared", "-o", so), objs...), args...)
	run(t, dir, append(argv, ftrt.ModuleLinkFlags(runtimeArchiveFor(t, tg.arch))...)...)
	return so
}

func picFlag(pie bool) string {
	if pie {
		return "-fPIE"
	}
	return "-fno-pie"
}

// link links objects and the stand-in hooks into dir/name and returns the
// linker's stderr (which the tests require to be empty).
func link(t *testing.T, tg target, dir, name string, objs []string, pie bool, ld string, withHooks bool) (string, string) {
	t.Helper()
	out := filepath.Join(dir, name)
	argv := append(append([]string{}, tg.link...), "-o", out, "-fuse-ld="+ld)
	if ld == "lld" {
		argv = append(argv, "-B", filepath.Join(toolDir, "lld"))
	}
	if pie {
		argv = append(argv, "-pie")
	} else {
		argv = append(argv, "-no-pie")
	}
	argv = append(argv, objs...)
	if withHooks {
		hooks, err := filepath.Abs(filepath.Join("..", "runtime", "stub", "hooks_"+tg.arch+".S"))
		if err != nil {
			t.Fatal(err)
		}
		argv = append(argv, hooks)
	}
	_, stderr := run(t, dir, argv...)
	return out, stderr
}

// execute runs a linked program (under qemu for arm64) and returns its
// stdout and exit status.
func execute(t *testing.T, tg target, prog string) (string, int) {
	t.Helper()
	argv := append(append([]string{}, tg.exec...), prog)
	out, errOut, code, err := runStatus(filepath.Dir(prog), argv...)
	if err != nil {
		t.Fatalf("running %s: %v\n%s", prog, err, errOut)
	}
	return out, code
}

// A plainProgram is a program built without sites, and what it printed
// on stdout and its exit status when run: what a traced build must print
// and end with.
type plainProgram struct {
	prog string
	out  string
	code int
}

// plainRun builds srcs of progs/ (by default the end-to-end program,
// progSources) with tg's compiler and no sites, links them with ld, runs
// the program and returns it (not to be changed) with its stdout and exit
// status: what every traced build must print and end with. Once per test
// run.
func plainRun(t *testing.T, tg target, pie bool, ld string, srcs ...string) (string, string, int) {
	t.Helper()
	if len(srcs) == 0 {
		srcs = progSources
	}
	key := sharedKey(append([]string{"plainRun", tg.id(), picFlag(pie), ld}, srcs...)...)
	p := once(t, key, func(dir string) plainProgram {
		plain, _ := link(t, tg, dir, "plain", buildSrc(t, tg, dir, "", pie, srcs...), pie, ld, false)
		out, code := execute(t, tg, plain)
		return plainProgram{plain, out, code}
	})
	return p.prog, p.out, p.code
}

// untraced builds the program src of progs/ with tg's compiler at -O2
// (and flags, defines the program takes) and no sites into dir/plain, and
// returns what it prints on stdout and its exit status: what a traced
// build must print and end with. It is built and run once per test run.
func untraced(t *testing.T, tg target, dir, src string, flags ...string) (string, int) {
	t.Helper()
	argv := append(append(append([]string{}, tg.cc...), flags...), "-O2", "-pthread", progPath(t, src))
	p := once(t, sharedKey(append([]string{"untraced", tg.id()}, argv...)...), func(shared string) plainProgram {
		plain := filepath.Join(shared, "plain")
		run(t, shared, append(argv, "-o", plain)...)
		out, _, code, err := runStatus(shared, tg.on(plain)...)
		if err != nil {
			t.Fatal(err)
		}
		return plainProgram{plain, out, code}
	})
	sharedProgram(t, p.prog, filepath.Join(dir, "plain"))
	return p.out, p.code
}

// defines are the -D flags among flags: a program's own settings, which
// its untraced build takes too.
func defines(flags string) []string {
	var d []string
	for _, f := range strings.Fields(flags) {
		if strings.HasPrefix(f, "-D") {
			d = append(d, f)
		}
	}
	return d
}

// A ccBuild is a compiler and the flags a program of progs/ is built
// with.
type ccBuild struct {
	tg    target
	flags string
}

// forProgram runs test on src of progs/ as each of builds makes it
// (position-independent, with recordmcount's table and the runtime), as
// a parallel subtest named compiler/flags, with the untraced program's
// output and exit status, which every traced run must match.
func forProgram(t *testing.T, src string, builds []ccBuild, test func(t *testing.T, tg target, dir, prog, wantOut string, wantCode int)) {
	forProgramAs(t, src, builds, linkedMode, func(t *testing.T, tg, _ target, dir, prog, wantOut string, wantCode int) {
		test(t, tg, dir, prog, wantOut, wantCode)
	})
}

// forProgramAs is forProgram with the runtime as rt says: test is given
// the target to run prog on traced (runOn: tg, or tg preloading the
// runtime) besides tg, which runs the untraced build (dir/plain).
func forProgramAs(t *testing.T, src string, builds []ccBuild, rt runtimeMode, test func(t *testing.T, tg, runOn target, dir, prog, wantOut string, wantCode int)) {
	for _, c := range builds {
		t.Run(c.tg.arch+"/"+c.tg.name+"/"+slug(c.flags), func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			wantOut, wantCode := untraced(t, c.tg, dir, src, defines(c.flags)...)
			prog, runOn := tracedAs(t, c.tg, dir, c.flags, true, rt, src)
			test(t, c.tg, runOn, dir, prog, wantOut, wantCode)
		})
	}
}

// checkSame fails t, going on, unless a run printed wantOut and exited
// with wantCode, as the untraced program does; what, if not "", names
// the run.
func checkSame(t *testing.T, what, out string, code int, wantOut string, wantCode int) {
	t.Helper()
	if out != wantOut || code != wantCode {
		if what != "" {
			what += ": "
		}
		t.Errorf("%sexit %d, output\n%s\nwant exit %d, output\n%s", what, code, out, wantCode, wantOut)
	}
}

// runTraced runs prog in dir under FTRACE=tracer, tracing into
// dir/tracer, and fails the test unless it prints wantOut and exits with
// wantCode, as the untraced program does; returns its stderr and the
// trace directory.
func runTraced(t *testing.T, dir, prog, tracer, wantOut string, wantCode int) (string, string) {
	t.Helper()
	return runTracedEnv(t, dir, prog, tracer, tracer, nil, wantOut, wantCode)
}

// runTracedOn is runTraced for a program of target tg (run under qemu
// for arm64).
func runTracedOn(t *testing.T, tg target, dir, prog, tracer, wantOut string, wantCode int) (string, string) {
	t.Helper()
	return runTracedArgv(t, dir, tg.on(prog), tracer, tracer, nil, wantOut, wantCode)
}

// runTracedEnv is runTraced tracing into dir/name, with the variables
// env ("NAME=value") set besides.
func runTracedEnv(t *testing.T, dir, prog, tracer, name string, env []string, wantOut string, wantCode int) (string, string) {
	t.Helper()
	return runTracedArgv(t, dir, []string{prog}, tracer, name, env, wantOut, wantCode)
}

// runTracedArgv is runTracedEnv running the command argv.
func runTracedArgv(t *testing.T, dir string, argv []string, tracer, name string, env []string, wantOut string, wantCode int) (string, string) {
	t.Helper()
	out := filepath.Join(dir, name)
	env = append([]string{"FTRACE=" + tracer, "FTRACE_OUT=" + out}, env...)
	got, stderr, code, err := runStatusEnv(dir, env, argv...)
	if err != nil {
		t.Fatal(err)
	}
	if got != wantOut || code != wantCode {
		t.Fatalf("%s: exit %d, output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", tracer, code, got, wantCode, wantOut, stderr)
	}
	return stderr, out
}

// images are the process images of the session the runtime wrote at
// dir (a directory each, "PID@START[.N]"), in name order.
func images(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.Contains(e.Name(), "@") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// image is the one process image of the session at dir: the trace
// directory of a program that started no other traced one.
func image(t *testing.T, dir string) string {
	t.Helper()
	im := images(t, dir)
	if len(im) != 1 {
		t.Fatalf("%s holds %d process images (%v), want one", dir, len(im), im)
	}
	return im[0]
}

// namesTrace says whether the message s names the trace dir: the
// session, or one of its process images.
func namesTrace(s, dir string) bool {
	return regexp.MustCompile(regexp.QuoteMeta(dir) + `(/\d+@\d+(\.\d+)?)?: `).MatchString(s)
}
