package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"ftpatch/internal/untouched"
	"ftpatch/trace"
)

// The functions the enable tests choose, as a list file and as the
// FTRACE_FILTER that must trace the same calls.
const (
	enableList = `# the functions a build system chose
fib
helper   # across files
make_*
!main
`
	enableFilter = "fib,helper,make_*,!main"
)

// pageLine is the end of the runtime's FTRACE_DEBUG line.
var pageLine = regexp.MustCompile(`; (\d+) traced, .* (\d+) code pages written; config (\w+)`)

// A enableBuild is one way of building the program for the enable tests.
type enableBuild struct {
	flags  string
	link   string // -pie, -no-pie or -static
	record bool   // run recordmcount; false: the compiler wrote the table
}

func (b enableBuild) String() string {
	rec := ""
	if !b.record {
		rec = "_norecord"
	}
	return slug(b.flags) + rec + "/" + strings.TrimPrefix(b.link, "-")
}

var enableBuilds = []enableBuild{
	{"-pg -mfentry", "-pie", true},
	{"-pg -mfentry", "-no-pie", true},
	{"-pg -mfentry", "-static", true},
	{"-pg", "-pie", true},
	{"-fpatchable-function-entry=5", "-pie", true},
	{"-pg -mfentry -fcf-protection", "-pie", true},
	{"-pg -mfentry -mrecord-mcount", "-no-pie", false}, // gcc only
}

// arm64EnableBuilds are arm64's: each site form.
var arm64EnableBuilds = []enableBuild{
	{"-fpatchable-function-entry=2", "-pie", true},
	{"-fpatchable-function-entry=4,2 -falign-functions=8", "-no-pie", true},
	{"-pg -mbranch-protection=standard", "-pie", true},
}

// linkEnabled builds progs/main.c and other.c with b, links the runtime,
// and returns the program.
func linkEnabled(t *testing.T, tg target, dir string, b enableBuild) string {
	t.Helper()
	objs := build(t, tg, dir, b.flags, b.link == "-pie")
	if b.record {
		run(t, dir, append([]string{tool("recordmcount")}, objs...)...)
	}
	return linkLib(t, dir, tg.link, runtimeArchiveFor(t, tg.arch), objs, b.link)
}

// forEnableArchBuilds runs test on each of enableBuilds by both x86-64
// compilers (the table the compiler writes, by gcc alone), and on each
// of arm64EnableBuilds by both arm64 compilers, run under qemu, as a
// parallel subtest named [arch/]compiler/build: the program linked into
// a new dir, the enable list written beside it as listFile.
func forEnableArchBuilds(t *testing.T, test func(t *testing.T, tg target, dir, prog, listFile string)) {
	forEnableTargets(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, test)
}

func forEnableTargets(t *testing.T, tgs []target, test func(t *testing.T, tg target, dir, prog, listFile string)) {
	for _, tg := range tgs {
		builds, prefix := enableBuilds, ""
		if tg.arch != "x86_64" {
			builds, prefix = arm64EnableBuilds, tg.arch+"/"
		}
		for _, b := range builds {
			if !b.record && tg.name != "gcc" {
				continue
			}
			t.Run(prefix+tg.name+"/"+b.String(), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				prog := linkEnabled(t, tg, dir, b)
				listFile := filepath.Join(dir, "list.txt")
				if err := os.WriteFile(listFile, []byte(enableList), 0o644); err != nil {
					t.Fatal(err)
				}
				test(t, tg, dir, prog, listFile)
			})
		}
	}
}

// ftpatchStatus runs the ftpatch binary and returns its output and exit
// status.
func ftpatchStatus(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	out, errOut, code, err := runStatus(dir, append([]string{tool("ftpatch")}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out, errOut, code
}

// TestEnable: a program built every way, enabled with a list, traces
// exactly what the same globs in FTRACE_FILTER trace, with nothing set,
// with its output and exit status unchanged; verify passes; enabling
// again changes nothing (not even mtime); the environment still wins;
// disable brings back an untraced program that verify accepts.
func TestEnable(t *testing.T) {
	t.Parallel()
	forEnableArchBuilds(t, func(t *testing.T, tg target, dir, prog, listFile string) {
		wantOut, wantCode := execute(t, tg, prog)
		ref := filepath.Join(dir, "ref")
		if _, _, _, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_FILTER=" + enableFilter, "FTRACE_OUT=" + ref}, tg.on(prog)...); err != nil {
			t.Fatal(err)
		}
		want := traceCounts(t, ref)
		if len(want) != 3 {
			t.Fatalf("FTRACE_FILTER=%s traced %v: want fib, helper and make_pair", enableFilter, want)
		}

		// -o: the input stays as it was.
		enabled := filepath.Join(dir, "enabled")
		in := untouched.Take(t, prog)
		run(t, dir, tool("ftpatch"), "enable", "--funcs", listFile, prog, "-o", enabled)
		in.Check(t, "enable -o")
		run(t, dir, tool("ftpatch"), "verify", enabled)

		// Run with nothing set: exactly the list, into ./ftrace.data.
		got, code := execute(t, tg, enabled)
		checkSame(t, "enabled", got, code, wantOut, wantCode)
		checkCounts(t, filepath.Join(dir, "ftrace.data"), want, "function", "patched")
		_, errOut, _, err := runStatusEnv(dir, []string{"FTRACE_DEBUG=1", "FTRACE_OUT=" + filepath.Join(dir, "dbg")}, tg.on(enabled)...)
		if m := pageLine.FindStringSubmatch(errOut); err != nil || m == nil || m[1] != "3" || m[2] != "0" || m[3] != "patched" {
			t.Errorf("FTRACE_DEBUG: want 3 traced, 0 code pages written, config patched:\n%s", errOut)
		}

		// The graph tracer, in place; then the same list again, which
		// must not rewrite the file.
		run(t, dir, tool("ftpatch"), "enable", "--tracer", "function_graph", "--funcs", listFile, enabled)
		run(t, dir, tool("ftpatch"), "verify", enabled)
		same := untouched.Take(t, enabled)
		out, _ := run(t, dir, tool("ftpatch"), "enable", "--tracer", "function_graph", enabled, "make_*", "helper", "fib", "!main")
		same.Check(t, "enable with the same list")
		if !strings.Contains(out, "unchanged") {
			t.Errorf("enable with the same list said %q", out)
		}
		graph := filepath.Join(dir, "graph")
		if got, _, code, err := runStatusEnv(dir, []string{"FTRACE_OUT=" + graph}, tg.on(enabled)...); err != nil || got != wantOut || code != wantCode {
			t.Errorf("graph: exit %d, %v", code, err)
		}
		checkCounts(t, graph, want, "function_graph", "patched")

		// The environment wins over what is baked in.
		over := filepath.Join(dir, "over")
		if _, _, _, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_FILTER=fib", "FTRACE_OUT=" + over}, tg.on(enabled)...); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, over, map[string]int{"fib": want["fib"]}, "function", "overridden")

		// disable: untraced, nothing written at start, verify happy.
		run(t, dir, tool("ftpatch"), "disable", enabled)
		run(t, dir, tool("ftpatch"), "verify", enabled)
		os.RemoveAll(filepath.Join(dir, "ftrace.data"))
		got, errOut, code, err = runStatusEnv(dir, []string{"FTRACE_DEBUG=1"}, tg.on(enabled)...)
		if err != nil || got != wantOut || code != wantCode {
			t.Errorf("disabled: exit %d, %v, output\n%s", code, err, got)
		}
		if _, err := os.Stat(filepath.Join(dir, "ftrace.data")); err == nil {
			t.Error("the disabled program made a trace directory")
		}
		if m := pageLine.FindStringSubmatch(errOut); m == nil || m[1] != "0" || m[2] != "0" || m[3] != "patched" {
			t.Errorf("disabled, FTRACE_DEBUG: want 0 traced, 0 pages written:\n%s", errOut)
		}
	})
}

// TestEnableNop: a program enabled with --tracer nop, run with no FTRACE
// variable set, calls the empty stub at every listed site (the runtime
// counts them as traced, and writes no code), prints the same output and
// exits as the untraced program does, and makes no trace directory, not
// even where FTRACE_OUT points: the nop tracer only measures the cost of
// the mechanism. Every function enabled, too, the output is the same.
func TestEnableNop(t *testing.T) {
	t.Parallel()
	forEnableArchBuilds(t, func(t *testing.T, tg target, dir, prog, listFile string) {
		wantOut, _, wantCode := runNoFtrace(t, dir, nil, tg.on(prog)...)
		nop := filepath.Join(dir, "nop")
		out, _ := run(t, dir, tool("ftpatch"), "enable", "--tracer", "nop", "--funcs", listFile, "-o", nop, prog)
		if !strings.Contains(out, "3 sites in 3 functions calling the nop tracer") {
			t.Errorf("enable --tracer nop said %q", out)
		}
		if out, _ := run(t, dir, tool("ftpatch"), "verify", nop); !strings.Contains(out, "3 call the nop tracer") {
			t.Errorf("verify: %s", out)
		}

		got, errOut, code := runNoFtrace(t, dir, nil, tg.on(nop)...)
		if got != wantOut || code != wantCode || errOut != "" {
			t.Errorf("nop: exit %d, output\n%s\nstderr\n%s\nwant exit %d, output\n%s\nand no stderr", code, got, errOut, wantCode, wantOut)
		}
		_, errOut, _ = runNoFtrace(t, dir, []string{"FTRACE_DEBUG=1", "FTRACE_OUT=" + filepath.Join(dir, "asked")}, tg.on(nop)...)
		if m := pageLine.FindStringSubmatch(errOut); m == nil || m[1] != "3" || m[2] != "0" || m[3] != "patched" {
			t.Errorf("nop, FTRACE_DEBUG: want 3 traced, 0 code pages written, config patched:\n%s", errOut)
		}

		all := filepath.Join(dir, "all")
		run(t, dir, tool("ftpatch"), "enable", "--tracer", "nop", "-o", all, prog, "*")
		if got, errOut, code := runNoFtrace(t, dir, nil, tg.on(all)...); got != wantOut || code != wantCode || errOut != "" {
			t.Errorf("nop on every function: exit %d, output\n%s\nstderr\n%s", code, got, errOut)
		}
		for _, d := range []string{"ftrace.data", "asked"} {
			if _, err := os.Stat(filepath.Join(dir, d)); !os.IsNotExist(err) {
				t.Errorf("the nop tracer made a trace directory %s (%v)", d, err)
			}
		}
	})
}

// runNoFtrace runs a program in dir with none of the runtime's FTRACE*
// variables in its environment but those given, and returns its stdout,
// stderr and exit status.
func runNoFtrace(t *testing.T, dir string, env []string, argv ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FTRACE") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return runCmd(t, cmd)
}

// checkCounts compares the calls per function of the trace in dir with
// want, and the trace's tracer and config state.
func checkCounts(t *testing.T, dir string, want map[string]int, tracer, config string) {
	t.Helper()
	tr, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Meta.Tracer != tracer || tr.Meta.Config != config || tr.Meta.Enabled != uint64(len(want)) {
		t.Errorf("%s: tracer %q, config %q, %d enabled; want %q, %q, %d", dir, tr.Meta.Tracer, tr.Meta.Config, tr.Meta.Enabled, tracer, config, len(want))
	}
	got := traceCounts(t, dir)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: traced %v, want %v", dir, got, want)
	}
}

var (
	nowriteOnce sync.Once
	nowriteBin  string
)

// nowrite builds progs/nowrite.c, the launcher that kills a program at
// its first attempt to make a page writable.
// noWrite is the command that runs prog with args where no page can be
// made writable: natively, under the nowrite launcher, which kills the
// process at the first attempt; under qemu (whose own code buffer the
// launcher's filter would refuse), with qemu logging the program's
// system calls to stderr, which checkNoWrite then reads.
func noWrite(t *testing.T, tg target, prog string, args ...string) []string {
	t.Helper()
	if len(tg.exec) == 0 {
		return append([]string{nowrite(t), prog}, args...)
	}
	return append(append(append([]string{}, tg.exec...), "-strace", prog), args...)
}

// writableCode is a system call, as qemu -strace logs it, that nowrite
// refuses: an mprotect asking for PROT_WRITE, or an mmap asking for
// PROT_WRITE and PROT_EXEC.
var writableCode = regexp.MustCompile(`(?m)^\d+ (?:(?:pkey_)?mprotect\([^)]*PROT_WRITE|mmap\([^)]*(?:PROT_WRITE[^)]*PROT_EXEC|PROT_EXEC[^)]*PROT_WRITE))`)

// checkNoWrite checks the stderr of a run under noWrite: under qemu, its
// log of system calls (which must be there) holds none that nowrite
// refuses.
func checkNoWrite(t *testing.T, tg target, stderr string) {
	t.Helper()
	if len(tg.exec) == 0 {
		return // the launcher would have killed the run
	}
	if !strings.Contains(stderr, " exit_group(") {
		t.Fatalf("no system call log from qemu -strace in stderr:\n%s", stderr)
	}
	if m := writableCode.FindString(stderr); m != "" {
		t.Errorf("a page was made writable: %s", m)
	}
}

func nowrite(t *testing.T) string {
	t.Helper()
	need(t, "gcc")
	nowriteOnce.Do(func() {
		src := progPath(t, "nowrite.c")
		out := filepath.Join(toolDir, "nowrite")
		if _, _, code, err := runStatus(toolDir, "gcc", "-O2", "-Wall", "-Werror", "-o", out, src); err == nil && code == 0 {
			nowriteBin = out
		}
	})
	if nowriteBin == "" {
		t.Fatal("building progs/nowrite.c failed")
	}
	return nowriteBin
}

// TestEnabledWritesNoCode: a pre-patched program runs to its end, traced
// as listed, where any attempt to make a page writable kills it; the same
// program not pre-patched is killed at start, when its runtime makes its
// code writable to patch it (so the launcher does catch the runtime).
func TestEnabledWritesNoCode(t *testing.T) {
	t.Parallel()
	for _, b := range []enableBuild{{"-pg -mfentry", "-pie", true}, {"-pg -mfentry", "-static", true}, {"-fpatchable-function-entry=5", "-no-pie", true}} {
		t.Run(b.String(), func(t *testing.T) {
			t.Parallel()
			need(t, x86GCC.tools...)
			nw := nowrite(t)
			dir := t.TempDir()
			prog := linkEnabled(t, x86GCC, dir, b)
			wantOut, wantCode := execute(t, x86GCC, prog)
			if out, _, code, err := runStatus(dir, nw, prog); err != nil || code != 128+31 && code != -1 {
				t.Errorf("the unpatched program under nowrite: exit %d, %v, output\n%s\nwant death by SIGSYS", code, err, out)
			}
			enabled := filepath.Join(dir, "enabled")
			run(t, dir, tool("ftpatch"), "enable", "-o", enabled, prog, "fib", "helper")
			tdir := filepath.Join(dir, "t")
			out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE_OUT=" + tdir}, nw, enabled)
			if err != nil || out != wantOut || code != wantCode {
				t.Fatalf("pre-patched under nowrite: exit %d, %v, output\n%s\nstderr\n%s", code, err, out, errOut)
			}
			ref := filepath.Join(dir, "ref")
			runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_FILTER=fib,helper", "FTRACE_OUT=" + ref}, prog)
			checkCounts(t, tdir, traceCounts(t, ref), "function", "patched")
		})
	}
}

// TestEnableCommand: what a build system sees: exit statuses, messages
// naming the file and line, help with examples; bad lists and bad
// binaries leave every file as it was.
func TestEnableCommand(t *testing.T) {
	t.Parallel()
	need(t, x86GCC.tools...)
	dir := t.TempDir()
	prog := linkEnabled(t, x86GCC, dir, enableBuilds[0])
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := filepath.Join(dir, "plain")
	hooks, err := filepath.Abs(filepath.Join("..", "runtime", "stub", "hooks_x86_64.S"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, "gcc", "-o", plain, filepath.Join(dir, "main.o"), filepath.Join(dir, "other.o"), "-pie", hooks)
	stripped := filepath.Join(dir, "stripped")
	run(t, dir, "cp", prog, stripped)
	run(t, dir, "strip", stripped)
	truncated := write("truncated", string(untouched.Take(t, prog).Data[:300]))
	report := write("report.txt", "CALLS  FUNCTION\n21891  fib\n1      helper\n2      0x1234\n# 21892 calls in 1 thread; 2 of 9 sites traced\n")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string // in stderr (or stdout for exit 0)
	}{
		{"garbage list", []string{"enable", "--funcs", write("garbage", "\x7fELF\x02\x01\x01\x00\x00"), prog}, 1, "garbage:1: NUL byte at column 8"},
		{"NUL in a line", []string{"enable", "--funcs", write("nul", "fib\nhel\x00per\n"), prog}, 1, "nul:2: NUL byte at column 4"},
		{"bad glob", []string{"enable", "--funcs", write("bad", "fib\n[\n"), prog}, 1, `bad:2: bad glob "["`},
		{"empty list", []string{"enable", "--funcs", write("empty", ""), prog}, 1, "empty: no function globs"},
		{"only comments", []string{"enable", "--funcs", write("comments", "# a\n\n# b\n"), prog}, 1, "comments: no function globs"},
		{"only excludes", []string{"enable", "--funcs", write("excl", "!fib\n"), prog}, 1, "only excluding globs"},
		{"typo", []string{"enable", prog, "fbi", "hlper*"}, 1, `0 functions matched "fbi" — did you mean fib?; argument "hlper*": 0 functions matched "hlper*" — did you mean helper*?`},
		{"a typo among matches warns", []string{"enable", "-o", filepath.Join(dir, "o1"), prog, "fib", "hlper"}, 0, `1 site in 1 function calling the function tracer`},
		{"from a report", []string{"enable", "--funcs-from", report, "-o", filepath.Join(dir, "o2"), prog}, 0, "2 sites in 2 functions calling the function tracer"},
		{"a report that is not one", []string{"enable", "--funcs-from", write("notreport", "fib\n"), prog}, 1, "notreport:1: not an `ftpatch report` output"},
		{"no runtime", []string{"enable", plain, "fib"}, 1, "link the runtime: cc ... $(ftpatch flags --libs)"},
		{"stripped", []string{"enable", stripped, "fib"}, 1, "no symbol table (.symtab): the file is stripped; ftpatch names functions from .symtab"},
		{"truncated", []string{"enable", truncated, "fib"}, 1, "truncated: malformed ELF"},
		{"missing file", []string{"enable", filepath.Join(dir, "nosuch"), "fib"}, 2, "no such file"},
		{"missing list", []string{"enable", "--funcs", filepath.Join(dir, "nolist"), prog}, 2, "no such file"},
		{"no functions", []string{"enable", prog}, 2, "name the functions"},
		{"no file", []string{"enable"}, 2, "requires at least 1 arg"},
		{"bad tracer", []string{"enable", "--tracer", "graph", prog, "fib"}, 2, `unknown tracer "graph"`},
		{"relative trace location", []string{"enable", "--trace-dir", "traces", prog, "fib"}, 2, `--trace-dir: bad trace location: "traces" is not an absolute path`},
		{"trace location", []string{"enable", "--trace-dir", "/var/trace/prog", "-o", filepath.Join(dir, "o3"), prog, "fib"}, 0, "1 site in 1 function calling the function tracer into /var/trace/prog"},
		{"verify a trace location", []string{"verify", filepath.Join(dir, "o3")}, 0, "1 call the function tracer into /var/trace/prog;"},
		{"bad flag", []string{"verify", "--frob", prog}, 2, "unknown flag: --frob"},
		{"verify no runtime", []string{"verify", plain}, 1, "the ftpatch runtime is not linked"},
		{"verify missing", []string{"verify", filepath.Join(dir, "nosuch")}, 2, "no such file"},
		{"verify as linked", []string{"verify", prog}, 0, "ok: 9 sites as linked"},
		{"disable a typo", []string{"disable", prog, "mian"}, 1, "did you mean main?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := map[string]untouched.File{}
			for _, p := range []string{prog, plain, stripped, truncated} {
				before[p] = untouched.Take(t, p)
			}
			out, errOut, code := ftpatchStatus(t, dir, c.args...)
			msg := errOut
			if code == 0 {
				msg = out
			}
			if code != c.code || !strings.Contains(msg, c.want) {
				t.Errorf("ftpatch %s: exit %d, stdout\n%s\nstderr\n%s\nwant exit %d and %q", strings.Join(c.args, " "), code, out, errOut, c.code, c.want)
			}
			for _, s := range before {
				s.Check(t, c.name)
			}
		})
	}

	// A binary changed behind ftpatch's back fails verify with exit 1.
	enabled := filepath.Join(dir, "enabled")
	run(t, dir, tool("ftpatch"), "enable", "-o", enabled, prog, "fib")
	img := untouched.Take(t, enabled).Data
	tampered := filepath.Join(dir, "tampered")
	img[mainOffset(t, enabled)+20] ^= 0x01 // a byte of main's code, past its site
	if err := os.WriteFile(tampered, img, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := ftpatchStatus(t, dir, "verify", tampered)
	if code != 1 || !strings.Contains(out, "executable code outside the sites changed") || !strings.Contains(errOut, "1 problem found") {
		t.Errorf("verify of a tampered file: exit %d\n%s%s", code, out, errOut)
	}

	// Help: every command explains itself with an example.
	for _, cmd := range []string{"enable", "disable", "verify", "sites"} {
		out, _, code := ftpatchStatus(t, dir, cmd, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "Exit status") {
			t.Errorf("ftpatch %s --help: exit %d\n%s", cmd, code, out)
		}
	}
}

// mainOffset is the file offset of main's code in the program at path.
func mainOffset(t *testing.T, path string) int {
	t.Helper()
	out, _ := run(t, filepath.Dir(path), "readelf", "-sW", path)
	var addr uint64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 8 && f[7] == "main" && f[3] == "FUNC" {
			fmt.Sscanf(f[1], "%x", &addr)
		}
	}
	out, _ = run(t, filepath.Dir(path), "readelf", "-lW", path)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && f[0] == "LOAD" && strings.Contains(line, " E ") {
			var off, vaddr, filesz uint64
			fmt.Sscanf(f[1], "0x%x", &off)
			fmt.Sscanf(f[2], "0x%x", &vaddr)
			fmt.Sscanf(f[4], "0x%x", &filesz)
			if addr >= vaddr && addr < vaddr+filesz {
				return int(addr - vaddr + off)
			}
		}
	}
	t.Fatalf("no main in an executable segment of %s", path)
	return 0
}

// TestEnableShared: a shared object with its own table, linked with the
// module stub, is enabled, verified and disabled like an executable; a
// trace location is refused for it (its trace is its program's), with
// the file left as it was.
func TestEnableShared(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		lib := linkShared(t, tg, dir, "libother.so", buildSrc(t, tg, dir, preferred[tg.arch]+" -fPIC", true, "other.c"))
		run(t, dir, tool("ftpatch"), "verify", lib)
		before := untouched.Take(t, lib)
		if _, errOut, code := ftpatchStatus(t, dir, "enable", "--trace-dir", "/var/trace/x", lib, "helper"); code != 1 || !strings.Contains(errOut, "bad trace location: a shared object traces where its program does") {
			t.Errorf("enable --trace-dir of a shared object: exit %d, %s", code, errOut)
		}
		before.Check(t, "enable --trace-dir of a shared object")
		out, _ := run(t, dir, tool("ftpatch"), "enable", "--tracer", "function_graph", lib, "helper", "scale")
		if !strings.Contains(out, "2 sites in 2 functions calling the function_graph tracer") {
			t.Errorf("enable: %s", out)
		}
		out, _ = run(t, dir, tool("ftpatch"), "verify", lib)
		if !strings.Contains(out, "2 call the function_graph tracer") {
			t.Errorf("verify: %s", out)
		}
		run(t, dir, tool("ftpatch"), "disable", lib)
		out, _ = run(t, dir, tool("ftpatch"), "verify", lib)
		if !strings.Contains(out, "all NOPs") {
			t.Errorf("verify after disable: %s", out)
		}
	})
}

// TestEnableNoTable: a program built with -pg -mfentry (or -pg) but never
// through recordmcount has no site table; ftpatch enable finds its sites
// by decoding function entries, and the enabled program traces exactly
// what the same program with a table traces under the same filter, with
// nothing set and no code page written, and under FTRACE too; verify
// passes; disable leaves it untraced.
func TestEnableNoTable(t *testing.T) {
	t.Parallel()
	// arm64 clang's -pg sites have no `mov x0, x30` before them: once
	// NOP'd, decoding could not tell them from code again. ftpatch
	// refuses such a file, naming the site, and leaves it as it was.
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		sets, prefix := []string{"-pg -mfentry", "-pg"}, ""
		if tg.arch != "x86_64" {
			sets, prefix = []string{"-pg", "-pg -mbranch-protection=standard"}, tg.arch+"/"
		}
		for _, flags := range sets {
			t.Run(prefix+tg.name+"/"+slug(flags), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				withTable := linkEnabled(t, tg, dir, enableBuild{flags, "-pie", true})
				ref := filepath.Join(dir, "ref")
				if _, _, _, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_FILTER=" + enableFilter, "FTRACE_OUT=" + ref}, tg.on(withTable)...); err != nil {
					t.Fatal(err)
				}
				want := traceCounts(t, ref)
				bare := filepath.Join(dir, "bare")
				if err := os.Mkdir(bare, 0o755); err != nil {
					t.Fatal(err)
				}
				prog := linkEnabled(t, tg, bare, enableBuild{flags, "-pie", false})
				if tg.arch == "arm64" && tg.name == "clang" {
					before := untouched.Take(t, prog)
					_, errOut, code := ftpatchStatus(t, dir, "enable", prog, "fib", "helper", "make_*", "!main")
					if code != 1 || !strings.Contains(errOut, "a -pg site with no `mov x0, x30` before it (clang's), in a file without a site table") {
						t.Errorf("enable: exit %d, stderr %q; want a refusal naming the site", code, errOut)
					}
					before.Check(t, "a refused enable")
					return
				}
				wantOut, wantCode := execute(t, tg, prog)
				if out, _ := run(t, dir, tool("ftpatch"), "sites", prog); !strings.Contains(out, "found by decoding") {
					t.Fatalf("ftpatch sites does not say the sites were decoded:\n%s", out)
				}
				run(t, dir, tool("ftpatch"), "enable", prog, "fib", "helper", "make_*", "!main")
				if out, _ := run(t, dir, tool("ftpatch"), "verify", prog); !strings.Contains(out, "call the function tracer") {
					t.Errorf("verify: %s", out)
				}
				tdir := filepath.Join(dir, "t")
				out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE_OUT=" + tdir}, noWrite(t, tg, prog)...)
				if err != nil || out != wantOut || code != wantCode {
					t.Fatalf("enabled under nowrite: exit %d (%v), output\n%s\nstderr\n%s", code, err, out, errOut)
				}
				checkNoWrite(t, tg, errOut)
				checkCounts(t, tdir, want, "function", "patched")
				// FTRACE picks the tracer; the enabled sites stay as enabled.
				graph := filepath.Join(dir, "graph")
				if out, _, code, err := runStatusEnv(dir, []string{"FTRACE=function_graph", "FTRACE_OUT=" + graph}, tg.on(prog)...); err != nil || out != wantOut || code != wantCode {
					t.Fatalf("FTRACE=function_graph: exit %d (%v)", code, err)
				}
				checkCounts(t, graph, want, "function_graph", "overridden")
				run(t, dir, tool("ftpatch"), "disable", prog)
				run(t, dir, tool("ftpatch"), "verify", prog)
				off := filepath.Join(dir, "off")
				out, errOut, code, err = runStatusEnv(dir, []string{"FTRACE_OUT=" + off}, noWrite(t, tg, prog)...)
				if err != nil || out != wantOut || code != wantCode {
					t.Fatalf("disabled under nowrite: exit %d (%v)", code, err)
				}
				checkNoWrite(t, tg, errOut)
				if _, err := os.Stat(off); !os.IsNotExist(err) {
					t.Errorf("the disabled program made a trace directory (%v)", err)
				}
			})
		}
	}
}
