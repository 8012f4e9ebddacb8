package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/model"
	ftrt "ftpatch/runtime"
	"ftpatch/trace"
)

// lifeLib are the calls progs/lifelib.c makes in its constructor, its
// destructor, its atexit function, and for main.
var lifeLib = []string{"lib_in_ctor", "lib_in_dtor", "lib_in_atexit", "lib_in_main"}

// lifePrograms are the programs whose constructors, destructors and exit
// functions make traced calls, each with the calls it makes, one each.
var lifePrograms = []struct {
	src   string
	cxx   bool
	calls []string
}{
	{"life.c", false, []string{"in_ctor_101", "in_ctor_200", "in_ctor", "in_main", "in_atexit_ctor", "in_atexit_main",
		"in_dtor", "in_dtor_200", "in_dtor_101"}},
	{"life.cc", true, []string{"in_global_101", "in_global", "in_ctor", "in_static", "in_main", "in_tls_dtor",
		"in_static_dtor", "in_atexit_main", "in_global_dtor", "in_atexit_ctor", "in_global_dtor_101", "in_dtor"}},
}

// lifeLinks are the ways the programs are linked: dynamically with
// progs/lifelib.c as a shared object with sites loaded at start (its
// initialiser runs before the program's), or linked into the program,
// dynamically (not PIE) or statically.
var lifeLinks = []struct {
	name   string
	shared bool   // lifelib.c in a shared object
	pie    bool   // the program's objects -fPIE
	flag   string // link flag
}{
	{"shared", true, true, "-pie"},
	{"no-pie", false, false, "-no-pie"},
	{"static", false, false, "-static"},
}

// TestLifetime: the calls a program makes in its constructors (C
// constructor(N) and constructor, C++ globals with init_priority and
// without), before main, and in its destructors, its atexit functions,
// its C++ static and thread_local destructors, after main, and those its
// shared object makes in its own constructor, destructor and atexit
// function: under both tracers, built by both compilers, linked
// dynamically and statically, every one is in the trace, once, and the
// program's output and exit status are the untraced build's; so with the
// runtime preloaded (dynamic links: the program and the shared object
// linked without the runtime and its stub), but for the shared object's
// constructor, which runs before the preloaded runtime starts. On x86-64
// and on arm64, each with its preferred sites.
func TestLifetime(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GXX, x86ClangXX, a64GXX, a64ClangXX} {
		prefix := ""
		if tg.arch != "x86_64" {
			prefix = tg.arch + "/"
		}
		for _, p := range lifePrograms {
			for _, ln := range lifeLinks {
				for _, rt := range runtimeModes {
					if rt == preloadedMode && ln.flag == "-static" {
						continue // the loader preloads nothing into a static program
					}
					t.Run(fmt.Sprintf("%s%s/%s/%s/%s", prefix, tg.name, p.src, ln.name, rt), func(t *testing.T) {
						t.Parallel()
						need(t, tg.tools...)
						testLifetime(t, tg, p.src, p.cxx, p.calls, ln.shared, ln.pie, ln.flag, rt)
					})
				}
			}
		}
	}
}

// testLifetime is TestLifetime on the program src of progs/ (C++ if cxx)
// that makes calls, linked by the flag link (progs/lifelib.c a shared
// object if shared; the program's objects position-independent if pie),
// with the runtime as rt says.
func testLifetime(t *testing.T, tg target, src string, cxx bool, calls []string, shared, pie bool, link string, rt runtimeMode) {
	driver := tg.cc
	if cxx {
		driver = tg.link
	}
	// build compiles the program and lifelib.c with flags and links them
	// with extra; the library's sites need the module stub when it is a
	// shared object and the runtime is linked.
	build := func(dir, flags string, extra ...string) string {
		lib := buildSrc(t, tg, dir, flags+" -fPIC", true, "lifelib.c")
		objs := buildSrc(t, tg, dir, flags, pie, src)
		if flags != "" {
			run(t, dir, append([]string{tool("recordmcount")}, append(objs, lib...)...)...)
		}
		if shared {
			argv := append(append([]string{}, tg.cc...), "-shared", "-o", filepath.Join(dir, "liblifelib.so"))
			argv = append(argv, lib...)
			if flags != "" && rt == linkedMode {
				argv = append(argv, ftrt.ModuleLinkFlags(runtimeArchiveFor(t, tg.arch))...)
			}
			run(t, dir, argv...)
			objs = append(objs, "-L"+dir, "-llifelib", "-Wl,-rpath,"+dir)
		} else {
			objs = append(objs, lib...)
		}
		prog := filepath.Join(dir, "prog")
		run(t, dir, append(append(append([]string{}, driver...), "-o", prog, link), append(objs, extra...)...)...)
		return prog
	}
	plainDir, dir := t.TempDir(), t.TempDir()
	wantOut, _, wantCode, err := runStatus(plainDir, tg.on(build(plainDir, ""))...)
	if err != nil || wantCode != 3 || !strings.Contains(wantOut, "main ") {
		t.Fatalf("untraced: exit %d, %v, output\n%s", wantCode, err, wantOut)
	}
	var runtimeFlags []string
	if rt == linkedMode {
		runtimeFlags = ftrt.LinkFlags(runtimeArchiveFor(t, tg.arch))
	}
	prog := build(dir, "-O2 "+preferred[tg.arch], runtimeFlags...)
	runOn := tg.runner(t, rt)
	want := map[string]int{}
	for _, f := range append(append([]string{}, calls...), lifeLib...) {
		want[f] = 1
	}
	if rt == preloadedMode && shared {
		// The loader runs the initialisers of the objects loaded with
		// the program before a preloaded one's: the shared object's
		// constructor has run when the runtime starts (a limit
		// docs/recording.md states).
		want["lib_in_ctor"] = 0
	}
	for _, mode := range []string{"function", "function_graph"} {
		out := filepath.Join(dir, mode)
		got, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}, runOn.on(prog)...)
		if err != nil || got != wantOut || code != wantCode {
			t.Errorf("%s: exit %d, %v, output\n%s\nstderr\n%s\nwant exit %d, output\n%s", mode, code, err, got, errOut, wantCode, wantOut)
		}
		tr, err := trace.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Meta.Unended {
			t.Errorf("%s: the trace did not end", mode)
		}
		calls := map[string]int{}
		if tr.Meta.Tracer == "function_graph" {
			_, threads := graphOf(t, out)
			for _, s := range model.Stats(threads) {
				calls[s.Func] = s.Calls
				if s.Open != 0 || s.Unwound != 0 {
					t.Errorf("%s: %s: %d calls did not return", mode, s.Func, s.Open+s.Unwound)
				}
			}
		} else {
			calls = traceCounts(t, out)
		}
		for f := range calls {
			if _, ok := want[f]; !ok && (strings.HasPrefix(f, "in_") || strings.HasPrefix(f, "lib_in_")) {
				want[f] = 0
			}
		}
		for f, n := range want {
			if calls[f] != n {
				t.Errorf("%s: %s called %d times in the trace, want %d", mode, f, calls[f], n)
			}
		}
	}
}
