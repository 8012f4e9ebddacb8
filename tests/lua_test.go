package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"ftpatch/model"
	ftrt "ftpatch/runtime"
)

// luaSource returns Lua 5.4's source tree, from Debian's source package,
// fetched once into the user's cache.
func luaSource(t *testing.T) string {
	t.Helper()
	return filepath.Join(debianSource(t, "lua5.4", "lua5.4_5.4.4.orig.tar.gz", "lua-5.4.4"), "src")
}

// testCache is the directory the tests keep what they fetch and build
// between runs: the user's cache.
func testCache() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir() // no HOME: cache for this machine's life only
	}
	return filepath.Join(base, "ftpatch-tests")
}

// debianSource returns the upstream source tree top of Debian's source
// package pkg, unpacked from its orig tarball (apt-get source, with the
// deb-src entry `make deps` adds), fetched once into the user's cache.
// The tree is unpacked beside it and renamed into place, so a test
// running at the same time sees it whole or not at all.
func debianSource(t *testing.T, pkg, orig, top string) string {
	t.Helper()
	cache := filepath.Join(testCache(), pkg)
	src := filepath.Join(cache, top)
	if _, err := os.Stat(src); err == nil {
		return src
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cache, orig)); err != nil {
		if out, err := exec.Command("sh", "-c", "cd "+cache+" && apt-get source --download-only -qq "+pkg).CombinedOutput(); err != nil {
			t.Fatalf("fetching %s's source (apt-get source %s: run `make deps`, which adds Debian's deb-src entry): %v\n%s", pkg, pkg, err, out)
		}
	}
	tmp, err := os.MkdirTemp(cache, ".unpack-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.Command("tar", "-C", tmp, "-xf", filepath.Join(cache, orig)).CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", orig, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, top), src); err != nil {
		if _, serr := os.Stat(src); serr != nil {
			t.Fatal(err)
		}
	}
	return src
}

// buildLua compiles the interpreter into dir with tg's compiler and extra
// flags; traced builds go through recordmcount and link tg's runtime.
// The files compile in parallel.
func buildLua(t *testing.T, tg target, src, dir string, flags []string, traced bool) string {
	t.Helper()
	srcs, err := filepath.Glob(filepath.Join(src, "*.c"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	var wg sync.WaitGroup
	errs := make(chan error, len(srcs))
	for _, c := range srcs {
		if filepath.Base(c) == "luac.c" {
			continue
		}
		obj := filepath.Join(dir, strings.TrimSuffix(filepath.Base(c), ".c")+".o")
		objs = append(objs, obj)
		argv := append(append(append([]string{}, tg.cc...), "-O2", "-std=gnu99", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX", "-c", c, "-o", obj), flags...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				errs <- fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if traced {
		run(t, dir, append([]string{tool("recordmcount")}, objs...)...)
	}
	lua := filepath.Join(dir, "lua")
	argv := append(append(append(append([]string{}, tg.link...), "-o", lua), objs...), "-lm", "-ldl")
	if traced {
		argv = append(argv, ftrt.LinkFlags(runtimeArchiveFor(t, tg.arch))...)
	}
	run(t, dir, argv...)
	return lua
}

// luaScripts are the Lua test scripts (tests/lua/*.lua).
func luaScripts(t *testing.T) []string {
	t.Helper()
	scripts, err := filepath.Glob(filepath.Join("lua", "*.lua"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no Lua scripts: %v", err)
	}
	return scripts
}

// TestLua: a real program, Lua 5.4, built with every function
// instrumented and run under function_graph, prints the same as the
// untraced build for scripts that compute, raise and catch errors (which
// Lua unwinds with longjmp) and run coroutines; the trace reads back as a
// consistent graph that records the longjmp unwinding. On x86-64 with
// -pg -mfentry; on arm64 (under qemu) with the preferred entry sites and
// with -pg and pointer authentication.
func TestLua(t *testing.T) {
	t.Parallel()
	src := luaSource(t)
	scripts := luaScripts(t)
	for _, b := range []struct {
		tg    target
		flags []string
	}{
		{x86GCC, []string{"-pg", "-mfentry"}},
		{a64GCC, []string{"-fpatchable-function-entry=4,2", "-falign-functions=8"}},
		{a64GCC, []string{"-pg", "-mbranch-protection=standard"}},
	} {
		t.Run(b.tg.arch+"/"+slug(strings.Join(b.flags, " ")), func(t *testing.T) {
			t.Parallel()
			need(t, b.tg.tools...)
			// The untraced interpreter, the same for every site
			// flag: built once.
			plain := once(t, sharedKey("lua untraced", b.tg.id()), func(dir string) string { return buildLua(t, b.tg, src, dir, nil, false) })
			plainDir, tracedDir := filepath.Dir(plain), t.TempDir()
			traced := buildLua(t, b.tg, src, tracedDir, b.flags, true)
			for _, script := range scripts {
				script, _ := filepath.Abs(script)
				t.Run(filepath.Base(script), func(t *testing.T) {
					checkLua(t, b.tg, plainDir, plain, tracedDir, traced, script)
				})
			}
		})
	}
}

// A luaRun is how the untraced interpreter ran a script.
type luaRun struct {
	ran
	stderr string
}

// checkLua runs script with the untraced interpreter plain (once per
// test run) and with the traced one under each tracer, and checks the
// graph.
func checkLua(t *testing.T, tg target, plainDir, plain, tracedDir, traced, script string) {
	t.Helper()
	r := once(t, sharedKey("lua untraced run", tg.id(), script), func(string) luaRun {
		out, errOut, code, err := runStatus(plainDir, tg.on(plain, script)...)
		return luaRun{ran{out, code, err}, errOut}
	})
	wantOut, wantErr, wantCode, err := r.out, r.stderr, r.code, r.err
	if err != nil || wantCode != 0 {
		t.Fatalf("untraced lua: exit %d, %v\n%s", wantCode, err, wantErr)
	}
	for _, mode := range []string{"", "function", "function_graph"} {
		out := filepath.Join(t.TempDir(), "t")
		env := []string{"FTRACE=" + mode, "FTRACE_OUT=" + out}
		got, gotErr, code, err := runStatusEnv(tracedDir, env, tg.on(traced, script)...)
		if err != nil {
			t.Fatal(err)
		}
		if got != wantOut || code != wantCode {
			t.Errorf("FTRACE=%s: exit %d, output\n%s\nstderr\n%s\nwant exit %d, output\n%s", mode, code, got, gotErr, wantCode, wantOut)
		}
		if mode != "function_graph" {
			continue
		}
		tr, threads := graphOf(t, out)
		checkNesting(t, threads)
		stats := model.Stats(threads)
		if len(stats) < 50 {
			t.Errorf("only %d functions of the interpreter graphed", len(stats))
		}
		if tr.Meta.Dropped != 0 || tr.Meta.Skipped != 0 || tr.Meta.Failed != 0 {
			t.Errorf("meta: %+v", tr.Meta)
		}
		if filepath.Base(script) == "errors.lua" && tr.Meta.Unwound == 0 {
			t.Error("Lua's error handling longjmps out of graphed calls, but none was recorded as unwound")
		}
		// The user's commands read it too.
		for _, cmd := range []string{"replay", "report"} {
			if _, stderr, code, err := runStatus(tracedDir, tool("ftpatch"), cmd, out); err != nil || code != 0 {
				t.Errorf("ftpatch %s: exit %d, %v\n%s", cmd, code, err, stderr)
			}
		}
	}
}

// luaSteady are the defines that make the interpreter's calls the same
// from build to build and run to run: a fixed seed for string hashes
// (luai_makeseed hashes addresses and the time), and luaS_new's cache
// of C strings in one slot (it picks the slot by the string's address,
// so which lookups hit, and which intern the string again, hangs on
// where each binary's literals lie).
var luaSteady = []string{"-Dluai_makeseed(L)=0", "-DSTRCACHE_N=1", "-DSTRCACHE_M=1"}

// TestLuaBesideUftrace: the Lua interpreter running tests/lua/basic.lua,
// built with -pg and recorded by uftrace (its library calls included,
// as uftrace records them by default), and built as ftpatch builds it
// and recorded by ftpatch record (library calls on by default): every
// function uftrace's report shows, library calls included (but its
// kernel events, linux:*), is in ftpatch's report with the same number
// of calls. x86-64 (uftrace is an x86-64 package here). Only basic.lua:
// uftrace 0.13 kills the -pg interpreter with SIGSEGV on the scripts
// that longjmp (errors.lua, coroutines.lua).
func TestLuaBesideUftrace(t *testing.T) {
	t.Parallel()
	need(t, append(x86GCC.tools, "uftrace")...)
	src := luaSource(t)
	script, err := filepath.Abs(filepath.Join("lua", "basic.lua"))
	if err != nil {
		t.Fatal(err)
	}
	pgDir, ftDir := t.TempDir(), t.TempDir()
	pg := buildLua(t, x86GCC, src, pgDir, append([]string{"-pg"}, luaSteady...), false)
	ft := buildLua(t, x86GCC, src, ftDir, append([]string{"-pg", "-mfentry"}, luaSteady...), true)

	udata := filepath.Join(pgDir, "uftrace.data")
	uOut, uErr, code, err := runStatus(pgDir, "uftrace", "record", "-d", udata, pg, script)
	if err != nil || code != 0 {
		t.Fatalf("uftrace record: exit %d, %v\n%s", code, err, uErr)
	}
	fdata := filepath.Join(ftDir, "ftrace.data")
	fOut, fErr, code, err := runStatus(ftDir, tool("ftpatch"), "record", "-d", fdata, ft, script)
	if err != nil || code != 0 || fOut != uOut {
		t.Fatalf("ftpatch record: exit %d, %v, output\n%s\nwant uftrace's\n%s\nstderr:\n%s", code, err, fOut, uOut, fErr)
	}

	report, _ := run(t, pgDir, "uftrace", "report", "-d", udata, "-f", "call")
	want := map[string]int{}
	for _, line := range strings.Split(report, "\n") {
		// "      CALLS  FUNCTION", under a header and a rule.
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue // the header and its rule
		}
		name := strings.Join(f[1:], " ")
		if strings.HasPrefix(name, "linux:") {
			continue // the kernel's events (a preemption), not calls
		}
		want[name] = n
	}
	for _, f := range []string{"main", "luaV_execute", "realloc", "strlen", "memcmp"} {
		if want[f] == 0 {
			t.Fatalf("uftrace's report lacks %s (library calls not recorded?):\n%s", f, report)
		}
	}
	got, _ := reportCounts(t, fdata)
	var wrong []string
	for f, n := range want {
		if got[f] != n {
			wrong = append(wrong, fmt.Sprintf("%s: %d calls, uftrace %d", f, got[f], n))
		}
	}
	slices.Sort(wrong)
	if len(wrong) != 0 {
		t.Errorf("%d of uftrace's %d functions differ in ftpatch's report:\n%s", len(wrong), len(want), strings.Join(wrong, "\n"))
	}
}
