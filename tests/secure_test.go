package tests

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"ftpatch/internal/untouched"
	"ftpatch/trace"
)

// traversable returns a new temporary directory that every user can
// search (t.TempDir's parent is private to root), owned by root.
func traversable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mkdirOwned makes the directory path with mode perm, owned by uid.
func mkdirOwned(t *testing.T, path string, perm os.FileMode, uid int) {
	t.Helper()
	if err := os.Mkdir(path, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// asNobody runs argv as the unprivileged user, by its ids alone (setpriv
// needs no account, so parallel tests share no state), in dir, with env
// and nothing else in its environment.
func asNobody(t *testing.T, dir string, env []string, argv ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("setpriv", append([]string{fmt.Sprintf("--reuid=%d", nobody), fmt.Sprintf("--regid=%d", nobody), "--clear-groups", "--"}, argv...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	return runCmd(t, cmd)
}

// setuidRoot makes path a setuid-root program.
func setuidRoot(t *testing.T, path string) {
	t.Helper()
	if err := os.Chown(path, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
}

// secureSetup makes what the security tests share, in a new directory
// every user can search (base): the traced program (progs/exits.c,
// run as `prog rights`), built in base/build, and what it prints
// untraced there; a root-only directory holding a root-only file,
// secret.
func secureSetup(t *testing.T) (base, build, prog, plain, rootonly, secret string) {
	t.Helper()
	needRoot(t)
	need(t, x86GCC.tools...)
	base = traversable(t)
	build = filepath.Join(base, "build")
	mkdirOwned(t, build, 0o755, 0)
	prog = traced(t, x86GCC, build, "-O2 -pg -mfentry", true, "exits.c")
	plain, _ = run(t, build, prog, "rights")
	rootonly = filepath.Join(base, "rootonly")
	mkdirOwned(t, rootonly, 0o700, 0)
	secret = filepath.Join(rootonly, "secret")
	if err := os.WriteFile(secret, []byte("root's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return base, build, prog, plain, rootonly, secret
}

// TestSetuid: a setuid-root program linked with the runtime, run by an
// unprivileged user in a directory of theirs, trusts none of its FTRACE*
// variables and creates, renames and writes nothing, whatever they ask
// (a root-only file as FTRACE_OUT, FTRACE_MODE, FTRACE_DEBUG, subtree
// filters that would leave calls out of the trace): not as
// linked, not pre-patched by ftpatch enable with nothing set. Pre-patched
// with a recorded trace location (--trace-dir), it traces there, and only
// there, when every directory on the way is root's and none but the
// sticky ones is writable by others; a location with a group-writable
// parent, a symbolic link on the way or a parent of the user's is
// refused, with nothing written and one line on stderr. Run by root (no
// secure execution), FTRACE_OUT wins over the recorded location again.
func TestSetuid(t *testing.T) {
	t.Parallel()
	need(t, "setpriv")
	base, build, prog, plain, _, secret := secureSetup(t)
	worked, _, _ := strings.Cut(plain, "\n")
	home := filepath.Join(base, "home") // the user's own directory, the cwd
	mkdirOwned(t, home, 0o755, nobody)
	traces := filepath.Join(base, "traces")
	mkdirOwned(t, traces, 0o755, 0)
	mkdirOwned(t, filepath.Join(base, "groupw"), 0o775, 0)
	mkdirOwned(t, filepath.Join(base, "real"), 0o755, 0)
	mkdirOwned(t, filepath.Join(base, "users"), 0o755, nobody)
	if err := os.Symlink("real", filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(base, "bin")
	mkdirOwned(t, bin, 0o755, 0)
	variant := func(name string, enable bool, flags ...string) string {
		out := filepath.Join(bin, name)
		if !enable {
			b, err := os.ReadFile(prog)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(out, b, 0o755); err != nil {
				t.Fatal(err)
			}
		} else {
			run(t, build, append(append([]string{tool("ftpatch"), "enable", "--tracer", "function_graph"}, flags...), "-o", out, prog, "*")...)
		}
		setuidRoot(t, out)
		return out
	}
	linked := variant("linked", false)
	patched := variant("patched", true)
	recorded := func(name, dir string) string {
		return variant(name, true, "--trace-dir", filepath.Join(base, dir, "t"))
	}
	groupw, viaLink, users, good := recorded("groupw", "groupw"), recorded("link", "link"), recorded("users", "users"), recorded("good", "traces")

	hostile := []string{"FTRACE=function_graph", "FTRACE_OUT=" + secret, "FTRACE_MODE=0644", "FTRACE_DEBUG=1", "FTRACE_CLOCK=mono",
		"FTRACE_GRAPH_FUNCS=leaf", "FTRACE_GRAPH_NOTRACE=twice"}
	for _, c := range []struct {
		name   string
		prog   string
		env    []string
		stderr string // what stderr must hold; "": nothing
		traced bool   // a trace in traces/t, which nothing else may touch
	}{
		{"linked, hostile FTRACE", linked, hostile, "", false},
		{"linked, FTRACE alone", linked, []string{"FTRACE=function"}, "", false},
		{"pre-patched, nothing set", patched, nil, "", false},
		{"pre-patched, hostile FTRACE", patched, hostile, "", false},
		{"recorded, parent writable by the group", groupw, nil, "has a parent directory writable by group or others; tracing nothing", false},
		{"recorded, a symbolic link on the way", viaLink, nil, "has a symbolic link on the way; tracing nothing", false},
		{"recorded, parent the user's", users, nil, "has a parent directory owned by another user than root or the effective user; tracing nothing", false},
		{"recorded and trusted, hostile FTRACE", good, hostile, "", true},
	} {
		t.Run(slug(c.name), func(t *testing.T) {
			before := untouched.TakeTree(t, base, "traces")
			out, errOut, code := asNobody(t, home, c.env, c.prog, "rights")
			if out != worked+"\neuid 0 secure 1\n" || code != 0 {
				t.Fatalf("exit %d, output %q; want exit 0, %q then a secure run's euid 0 secure 1 (a file system mounted nosuid runs no setuid program)\n%s", code, out, worked, errOut)
			}
			if c.stderr == "" && errOut != "" || !strings.Contains(errOut, c.stderr) {
				t.Errorf("stderr %q, want %q", errOut, c.stderr)
			}
			before.Check(t, c.name)
			made, _ := filepath.Glob(filepath.Join(traces, "*"))
			if !c.traced {
				if len(made) != 0 {
					t.Errorf("%s made %v", c.name, made)
				}
				return
			}
			// The recorded tracer, into the recorded place, private to root.
			if len(made) != 1 || made[0] != filepath.Join(traces, "t") {
				t.Fatalf("traces holds %v, want t alone", made)
			}
			checkPrivate(t, made[0], 0o700, 0o600)
			if counts, _ := reportCounts(t, made[0]); !maps.Equal(counts, map[string]int{"main": 1, "work": 1, "twice": 5, "leaf": 10}) {
				t.Errorf("report %v", counts)
			}
			if tr, err := trace.Read(made[0]); err != nil || tr.Meta.Tracer != "function_graph" {
				t.Errorf("trace: %v; want the recorded tracer, function_graph", err)
			}
		})
	}

	// Root's own run of the same file is no secure execution: FTRACE_OUT
	// wins, and without it the recorded place is used, the earlier trace
	// there moved aside.
	own := filepath.Join(base, "own")
	if _, errOut, code, err := runStatusEnv(home, []string{"FTRACE_OUT=" + own}, good, "rights"); err != nil || code != 0 {
		t.Fatalf("root's run: exit %d, %v\n%s", code, err, errOut)
	}
	if _, err := os.Stat(filepath.Join(image(t, own), "meta")); err != nil {
		t.Errorf("root's run with FTRACE_OUT: %v", err)
	}
	if _, errOut, code := runNoFtrace(t, home, nil, good, "rights"); code != 0 {
		t.Fatalf("root's run: exit %d\n%s", code, errOut)
	}
	for _, d := range []string{"t", "t.old"} {
		if _, err := os.Stat(filepath.Join(image(t, filepath.Join(traces, d)), "meta")); err != nil {
			t.Errorf("root's run without FTRACE_OUT: %v", err)
		}
	}
}

// checkPrivate checks that the trace directory dir and its files belong
// to the test's user and have the modes given (the umask taken off).
func checkPrivate(t *testing.T, dir string, dirMode, fileMode fs.FileMode) {
	t.Helper()
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		want := fileMode &^ fs.FileMode(umask)
		if d.IsDir() {
			want = dirMode&^fs.FileMode(umask) | fs.ModeDir
		}
		if fi.Mode() != want || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
			t.Errorf("%s: %v, owner %d; want %v, %d", p, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid, want, os.Geteuid())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runSwapping runs argv as root under ptrace and calls swap each time a
// mkdir or mkdirat system call of the program has succeeded, before the
// program's next step: the window in which another user who can write
// the directory could swap what was made for something of theirs. It
// returns the program's stdout, stderr and exit status.
func runSwapping(t *testing.T, dir string, env []string, swap func(), argv ...string) (string, string, int) {
	t.Helper()
	runtime.LockOSThread() // every ptrace request from the tracing thread
	defer runtime.UnlockOSThread()
	stdout, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the program did not stop at its exec: %v, %v", ws, err)
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACESYSGOOD|0x100000 /* PTRACE_O_EXITKILL: not left stopped if the test dies */); err != nil {
		t.Fatal(err)
	}
	sig, in := 0, false
	for {
		if err := syscall.PtraceSyscall(pid, sig); err != nil {
			t.Fatal(err)
		}
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatal(err)
		}
		if ws.Exited() || ws.Signaled() {
			break
		}
		sig = 0
		if ws.StopSignal() != syscall.SIGTRAP|0x80 {
			sig = int(ws.StopSignal()) // the program's own: delivered
			continue
		}
		if in = !in; in {
			continue // entering a system call
		}
		var regs syscall.PtraceRegs
		if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
			t.Fatal(err)
		}
		if (regs.Orig_rax == syscall.SYS_MKDIR || regs.Orig_rax == syscall.SYS_MKDIRAT) && regs.Rax == 0 {
			swap()
		}
	}
	out, _ := os.ReadFile(stdout.Name())
	errOut, _ := os.ReadFile(stderr.Name())
	return string(out), string(errOut), ws.ExitStatus()
}

// TestTraceDirRace: a traced program run by root with its trace in a
// directory another user can write (theirs, not sticky, so the kernel's
// protected_symlinks does not apply) never writes through a link that
// user planted. Their links to a root-only file wait, under every name
// the runtime writes (the thread's stream, meta and its temporaries), in
// a directory of theirs; the runtime's new trace directory is swapped,
// right after its mkdir, for a link to that directory or for the
// directory itself; or a link waits at the trace directory's own name.
// The root-only file stays byte-identical, the program's output and exit
// status are the untraced ones, and a swapped directory is refused
// (tracing nothing, on stderr) while a planted name is moved aside.
func TestTraceDirRace(t *testing.T) {
	t.Parallel()
	base, _, prog, plain, rootonly, secret := secureSetup(t)
	for _, c := range []struct {
		name  string
		swap  string // what replaces the directory made: "link", "dir"; "": nothing, a link waits at the name
		trace bool   // the run traces (into shared/trace)
	}{
		{"a link swapped in", "link", false},
		{"their directory swapped in", "dir", false},
		{"a link at the name", "", true},
	} {
		t.Run(slug(c.name), func(t *testing.T) {
			shared := filepath.Join(base, slug(c.name))
			evil := shared + "-evil"
			mkdirOwned(t, shared, 0o755, nobody)
			mkdirOwned(t, evil, 0o755, nobody)
			out := filepath.Join(shared, "trace")
			plant := func(at string) {
				if err := os.Symlink(secret, at); err != nil {
					t.Fatal(err)
				}
				if err := os.Lchown(at, nobody, nobody); err != nil {
					t.Fatal(err)
				}
			}
			if c.swap == "" {
				plant(out)
			}
			before := untouched.TakeTree(t, rootonly)
			swapped := 0
			swap := func() {
				made, _ := filepath.Glob(out + ".tmp-*")
				if c.swap == "" || len(made) != 1 || swapped > 0 {
					return
				}
				// The links wait for the pid the runtime names its
				// stream by, known from the directory's name.
				_, pid, _ := strings.Cut(filepath.Base(made[0]), ".tmp-")
				for _, name := range []string{pid + "-" + pid + ".trace", "meta", "meta.tmp", "meta.run.tmp", "meta.exec.tmp"} {
					plant(filepath.Join(evil, name))
				}
				if err := os.Rename(made[0], made[0]+"-moved"); err != nil {
					t.Fatal(err)
				}
				var err error
				if c.swap == "link" {
					err = os.Symlink(evil, made[0])
				} else {
					err = os.Rename(evil, made[0])
				}
				if err != nil {
					t.Fatal(err)
				}
				swapped++
			}
			got, errOut, code := runSwapping(t, shared, []string{"FTRACE=function", "FTRACE_OUT=" + out}, swap, prog, "rights")
			if got != plain || code != 0 {
				t.Errorf("exit %d, output %q; want exit 0, %q\n%s", code, got, plain, errOut)
			}
			if c.swap != "" && swapped != 1 {
				t.Fatalf("no trace directory was made to swap (%d swaps)", swapped)
			}
			before.Check(t, c.name)
			if !c.trace {
				if !strings.Contains(errOut, "was replaced by another user's while it was being made; tracing nothing") {
					t.Errorf("stderr %q; want the runtime's refusal", errOut)
				}
				return
			}
			if counts, _ := reportCounts(t, out); !maps.Equal(counts, map[string]int{"main": 1, "work": 1, "twice": 5, "leaf": 10}) {
				t.Errorf("report %v", counts)
			}
			if target, err := os.Readlink(out + ".old"); err != nil || target != secret {
				t.Errorf("the link planted at the trace's name: %q, %v; want it moved aside to .old", target, err)
			}
		})
	}
}

// TestTraceModes: a trace is private to its user by default (directory
// 0700, files 0600: it holds load addresses); FTRACE_MODE=0640 lets the
// group read it (0750, 0640), and a mode that would let others write, or
// that is no mode, is refused with a warning, the trace private.
func TestTraceModes(t *testing.T) {
	t.Parallel()
	need(t, x86GCC.tools...)
	dir := t.TempDir()
	prog := traced(t, x86GCC, dir, "-O2 -pg -mfentry", true, "exits.c")
	for _, c := range []struct {
		mode              string
		dirMode, fileMode fs.FileMode
		warn              bool
	}{
		{"", 0o700, 0o600, false},
		{"0640", 0o750, 0o640, false},
		{"0644", 0o755, 0o644, false},
		{"0666", 0o700, 0o600, true},
		{"0400", 0o700, 0o600, true},
		{"group", 0o700, 0o600, true},
	} {
		t.Run("mode_"+c.mode, func(t *testing.T) {
			out := filepath.Join(dir, "t-"+c.mode)
			env := []string{"FTRACE=function_graph", "FTRACE_OUT=" + out}
			if c.mode != "" {
				env = append(env, "FTRACE_MODE="+c.mode)
			}
			_, errOut, code := runNoFtrace(t, dir, env, prog, "rights")
			if code != 0 || strings.Contains(errOut, "FTRACE_MODE") != c.warn {
				t.Errorf("exit %d, stderr %q; want a warning: %v", code, errOut, c.warn)
			}
			checkPrivate(t, out, c.dirMode, c.fileMode)
		})
	}
}
