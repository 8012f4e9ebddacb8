package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// buildRecipe is part of every cached build's key: change it when a
// recipe below changes.
const buildRecipe = "wrap-1"

// cachedBuild returns a directory holding what build made in it, cached
// in the user's cache under name and a hash of key, the ftpatch binary
// and the compilers' versions: a run with the same tools finds it built.
// A build cut short is made again; entries of name unused for a week are
// removed.
func cachedBuild(t *testing.T, name string, key []string, build func(dir string)) string {
	t.Helper()
	h := sha256.New()
	fmt.Fprintln(h, buildRecipe, strings.Join(key, "\x00"))
	bin, err := os.ReadFile(tool("ftpatch"))
	if err != nil {
		t.Fatal(err)
	}
	h.Write(bin)
	for _, cc := range []string{"gcc", "g++", "clang", "cmake"} {
		out, _ := exec.Command(cc, "--version").Output()
		h.Write(out)
	}
	root := filepath.Join(testCache(), "builds")
	dir := filepath.Join(root, name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	done := filepath.Join(dir, ".built")
	if _, err := os.Stat(done); err == nil {
		now := time.Now()
		os.Chtimes(done, now, now)
		return dir
	}
	old, _ := filepath.Glob(filepath.Join(root, name+"-*", ".built"))
	for _, o := range old {
		if fi, err := os.Stat(o); err == nil && time.Since(fi.ModTime()) > 7*24*time.Hour {
			os.RemoveAll(filepath.Dir(o))
		}
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	build(dir)
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shell runs a shell command in dir, failing the test with its output.
func shell(t *testing.T, dir string, env []string, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s (in %s): %v\n%s", script, dir, err, tail(string(out), 60))
	}
}

// tail is s's last n lines.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sameRun runs the untraced program and the traced one under ftpatch
// record (in dirs of their own, with env), and fails the test unless
// both print the same and end the same; it returns the trace directory.
func sameRun(t *testing.T, plainDir, tracedDir string, env []string, plain, traced []string) string {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "trace")
	wantOut, wantErr, wantWs := waitRun(t, plainDir, env, plain...)
	out, stderr, ws := waitRun(t, tracedDir, env, append([]string{tool("ftpatch"), "record", "-d", trace, "--"}, traced...)...)
	last := lastLine(stderr)
	stderr = strings.TrimSuffix(stderr, last+"\n")
	if out != wantOut || stderr != wantErr || describe(ws) != describe(wantWs) {
		t.Fatalf("%s under ftpatch record: %s, stdout\n%s\nstderr\n%s\nwant as untraced: %s, stdout\n%s\nstderr\n%s",
			traced[0], describe(ws), tail(out, 30), tail(stderr, 30), describe(wantWs), tail(wantOut, 30), tail(wantErr, 30))
	}
	if !strings.Contains(last, "the trace is in "+trace) {
		t.Errorf("record's last line: %q", last)
	}
	return trace
}

// replayHas fails the test unless the replay of trace graphs calls of
// each function of funcs (a C++ one with its parameters), and returns
// the replay.
func replayHas(t *testing.T, trace string, funcs ...string) string {
	t.Helper()
	out, _ := run(t, "", tool("ftpatch"), "replay", trace)
	for _, f := range funcs {
		if !regexp.MustCompile(`(?m)\| +` + regexp.QuoteMeta(f) + `\(`).MatchString(out) {
			t.Errorf("the replay graphs no call of %s:\n%s", f, tail(out, 40))
		}
	}
	return out
}

// TestWrapAutotools builds a real autotools project, libogg (libtool,
// a shared and a static library, test programs), from Debian's source
// package with `CC="ftpatch cc gcc"` alone, and gcc alone; its
// configure probes and `make check` pass with the wrapper. A test program
// traced prints and ends as the untraced one, and its trace graphs the
// library's functions; so does a program of ours against the shared
// library (the module stub in libogg.so, registered with the program's
// runtime).
func TestWrapAutotools(t *testing.T) {
	t.Parallel()
	need(t, "gcc", "make")
	src := debianSource(t, "libogg", "libogg_1.3.5.orig.tar.xz", "libogg-1.3.5")
	cc := tool("ftpatch") + " cc gcc"
	b := cachedBuild(t, "libogg", []string{src}, func(dir string) {
		for _, v := range []struct{ sub, cc, check string }{{"plain", "gcc", ""}, {"traced", cc, " && make -j2 check"}} {
			d := filepath.Join(dir, v.sub)
			os.MkdirAll(d, 0o755)
			shell(t, d, []string{"CC=" + v.cc}, src+"/configure -q && make -j2"+v.check)
		}
	})
	plain, traced := filepath.Join(b, "plain"), filepath.Join(b, "traced")
	out, _ := run(t, "", tool("ftpatch"), "sites", filepath.Join(traced, "src/.libs/libogg.so"))
	if !strings.Contains(out, "ogg_stream_pagein") {
		t.Errorf("libogg.so built by ftpatch cc has no site in ogg_stream_pagein:\n%s", tail(out, 10))
	}
	if _, stderr, code, _ := runStatus("", tool("ftpatch"), "sites", filepath.Join(plain, "src/.libs/libogg.so")); code == 0 {
		t.Errorf("the untraced libogg.so has sites: %s", stderr)
	}
	// libogg's own test program (test_framing writes its report to
	// stderr).
	trace := sameRun(t, filepath.Join(plain, "src"), filepath.Join(traced, "src"), nil, []string{"./test_framing"}, []string{"./test_framing"})
	replayHas(t, trace, "main", "test_pack", "ogg_stream_iovecin", "ogg_page_checksum_set", "_os_update_crc")
	// A program against the shared library, through the wrapper again.
	prog, err := filepath.Abs(filepath.Join("wrap", "ogg.c"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, v := range []struct{ tree, cc string }{{plain, "gcc"}, {traced, cc}} {
		shell(t, dir, nil, fmt.Sprintf("%[1]s -O2 -I%[2]s/include -I%[3]s/include %[4]s -L%[3]s/src/.libs -Wl,-rpath,%[3]s/src/.libs -logg -o %[5]s/ogg-%[6]s",
			v.cc, src, v.tree, prog, dir, filepath.Base(v.tree)))
	}
	trace = sameRun(t, dir, dir, nil, []string{"./ogg-plain"}, []string{"./ogg-traced"})
	replayHas(t, trace, "main", "ogg_stream_packetin", "ogg_stream_pageout", "ogg_sync_pageout", "ogg_stream_packetout")
}

// TestWrapCMake builds a real CMake project, cJSON (a shared library
// and programs linked against it, unity's static library), from Debian's
// source package with the wrapper as CMake's compiler and linker
// launcher alone, and with gcc alone. Its demo program and one of its
// tests, traced, print and end as untraced, and their traces graph the
// library's functions (in libcjson.so, through the module stub).
func TestWrapCMake(t *testing.T) {
	t.Parallel()
	need(t, "gcc", "make", "cmake")
	src := debianSource(t, "cjson", "cjson_1.7.15.orig.tar.gz", "cJSON-1.7.15")
	b := cachedBuild(t, "cjson", []string{src}, func(dir string) {
		launch := "-DCMAKE_C_COMPILER_LAUNCHER=" + tool("ftpatch") + ";cc -DCMAKE_C_LINKER_LAUNCHER=" + tool("ftpatch") + ";cc"
		for _, v := range []struct{ sub, flags string }{{"plain", ""}, {"traced", launch}} {
			d := filepath.Join(dir, v.sub)
			shell(t, dir, []string{"CC=gcc"}, fmt.Sprintf("cmake -S %s -B %s %s -DCMAKE_BUILD_TYPE=Release >/dev/null && make -C %s -j2 cJSON_test parse_examples",
				src, d, shellWords(v.flags), d))
		}
	})
	plain, traced := filepath.Join(b, "plain"), filepath.Join(b, "traced")
	trace := sameRun(t, plain, traced, nil, []string{"./cJSON_test"}, []string{"./cJSON_test"})
	replayHas(t, trace, "main", "cJSON_CreateObject", "cJSON_AddItemToObject", "cJSON_Print", "print_value", "cJSON_Delete")
	trace = sameRun(t, filepath.Join(plain, "tests"), filepath.Join(traced, "tests"), nil, []string{"./parse_examples"}, []string{"./parse_examples"})
	replayHas(t, trace, "main", "UnityBegin", "do_test", "cJSON_ParseWithLengthOpts", "parse_value")
}

// shellWords quotes each space-separated word of s for sh.
func shellWords(s string) string {
	var out []string
	for _, w := range strings.Fields(s) {
		out = append(out, "'"+w+"'")
	}
	return strings.Join(out, " ")
}

// TestWrapCxx builds a C++ program of several files with ftpatch c++:
// with CMake, the wrapper as CXX (g++), and in one command that
// compiles and links (clang++); each, traced, prints and ends as the
// untraced build, and its trace graphs the program's methods, the
// exception thrown through them included.
func TestWrapCxx(t *testing.T) {
	t.Parallel()
	need(t, "g++", "clang++", "make", "cmake")
	src, err := filepath.Abs(filepath.Join("wrap", "cxx"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run(t, dir, "g++", "-O2", filepath.Join(src, "main.cc"), filepath.Join(src, "shapes.cc"), "-o", "plain")
	shell(t, dir, []string{"CXX=" + tool("ftpatch") + " c++ g++"}, "cmake -S "+src+" -B cm -DCMAKE_BUILD_TYPE=Release >/dev/null && make -C cm")
	run(t, dir, tool("ftpatch"), "c++", "clang++", "-O2", filepath.Join(src, "main.cc"), filepath.Join(src, "shapes.cc"), "-o", "onestep")
	for _, prog := range []string{"./cm/shapes_demo", "./onestep"} {
		trace := sameRun(t, dir, dir, nil, []string{"./plain"}, []string{prog})
		replay := replayHas(t, trace, "main", "geo::make", "geo::check", "geo::Circle::area", "geo::Rect::area")
		if !regexp.MustCompile(`(?m)\} /\* geo::check\(double\): unwound`).MatchString(replay) {
			t.Errorf("%s: the replay does not show the exception leaving geo::check:\n%s", prog, tail(replay, 40))
		}
	}
}
