package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ftpatch runs the command in-process and returns its output and error.
func ftpatch(args ...string) (string, error) {
	out, errOut, err := ftpatchSplit(args...)
	return out + errOut, err
}

// ftpatchSplit is ftpatch with standard output and standard error apart.
func ftpatchSplit(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// TestSites lists the sites of a program built here: every instrumented
// function once, as text and as JSON; a file without a table is an error
// that says what is missing.
func TestSites(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is not installed: apt-get install gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	os.WriteFile(src, []byte("int f(int x){return x+1;}\nint main(void){return f(1)-2;}\n"), 0o644)
	prog := filepath.Join(dir, "p")
	hooks, err := filepath.Abs(filepath.Join("..", "..", "runtime", "stub", "hooks_x86_64.S"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O2", "-pg", "-mfentry", "-mrecord-mcount", "-no-pie", "-fno-pie", "-o", prog, src, hooks).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := ftpatch("sites", prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{" f ", " main "} {
		if strings.Count(out, fn) != 1 {
			t.Errorf("sites lists %q %d times:\n%s", fn, strings.Count(out, fn), out)
		}
	}
	out, err = ftpatch("sites", "--json", prog)
	if err != nil {
		t.Fatal(err)
	}
	var js struct{ Sites []struct{ Function string } }
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Sites) != 2 {
		t.Errorf("sites --json: %v, %d sites:\n%s", err, len(js.Sites), out)
	}
	// Without -mrecord-mcount there is no table: the entries are decoded,
	// and the listing says so.
	decoded := filepath.Join(dir, "decoded")
	if out, err := exec.Command("gcc", "-O2", "-pg", "-mfentry", "-no-pie", "-fno-pie", "-o", decoded, src, hooks).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err = ftpatch("sites", decoded)
	if err != nil || !strings.HasPrefix(out, "(found by decoding function entries: no __mcount_loc)\n") || strings.Count(out, " fentry ") != 2 {
		t.Errorf("sites on a program without a table: %v\n%s", err, out)
	}
	// Each decoded site, the compiler's call, names where it leads.
	if n := len(regexp.MustCompile(`(?m) fentry +5 +hook +__fentry__ *$`).FindAllString(out, -1)); n != 2 {
		t.Errorf("sites on a program without a table: %d lines say hook __fentry__, want 2:\n%s", n, out)
	}
	plain := filepath.Join(dir, "plain")
	exec.Command("gcc", "-o", plain, src).Run()
	if _, err := ftpatch("sites", plain); err == nil || !strings.Contains(err.Error(), "no __mcount_loc section") {
		t.Errorf("sites on a program without a table: %v", err)
	}
}

// TestFlags: what flags prints on standard output, the flags alone (a
// note on standard error, a cache entry it would not use, is no flag).
func TestFlags(t *testing.T) {
	out, errOut, err := ftpatchSplit("flags", "--cflags")
	f := strings.Fields(out)
	if err != nil || len(f) != 3 || f[0] != "-pg" || f[1] != "-mfentry" || !strings.HasPrefix(f[2], "-I") {
		t.Errorf("flags --cflags: %q, %v (stderr %q); want -pg -mfentry -IDIR", out, err, errOut)
	} else if _, err := os.Stat(filepath.Join(f[2][2:], "ftrace.h")); err != nil {
		t.Errorf("flags --cflags: %q names no directory of ftrace.h: %v", out, err)
	}
	if _, err := ftpatch("flags", "--arch", "sparc"); err == nil || !strings.Contains(err.Error(), "unknown architecture") {
		t.Errorf("flags --arch sparc: %v", err)
	}
	if out, _, err := ftpatchSplit("flags", "--cflags", "--arch", "arm64"); err != nil || !strings.HasPrefix(out, "-fpatchable-function-entry=4,2 -falign-functions=8 -I") {
		t.Errorf("flags --cflags --arch arm64: %q, %v", out, err)
	}
	// arm64's runtime is built with the cross compiler, and linked by
	// its archive's path.
	if out, _, err := ftpatchSplit("flags", "--libs", "--arch", "arm64"); err != nil || !strings.Contains(out, "-arm64-") || !strings.HasSuffix(strings.TrimSpace(out), "/libftrt.a") {
		t.Errorf("flags --libs --arch arm64: %q, %v", out, err)
	}
}

func TestReplayErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ftpatch("replay", dir); err == nil || !strings.Contains(err.Error(), "no metadata") {
		t.Errorf("replay of an empty directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "meta"), []byte("format something-else 9\n"), 0o644)
	if _, err := ftpatch("report", dir); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("report of a foreign format: %v", err)
	}
}

// TestHelp: each command that reads or writes a program explains itself
// as a build system's author needs: examples, the exit statuses, and for
// enable and disable what happens to the file written, in the words the
// errors use.
func TestHelp(t *testing.T) {
	writing := []string{"hard links", "protected_symlinks", "cp BIN BIN.new && mv BIN.new BIN", "symbolic link", "setuid", "owner", "With -o OUT, BIN is only read", "A new OUT gets BIN's permission bits"}
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{"enable", append([]string{`(default "function")`, "function, function_graph or nop", "ftpatch disable undoes enable", "ftrace.data"}, writing...)},
		{"disable", writing},
		{"verify", []string{"0  no problem", "1  problems found", "2  a usage error", "standard error"}},
		{"sites", []string{"KIND", "STATE", "fentry", "--json"}},
	} {
		out, err := ftpatch(c.cmd, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", c.cmd, err)
		}
		for _, w := range append([]string{"Examples:", "Exit status"}, c.want...) {
			if !strings.Contains(out, w) {
				t.Errorf("ftpatch %s --help does not say %q", c.cmd, w)
			}
		}
		// cobra appends [flags] to a usage line that already lists them.
		if strings.Contains(out, "] [flags]") && strings.Contains(out, "[-o OUT]") {
			t.Errorf("ftpatch %s --help: usage line lists the flags twice", c.cmd)
		}
	}
}

// TestSitesExitStatus: sites reports a usage error and a file it cannot
// read with exit status 2, as enable and verify do.
func TestSitesExitStatus(t *testing.T) {
	for _, args := range [][]string{{"sites"}, {"sites", "a", "b"}, {"sites", filepath.Join(t.TempDir(), "nosuch")}} {
		if _, err := ftpatch(args...); exitCode(err) != exitUsage {
			t.Errorf("ftpatch %s: %v, exit %d; want exit %d", strings.Join(args, " "), err, exitCode(err), exitUsage)
		}
	}
}
