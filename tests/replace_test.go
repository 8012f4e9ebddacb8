package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ftpatch/internal/asroot"
	"ftpatch/internal/untouched"
)

// TestEnableKeepsFile: what ftpatch enable in place does to the file
// around its contents, as a user sees it: through a symbolic link the
// file it names is patched and the link stays; a setuid root program
// stays one and still runs; a file with another hard link is refused
// with exit status 1, the link count and what to do, both names left as
// they were.
func TestEnableKeepsFile(t *testing.T) {
	t.Parallel()
	need(t, x86GCC.tools...)
	dir := t.TempDir()
	prog := linkEnabled(t, x86GCC, dir, enableBuilds[0])
	wantOut, wantCode := execute(t, x86GCC, prog)
	copyProg := func(name string) string {
		p := filepath.Join(dir, name)
		run(t, dir, "cp", "-p", prog, p)
		return p
	}

	t.Run("symlink", func(t *testing.T) {
		real := copyProg("real")
		link := filepath.Join(dir, "link")
		if err := os.Symlink("real", link); err != nil {
			t.Fatal(err)
		}
		run(t, dir, tool("ftpatch"), "enable", link, "fib")
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("enable through a link replaced the link: %v", err)
		}
		if out, _ := run(t, dir, tool("ftpatch"), "verify", real); !strings.Contains(out, "1 call the function tracer") {
			t.Errorf("the file behind the link: %s", out)
		}
		if got, code := execute(t, x86GCC, link); got != wantOut || code != wantCode {
			t.Errorf("through the link: exit %d, output\n%s", code, got)
		}
	})

	t.Run("hard link", func(t *testing.T) {
		a := copyProg("a")
		b := filepath.Join(dir, "b")
		if err := os.Link(a, b); err != nil {
			t.Fatal(err)
		}
		before := untouched.Take(t, a)
		fa, err := os.Stat(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"enable", a, "fib"}, {"disable", b}, {"enable", "-o", b, prog, "fib"}} {
			_, errOut, code := ftpatchStatus(t, dir, args...)
			if code != 1 || !strings.Contains(errOut, "the file has other hard links (2 names for one file)") || !strings.Contains(errOut, "OUT") {
				t.Errorf("ftpatch %s: exit %d\n%s\nwant exit 1 and the link count", strings.Join(args, " "), code, errOut)
			}
			before.Check(t, strings.Join(args, " "))
			if fi, err := os.Stat(b); err != nil || !os.SameFile(fi, fa) {
				t.Errorf("ftpatch %s: %s is no longer a link to %s", strings.Join(args, " "), b, a)
			}
		}
	})

	t.Run("setuid root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("a setuid root program is made by root")
		}
		p := copyProg("suid")
		if err := os.Chmod(p, 0o755|os.ModeSetuid); err != nil {
			t.Fatal(err)
		}
		run(t, dir, tool("ftpatch"), "enable", p, "fib")
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != 0o755|os.ModeSetuid || fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("after enable: %v, %v; want a setuid root file, mode u+s,0755", fi.Mode(), err)
		}
		if got, code := execute(t, x86GCC, p); got != wantOut || code != wantCode {
			t.Errorf("the setuid program: exit %d, output\n%s", code, got)
		}
	})
}

// nobody is the user the unprivileged tests run ftpatch as.
const nobody = asroot.Nobody

// TestToolsAsUser: ftpatch enable and recordmcount run by a user who is
// not root refuse, with exit status 1 and what to do, to replace what they
// could not replace whole: a file they cannot give back its owner, a
// write-protected file, a file in a directory they cannot write; and
// rewrite the user's own file keeping its mode. Root sets the files up and
// runs the tools as nobody.
func TestToolsAsUser(t *testing.T) {
	t.Parallel()
	asroot.Need(t, "runs the tools as another user")
	need(t, x86GCC.tools...)
	// A tree nobody can walk.
	base := asroot.PublicDir(t, "ftpatch-user-")
	prog := linkEnabled(t, x86GCC, t.TempDir(), enableBuilds[0])
	obj := buildSrc(t, x86GCC, t.TempDir(), "-pg -mfentry", true, "other.c")[0]
	for _, name := range []string{"ftpatch", "recordmcount"} {
		run(t, base, "cp", tool(name), filepath.Join(base, name))
	}
	// place puts a copy of src at base/dir/name with the owner and mode
	// given, dir having mode dirMode.
	place := func(src, dir string, dirMode os.FileMode, name string, uid int, mode os.FileMode) string {
		t.Helper()
		d := filepath.Join(base, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, dirMode); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, name)
		run(t, base, "cp", src, p)
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tl := range []struct {
		name   string
		src    string
		args   func(p string) []string
		ownOut string // stdout rewriting the user's own file
	}{
		{"ftpatch", prog, func(p string) []string { return []string{"enable", p, "fib"} }, "1 site in 1 function calling the function tracer; 9 of 9 sites rewritten"},
		{"recordmcount", obj, func(p string) []string { return []string{p} }, ""},
	} {
		for _, c := range []struct {
			name string
			file func() string
			code int
			want []string // in stderr, or stdout for exit 0
		}{
			{"another user's file", func() string { return place(tl.src, "shared", 0o777, tl.name+"-theirs", 1234, 0o666) }, 1,
				[]string{"theirs: cannot keep the file's owner, mode or attributes: owner 1234, group 1234: operation not permitted; nothing written: run as the file's owner or as root, or write a new file with -o OUT"}},
			{"write-protected", func() string { return place(tl.src, "shared", 0o777, tl.name+"-protected", nobody, 0o555) }, 1,
				[]string{"protected: not writable (mode -r-xr-xr-x: permission denied): a write-protected file is not replaced; make it writable (chmod u+w), or write a new file with -o OUT"}},
			{"directory not writable", func() string { return place(tl.src, "locked", 0o755, tl.name+"-mine", nobody, 0o755) }, 1,
				[]string{"mine: not writable: directory " + filepath.Join(base, "locked") + ": permission denied: the new file is written beside it, then renamed over it; write a new file with -o OUT"}},
			{"own file", func() string { return place(tl.src, "shared", 0o777, tl.name+"-own", nobody, 0o710) }, 0,
				[]string{tl.ownOut}},
		} {
			t.Run(tl.name+"/"+c.name, func(t *testing.T) {
				p := c.file()
				before, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := os.ReadFile(p)
				ents, _ := os.ReadDir(filepath.Dir(p))
				cmd := exec.Command(filepath.Join(base, tl.name), tl.args(p)...)
				cmd.Dir = base
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
				o, e, _ := runCmd(t, cmd)
				msg := e
				if c.code == 0 {
					msg = o
				}
				if code := cmd.ProcessState.ExitCode(); code != c.code || (c.code != 0 && strings.Count(msg, "\n") != 1) {
					t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, o, e)
				}
				for _, w := range c.want {
					if !strings.Contains(msg, w) {
						t.Errorf("output\n%s\ndoes not say %q", msg, w)
					}
				}
				after, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				st, st0 := after.Sys().(*syscall.Stat_t), before.Sys().(*syscall.Stat_t)
				if after.Mode() != before.Mode() || st.Uid != st0.Uid || st.Gid != st0.Gid {
					t.Errorf("mode %v owner %d:%d, was %v %d:%d", after.Mode(), st.Uid, st.Gid, before.Mode(), st0.Uid, st0.Gid)
				}
				now, _ := os.ReadFile(p)
				if c.code != 0 && (!bytes.Equal(now, data) || !os.SameFile(after, before) || !after.ModTime().Equal(before.ModTime())) {
					t.Errorf("%s changed", p)
				}
				if c.code == 0 && bytes.Equal(now, data) {
					t.Errorf("%s was not rewritten", p)
				}
				if now, _ := os.ReadDir(filepath.Dir(p)); len(now) != len(ents) {
					t.Errorf("the directory held %d entries, now %d", len(ents), len(now))
				}
			})
		}
	}
}
