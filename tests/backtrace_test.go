package tests

import (
	"path/filepath"
	"testing"
)

// TestBacktrace: a program that walks its own stack with backtrace
// (progs/backtrace.c), from calls graphed at entry sites (trampolines)
// and at -pg's (hijacked returns), on x86-64 and on arm64 (under qemu,
// with and without pointer authentication), the runtime linked and
// preloaded, prints the same frames
// untraced and under both tracers, and its calls return as before.
// Under function_graph the frames' return addresses are the tracer's
// hooks; the runtime's wrapper of backtrace (src/tracers/backtrace.c) puts the
// real ones back for the walk on x86-64, and takes the hooks' own frames
// out of the walk on arm64.
func TestBacktrace(t *testing.T) {
	t.Parallel()
	sites := map[runtimeMode]map[string][]string{
		linkedMode: {
			"x86_64": {"-pg -mfentry", "-pg", "-fpatchable-function-entry=5"},
			"arm64":  {"-fpatchable-function-entry=2", "-fpatchable-function-entry=4,2 -falign-functions=8 -mbranch-protection=standard", "-pg", "-pg -mbranch-protection=standard"},
		},
		// Preloaded (backtrace interposed): a trampoline's site and a
		// hijacked return each.
		preloadedMode: {
			"x86_64": {"-pg -mfentry", "-pg"},
			"arm64":  {"-fpatchable-function-entry=4,2 -falign-functions=8 -mbranch-protection=standard", "-pg"},
		},
	}
	for _, rt := range runtimeModes {
		t.Run(string(rt), func(t *testing.T) {
			t.Parallel()
			forSites(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, sites[rt], func(t *testing.T, tg target, flags string) {
				testBacktrace(t, tg, flags, rt)
			})
		})
	}
}

// testBacktrace is TestBacktrace on progs/backtrace.c built by tg with
// flags, the runtime as rt says.
func testBacktrace(t *testing.T, tg target, flags string, rt runtimeMode) {
	dir := t.TempDir()
	objs := buildSrc(t, tg, dir, "-O2 "+flags, true, "backtrace.c")
	prog, runOn := linkAs(t, tg, dir, rt, objs, picLink(true), "-rdynamic")
	// The untraced program, the same for every site flag: built
	// and run once.
	r := once(t, sharedKey("backtrace.c untraced", tg.id()), func(plainDir string) ran {
		plain := filepath.Join(plainDir, "plain")
		run(t, plainDir, append(append(append([]string{}, tg.link...), "-o", plain, picLink(true), "-rdynamic"), buildSrc(t, tg, plainDir, "-O2", true, "backtrace.c")...)...)
		want, _, code, err := runStatus(plainDir, tg.on(plain)...)
		return ran{want, code, err}
	})
	want, code, err := r.out, r.code, r.err
	const frames = "inner: walk inner middle outer main\ninner: walk inner middle outer main\ndeeper: walk deeper deeper deeper deeper main\n"
	if err != nil || code != 0 || want[:len(frames)] != frames {
		t.Fatalf("untraced: exit %d, %v, output\n%s\nwant it to start\n%s", code, err, want, frames)
	}
	for _, mode := range []string{"", "function", "function_graph"} {
		got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + filepath.Join(dir, "t-"+mode)}, runOn.on(prog)...)
		if err != nil || code != 0 || got != want {
			t.Errorf("FTRACE=%s: exit %d, %v, output\n%s\nwant\n%s\n%s", mode, code, err, got, want, errOut)
		}
	}
	if counts, _ := reportCounts(t, filepath.Join(dir, "t-function_graph")); counts["walk"] != 3 || counts["deeper"] != 4 || counts["inner"] != 2 {
		t.Errorf("function_graph report: %v; want walk 3, deeper 4, inner 2 calls", counts)
	}
}
