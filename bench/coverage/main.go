// Command coverage measures how many functions of real programs built
// without tracing flags get a site made from their prologue (ftpatch
// sites --dynamic's count, package prologue), on x86-64 and arm64,
// against the targets (at least 97% of the functions with a symbol), and
// beside uftrace -P .'s own statistics on the same x86-64 binaries (its
// "dynamic patch stats"): coreutils' sort, ls and sha256sum, the sqlite3
// shell and the Lua interpreter, built from Debian's source packages as
// a distribution builds them (-O2 -g, no tracing flag; arm64 with
// -mbranch-protection=standard). Part of make bench:
//
//	go run ./bench/coverage [-dir build/bench/coverage]
//
// The sources are fetched once (apt-get source, with make deps's deb-src
// entry) into the work directory and built there once.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"ftpatch/elfx"
	"ftpatch/prologue"
)

func main() {
	work := flag.String("dir", "build/bench/coverage", "work directory: sources and builds, kept between runs")
	flag.Parse()
	if err := run(*work); err != nil {
		fmt.Fprintln(os.Stderr, "coverage-bench:", err)
		os.Exit(1)
	}
}

// sh runs a shell command in dir, its output kept for a failure's message.
func sh(dir, cmd string) error {
	c := exec.Command("sh", "-c", cmd)
	c.Dir = dir
	c.Env = append(os.Environ(), "FORCE_UNSAFE_CONFIGURE=1")
	if out, err := c.CombinedOutput(); err != nil {
		tail := string(out)
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return fmt.Errorf("%s (in %s): %w\n%s", cmd, dir, err, tail)
	}
	return nil
}

// source fetches and unpacks Debian's source package pkg into work, once,
// and returns its tree.
func source(work, pkg, tarball, top string) (string, error) {
	tree := filepath.Join(work, top)
	if _, err := os.Stat(tree); err == nil {
		return tree, nil
	}
	if _, err := os.Stat(filepath.Join(work, tarball)); err != nil {
		if err := sh(work, "apt-get source --download-only -qq "+pkg); err != nil {
			return "", fmt.Errorf("fetching %s's source (run make deps, which adds Debian's deb-src entry): %w", pkg, err)
		}
	}
	return tree, sh(work, "tar xf "+tarball)
}

// A binary measured: how to build it (once), and how uftrace runs it.
type binary struct {
	name, arch string
	path       string   // under work
	args       []string // for uftrace
}

func run(work string) error {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	work, _ = filepath.Abs(work)
	core, err := source(work, "coreutils", "coreutils_9.1.orig.tar.xz", "coreutils-9.1")
	if err != nil {
		return err
	}
	sq, err := source(work, "sqlite3", "sqlite3_3.40.1.orig.tar.xz", "sqlite3-3.40.1")
	if err != nil {
		return err
	}
	lua, err := source(work, "lua5.4", "lua5.4_5.4.4.orig.tar.gz", "lua-5.4.4")
	if err != nil {
		return err
	}
	builds := []struct{ done, dir, cmd string }{
		{"bld/src/sort", core, "mkdir -p bld && cd bld && ../configure --quiet CFLAGS='-O2 -g' >/dev/null && make -j2 >/dev/null 2>&1; test -x src/sort"},
		{"bld-arm64/src/sort", core, "mkdir -p bld-arm64 && cd bld-arm64 && ../configure --quiet --host=aarch64-linux-gnu CFLAGS='-O2 -g -mbranch-protection=standard' >/dev/null && make -j2 >/dev/null 2>&1; test -x src/sort"},
		{"bld/sqlite3", sq, "mkdir -p bld && cd bld && ../configure --disable-tcl CFLAGS='-O2 -g' >/dev/null && make -j2 sqlite3 >/dev/null 2>&1"},
		{"bld/sqlite3-arm64", sq, "cd bld && aarch64-linux-gnu-gcc -O2 -g -mbranch-protection=standard -DSQLITE_THREADSAFE=1 -o sqlite3-arm64 shell.c sqlite3.c -lpthread -ldl -lm"},
		{"lua", lua, "cd src && gcc -O2 -g -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -o ../lua $(ls *.c | grep -v luac.c) -lm -ldl"},
		{"lua-arm64", lua, "cd src && aarch64-linux-gnu-gcc -O2 -g -mbranch-protection=standard -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -o ../lua-arm64 $(ls *.c | grep -v luac.c) -lm -ldl"},
	}
	for _, b := range builds {
		if _, err := os.Stat(filepath.Join(b.dir, b.done)); err == nil {
			continue
		}
		fmt.Printf("building %s (once)...\n", filepath.Join(filepath.Base(b.dir), b.done))
		if err := sh(b.dir, b.cmd); err != nil {
			return err
		}
	}
	nums := filepath.Join(work, "nums.txt")
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "%d\n", (i*7919)%1000)
	}
	os.WriteFile(nums, []byte(b.String()), 0o644)
	script := filepath.Join(work, "q.lua")
	os.WriteFile(script, []byte("local t = {} for i = 1, 100 do t[i] = i * i end print(#t)\n"), 0o644)
	query := filepath.Join(work, "q.sql")
	os.WriteFile(query, []byte("create table t(a); insert into t values (1),(2); select sum(a) from t;\n"), 0o644)
	bins := []binary{
		{"sort", "x86_64", filepath.Join(core, "bld/src/sort"), []string{"-n", nums}},
		{"ls", "x86_64", filepath.Join(core, "bld/src/ls"), []string{"-la", work}},
		{"sha256sum", "x86_64", filepath.Join(core, "bld/src/sha256sum"), []string{nums}},
		{"sqlite3", "x86_64", filepath.Join(sq, "bld/sqlite3"), []string{"-init", query, ":memory:", ".quit"}},
		{"lua", "x86_64", filepath.Join(lua, "lua"), []string{script}},
		{"sort", "arm64", filepath.Join(core, "bld-arm64/src/sort"), nil},
		{"ls", "arm64", filepath.Join(core, "bld-arm64/src/ls"), nil},
		{"sha256sum", "arm64", filepath.Join(core, "bld-arm64/src/sha256sum"), nil},
		{"sqlite3", "arm64", filepath.Join(sq, "bld/sqlite3-arm64"), nil},
		{"lua", "arm64", filepath.Join(lua, "lua-arm64"), nil},
	}
	fmt.Printf("\nfunctions getting a site made from their prologue (ftpatch sites --dynamic), and uftrace -P . (x86-64)\n\n")
	fmt.Printf("%-10s %-7s %9s %9s %8s %10s   %s\n", "program", "arch", "functions", "sites", "share", "(cold, stub)", "uftrace -P . patched of total")
	missed := 0
	for _, bin := range bins {
		f, err := elfx.Open(bin.path)
		if err != nil {
			return err
		}
		t, err := prologue.Find(f)
		if err != nil {
			return err
		}
		_, made, none := t.Count()
		stubs := t.NotFunctions()
		all := made + none - stubs
		share := 100 * float64(made) / float64(all)
		if share < 97 {
			missed++
		}
		uft := ""
		if bin.arch == "x86_64" {
			patched, total, err := uftrace(work, bin)
			if err != nil {
				uft = "uftrace: " + err.Error()
			} else {
				uft = fmt.Sprintf("%d of %d (%.1f%%)", patched, total, 100*float64(patched)/float64(total))
				if patched > made {
					missed++
					uft += " MORE than ours"
				}
			}
		}
		fmt.Printf("%-10s %-7s %9d %9d %7.1f%% %10d   %s\n", bin.name, bin.arch, all, made, share, stubs, uft)
	}
	verdict := "met"
	if missed > 0 {
		verdict = fmt.Sprintf("MISSED (%d)", missed)
	}
	fmt.Printf("\ntarget: at least 97%% of the functions get a site, on both ISAs, and at least as many as uftrace -P . patches: %s\n", verdict)
	return nil
}

// uftraceStats reads uftrace's "dynamic patch stats": its patched and
// total counts.
var uftraceStats = regexp.MustCompile(`(?s)dynamic patch stats for '[^']*'.*?total:\s+(\d+).*?patched:\s+(\d+)`)

// uftrace runs uftrace record -P . on bin and returns its statistics.
func uftrace(work string, bin binary) (patched, total int, err error) {
	if _, err := exec.LookPath("uftrace"); err != nil {
		return 0, 0, errors.New("not installed (apt-get install uftrace)")
	}
	dir := filepath.Join(work, "uftrace.data")
	os.RemoveAll(dir)
	c := exec.Command("uftrace", append([]string{"record", "-d", dir, "-P", ".", "-vv", bin.path}, bin.args...)...)
	c.Dir = work
	out, _ := c.CombinedOutput()
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var text strings.Builder
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "dynamic:") {
			text.WriteString(sc.Text() + "\n")
		}
	}
	m := uftraceStats.FindStringSubmatch(text.String())
	if m == nil {
		return 0, 0, errors.New("no dynamic patch stats in its output")
	}
	total, _ = strconv.Atoi(m[1])
	patched, _ = strconv.Atoi(m[2])
	return patched, total, nil
}
