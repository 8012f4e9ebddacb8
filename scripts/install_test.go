package scripts

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The files make install puts under the prefix besides the man pages
// (one per command page in docs/commands) and the arm64 runtime (where
// the cross compiler is installed).
var installFiles = []string{
	"bin/ftpatch", "bin/recordmcount",
	"include/ftpatch/ftrace.h",
	"lib/ftpatch/install-manifest",
	"lib/ftpatch/x86_64/libftrt.a", "lib/ftpatch/x86_64/libftrt.so", "lib/ftpatch/x86_64/libftrt-module.a", "lib/ftpatch/x86_64/SHA256SUMS", "lib/ftpatch/x86_64/version",
	"lib/pkgconfig/ftrt.pc", "lib/pkgconfig/ftrt-module.pc",
	"share/bash-completion/completions/ftpatch",
	"share/zsh/site-functions/_ftpatch",
	"share/fish/vendor_completions.d/ftpatch.fish",
}

var installFilesArm64 = []string{
	"lib/ftpatch/arm64/libftrt.a", "lib/ftpatch/arm64/libftrt.so", "lib/ftpatch/arm64/libftrt-module.a", "lib/ftpatch/arm64/SHA256SUMS", "lib/ftpatch/arm64/version",
	"lib/pkgconfig/ftrt-arm64.pc", "lib/pkgconfig/ftrt-module-arm64.pc",
}

// The prefix's own files before the install: make install leaves them,
// make uninstall too.
var preexisting = []string{"usr/bin/other", "usr/share/man/man1/other.1"}

// TestInstall runs make install into a staging directory (DESTDIR, with
// PREFIX=/usr) that already holds files of its own, once, and checks
// what it installed: exactly the expected files; a C program built with
// nothing but `pkg-config --cflags --libs ftrt` and the installed
// recordmcount, run traced, gives a trace the installed ftpatch replays;
// pkg-config gives what the installed ftpatch flags gives, which names
// the installed runtime; the man pages render; the completions load;
// --version tells the stamped version and revision. Then make uninstall
// leaves the directory as it was.
func TestInstall(t *testing.T) {
	for tool, pkg := range map[string]string{"make": "make", "gcc": "gcc", "pkg-config": "pkgconf", "git": "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (make test installs it: apt-get install %s)", tool, pkg)
		}
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	for _, p := range preexisting {
		must(t, os.MkdirAll(filepath.Join(dest, filepath.Dir(p)), 0o755))
		must(t, os.WriteFile(filepath.Join(dest, p), []byte(p), 0o644))
	}
	before := tree(t, dest)
	bin := filepath.Join(t.TempDir(), "bin")
	run(t, repo, nil, "make", "-s", "install", "DESTDIR="+dest, "PREFIX=/usr", "BIN="+bin)
	prefix := filepath.Join(dest, "usr")
	_, err = exec.LookPath("aarch64-linux-gnu-gcc")
	arm64 := err == nil

	t.Run("files", func(t *testing.T) {
		want := slices.Clone(installFiles)
		if arm64 {
			want = append(want, installFilesArm64...)
		}
		pages, err := filepath.Glob(filepath.Join(repo, "docs", "commands", "*.md"))
		if err != nil || len(pages) == 0 {
			t.Fatalf("no command pages in docs/commands: %v", err)
		}
		for _, p := range pages {
			if n := strings.TrimSuffix(filepath.Base(p), ".md"); n == "recordmcount" || strings.HasPrefix(n, "ftpatch") {
				want = append(want, "share/man/man1/"+strings.ReplaceAll(n, "_", "-")+".1")
			}
		}
		for _, p := range preexisting {
			want = append(want, strings.TrimPrefix(p, "usr/"))
		}
		slices.Sort(want)
		if got := files(t, prefix); !slices.Equal(got, want) {
			t.Errorf("make install put under PREFIX\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	})

	pkgConfig := func(t *testing.T, args ...string) string {
		t.Helper()
		// The .pc files name /usr: the staged install is found by
		// redefining the prefix, as for any relocated install.
		env := []string{"PKG_CONFIG_PATH=" + filepath.Join(prefix, "lib", "pkgconfig"), "PKG_CONFIG_LIBDIR=/nonexistent"}
		return strings.TrimSpace(run(t, "", env, "pkg-config", append([]string{"--define-variable=prefix=" + prefix}, args...)...))
	}
	ftpatch := filepath.Join(prefix, "bin", "ftpatch")

	t.Run("pkg-config", func(t *testing.T) {
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, "p.c"), []byte(`#include <stdio.h>
#include <ftrace.h>
__attribute__((noinline)) int add(int a, int b) { return a + b; }
int main(void) { printf("%d %d\n", add(1, 2), tracing_is_on()); return 0; }
`), 0o644))
		run(t, dir, []string{"CFLAGS=" + pkgConfig(t, "--cflags", "ftrt")}, "sh", "-c", "gcc -O2 $CFLAGS -c p.c -o p.o")
		run(t, dir, nil, filepath.Join(prefix, "bin", "recordmcount"), "p.o")
		run(t, dir, []string{"LIBS=" + pkgConfig(t, "--libs", "ftrt")}, "sh", "-c", "gcc p.o $LIBS -o p")
		if out := run(t, dir, []string{"FTRACE=function_graph", "FTRACE_OUT=" + filepath.Join(dir, "t")}, "./p"); out != "3 1\n" {
			t.Errorf("the traced program printed %q, want \"3 1\\n\"", out)
		}
		if out := run(t, dir, nil, ftpatch, "replay", "t"); !strings.Contains(out, "add();") || !strings.Contains(out, "main() {") {
			t.Errorf("ftpatch replay of the trace does not show main calling add:\n%s", out)
		}
	})

	t.Run("flags", func(t *testing.T) {
		cases := [][2]string{{"ftrt", ""}, {"ftrt-module", "--shared"}}
		if arm64 {
			cases = append(cases, [2]string{"ftrt-arm64", "--arch arm64"}, [2]string{"ftrt-module-arm64", "--arch arm64 --shared"})
		}
		for _, c := range cases {
			pc := pkgConfig(t, "--cflags", "--libs", c[0])
			fl := strings.TrimSpace(run(t, "", nil, ftpatch, append([]string{"flags"}, strings.Fields(c[1])...)...))
			if pc != fl {
				t.Errorf("pkg-config --cflags --libs %s:\n  %s\nftpatch flags %s:\n  %s", c[0], pc, c[1], fl)
			}
			if !strings.Contains(fl, " "+filepath.Join(prefix, "lib", "ftpatch")+"/") || !strings.Contains(fl, "-I"+filepath.Join(prefix, "include", "ftpatch")) {
				t.Errorf("the installed ftpatch flags %s does not name the installed runtime:\n  %s", c[1], fl)
			}
		}
	})

	t.Run("man", func(t *testing.T) {
		page := filepath.Join(prefix, "share", "man", "man1", "ftpatch-record.1")
		if _, err := exec.LookPath("man"); err != nil {
			// Without man, the roff source: its header and name line.
			b, err := os.ReadFile(page)
			if err != nil || !strings.Contains(string(b), `.TH "FTPATCH\-RECORD" "1"`) || !strings.Contains(string(b), `ftpatch\-record \- Run a program`) {
				t.Errorf("%s is not the man page of ftpatch record: %v\n%s", page, err, b)
			}
			return
		}
		out := run(t, "", []string{"MANWIDTH=80"}, "man", "-l", page)
		words := strings.Join(strings.Fields(out), " ") // as justified, or not
		for _, want := range []string{"FTPATCH-RECORD(1)", "NAME ftpatch-record - Run a program", "SYNOPSIS ftpatch record [flags]", "OPTIONS"} {
			if !strings.Contains(words, want) {
				t.Errorf("man -l %s does not show %q:\n%s", page, want, out)
			}
		}
	})

	t.Run("completion", func(t *testing.T) {
		out := run(t, "", nil, "bash", "-c", "source "+filepath.Join(prefix, "share/bash-completion/completions/ftpatch")+" && complete -p ftpatch")
		if !strings.Contains(out, "complete ") || !strings.HasSuffix(strings.TrimSpace(out), " ftpatch") {
			t.Errorf("bash: complete -p ftpatch after sourcing the completion: %q", out)
		}
		for file, want := range map[string]string{
			"share/zsh/site-functions/_ftpatch":            "#compdef ftpatch",
			"share/fish/vendor_completions.d/ftpatch.fish": "complete -c ftpatch",
		} {
			b, err := os.ReadFile(filepath.Join(prefix, file))
			if err != nil || !strings.Contains(string(b), want) {
				t.Errorf("%s does not say %q: %v", file, want, err)
			}
		}
	})

	t.Run("version", func(t *testing.T) {
		describe := strings.TrimSpace(run(t, repo, nil, "git", "describe", "--tags", "--always", "--dirty"))
		head := strings.TrimSpace(run(t, repo, nil, "git", "rev-parse", "HEAD"))
		for _, prog := range []string{"ftpatch", "recordmcount"} {
			out := run(t, "", nil, filepath.Join(prefix, "bin", prog), "--version")
			if !strings.HasPrefix(out, prog+" "+describe+"\nrevision: "+head) {
				t.Errorf("the installed %s --version, built at %s (%s):\n%s", prog, describe, head, out)
			}
		}
	})

	run(t, repo, nil, "make", "-s", "uninstall", "DESTDIR="+dest, "PREFIX=/usr")
	if after := tree(t, dest); !slices.Equal(after, before) {
		t.Errorf("after make uninstall the directory holds\n  %s\nand before make install\n  %s", strings.Join(after, "\n  "), strings.Join(before, "\n  "))
	}
}

// run runs a command in dir (the test's own when empty) with env added to
// the test's, failing t when it fails, and returns its standard output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// tree lists every file and directory under root (relative, directories
// with a trailing slash), sorted.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// files lists the files under root (relative), sorted.
func files(t *testing.T, root string) []string {
	var out []string
	for _, p := range tree(t, root) {
		if !strings.HasSuffix(p, "/") {
			out = append(out, p)
		}
	}
	return out
}
