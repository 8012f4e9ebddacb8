package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ftpatch/arch"
	ftrt "ftpatch/runtime"
)

// TestPreload: a program compiled with sites (-pg -mfentry, -pg,
// patchable entries; recordmcount's table) but linked without the
// runtime is traced by ftpatch record through the preloaded runtime
// (libftrt.so): its output and exit status are the untraced program's,
// and its report (every function's calls, and the sites traced) is the
// same sources' linked with the runtime.
func TestPreload(t *testing.T) {
	t.Parallel()
	for _, flags := range []string{"-pg -mfentry", "-pg", "-fpatchable-function-entry=5"} {
		for _, pie := range []bool{true, false} {
			t.Run(slug(flags)+"/"+picFlag(pie), func(t *testing.T) {
				t.Parallel()
				tg, dir := gccTest(t)
				_, wantOut, wantCode := plainRun(t, tg, pie, "bfd")
				objs := build(t, tg, dir, flags, pie)
				link := []string{picLink(pie)}
				if strings.Contains(flags, "-pg") {
					link = append(link, "-pg") // gcrt1.o, as a -pg program links: both builds call __monstartup
				}
				linked := linkRecordedOn(t, tg, dir, objs, link...)
				bare := filepath.Join(dir, "bare")
				argv := append(append([]string{"gcc", "-o", bare}, link...), objs...)
				run(t, dir, argv...)
				reports := map[string]string{}
				for _, p := range []string{linked, bare} {
					td := p + ".trace"
					out, stderr, code, err := runStatus(dir, tool("ftpatch"), "record", "--tracer", "function", "-d", td, p)
					if err != nil {
						t.Fatal(err)
					}
					checkSame(t, filepath.Base(p), out, code, wantOut, wantCode)
					rep, _ := run(t, dir, tool("ftpatch"), "report", td)
					if !strings.Contains(rep, "main") {
						t.Fatalf("%s: report\n%s\nrecord's stderr:\n%s", p, rep, stderr)
					}
					reports[p] = rep
				}
				if reports[bare] != reports[linked] {
					t.Errorf("preloaded, the report is\n%s\nlinked with the runtime\n%s", reports[bare], reports[linked])
				}
			})
		}
	}
}

// TestPreloadExports: the preloaded runtime of each architecture
// exports the runtime's API, the hooks and the functions it interposes,
// and nothing else (its version script makes the rest local: without
// it, the runtime's own functions are exported).
func TestPreloadExports(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, a64GCC} {
		t.Run(tg.arch, func(t *testing.T) {
			t.Parallel()
			need(t, "readelf")
			so := preloadedLib(t, tg)
			out, err := exec.Command("readelf", "--dyn-syms", "-W", so).Output()
			if err != nil {
				t.Fatal(err)
			}
			a, err := arch.Parse(tg.arch)
			if err != nil {
				t.Fatal(err)
			}
			allowed := ftrt.PreloadExports(a)
			var defined []string
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				// Num: Value Size Type Bind Vis Ndx Name
				if len(f) < 8 || f[1] == "Value" || f[6] == "UND" || f[4] == "LOCAL" || !strings.HasSuffix(f[0], ":") {
					continue
				}
				name, _, _ := strings.Cut(f[7], "@")
				defined = append(defined, name)
				if !slices.Contains(allowed, name) {
					t.Errorf("%s exports %s, which is none of the API, the hooks and the interposed functions", so, name)
				}
			}
			must := []string{"__fentry__", "mcount"}
			if tg.arch == "arm64" {
				must = []string{"_mcount"}
			}
			for _, m := range append(must, "execve", "sigaction", "makecontext", "backtrace", "_Unwind_RaiseException", "ftrt_module_register", "_exit") {
				if !slices.Contains(defined, m) {
					t.Errorf("%s does not export %s", so, m)
				}
			}
		})
	}
}

// A runtimeMode is how a traced program of the tests gets the runtime:
// linked in (ftpatch flags --libs), or preloaded, the program linked
// without it and run with the runtime's shared object
// (ftrt.SharedLibName) in LD_PRELOAD, as ftpatch record runs such a
// program.
type runtimeMode string

const (
	linkedMode    runtimeMode = "linked"
	preloadedMode runtimeMode = "preloaded"
)

// runtimeModes are both ways, for the tests that run in each.
var runtimeModes = []runtimeMode{linkedMode, preloadedMode}

// preloadedLib is the runtime's shared object for tg's architecture,
// built beside its archive once a run.
func preloadedLib(t *testing.T, tg target) string {
	t.Helper()
	return filepath.Join(filepath.Dir(runtimeArchiveFor(t, tg.arch)), ftrt.SharedLibName)
}

// runner is the target that runs tg's programs traced as mode says: tg
// itself for a program linked with the runtime; for one preloaded, tg
// with the runtime's shared object in LD_PRELOAD of what it runs:
// natively through env(1), under qemu given to the guest alone (-E: the
// host's loader, which loads qemu, must not be given another
// architecture's object). Its programs' children inherit the variable.
// Only traced programs are run on it: an untraced reference runs on tg.
func (tg target) runner(t *testing.T, mode runtimeMode) target {
	t.Helper()
	if mode == linkedMode {
		return tg
	}
	lib := preloadedLib(t, tg)
	if tg.native() {
		tg.exec = []string{"env", "LD_PRELOAD=" + lib}
	} else {
		tg.exec = append(append([]string{}, tg.exec...), "-E", "LD_PRELOAD="+lib)
	}
	return tg
}

// native says whether tg's programs run on this machine without an
// emulator (the tests run on x86-64).
func (tg target) native() bool { return tg.arch == "x86_64" }

// linkAs runs recordmcount on objs and links them into dir/prog with
// tg's driver and flags, with the runtime (linkRecordedOn) or, preloaded,
// without; it returns the program and the target to run it on traced
// (runner).
func linkAs(t *testing.T, tg target, dir string, mode runtimeMode, objs []string, flags ...string) (string, target) {
	t.Helper()
	if mode == linkedMode {
		return linkRecordedOn(t, tg, dir, objs, flags...), tg
	}
	run(t, dir, append([]string{tool("recordmcount")}, objs...)...)
	prog := filepath.Join(dir, "prog")
	run(t, dir, append(append(append(append([]string{}, tg.link...), "-o", prog), flags...), objs...)...)
	return prog, tg.runner(t, mode)
}

// tracedAs is traced with the runtime as mode says: it returns the
// program and the target to run it on traced.
func tracedAs(t *testing.T, tg target, dir, flags string, pie bool, mode runtimeMode, srcs ...string) (string, target) {
	t.Helper()
	return linkAs(t, tg, dir, mode, buildSrc(t, tg, dir, flags, pie, srcs...), picLink(pie), "-pthread")
}

// forModes runs test with each of tgs and each runtime mode, as a
// parallel subtest named [arch/]compiler/mode.
func forModes(t *testing.T, tgs []target, test func(t *testing.T, tg target, rt runtimeMode)) {
	forCompilers(t, tgs, func(t *testing.T, tg target) {
		for _, rt := range runtimeModes {
			t.Run(string(rt), func(t *testing.T) {
				t.Parallel()
				test(t, tg, rt)
			})
		}
	})
}

// TestPreloadSetuid: ftpatch record, run by an unprivileged user, of a
// setuid-root program with sites linked without the runtime (which the
// loader preloads nothing into) says so in one line, and the program
// runs untraced, as without record: the same output, a secure run, no
// trace. Run by root, the same program is no secure run, and record
// traces it with the runtime preloaded.
func TestPreloadSetuid(t *testing.T) {
	t.Parallel()
	needRoot(t)
	need(t, "setpriv")
	tg, build := gccTest(t)
	base := traversable(t)
	bin := filepath.Join(base, "bin")
	mkdirOwned(t, bin, 0o755, 0)
	home := filepath.Join(base, "home") // the user's own directory, the cwd
	mkdirOwned(t, home, 0o755, nobody)
	built, _ := tracedAs(t, tg, build, "-O2 -pg -mfentry", true, preloadedMode, "exits.c")
	prog, ftpatch := filepath.Join(bin, "prog"), filepath.Join(bin, "ftpatch")
	copyFile(t, built, prog, 0o755)
	copyFile(t, tool("ftpatch"), ftpatch, 0o755)
	setuidRoot(t, prog)
	untraced, _, code := asNobody(t, home, nil, prog, "rights")
	if code != 0 || !strings.HasSuffix(untraced, "\neuid 0 secure 1\n") {
		t.Fatalf("untraced as nobody: exit %d, output %q; want a secure run's euid 0 secure 1 at the end", code, untraced)
	}
	trace := filepath.Join(home, "trace")
	out, stderr, code := asNobody(t, home, nil, ftpatch, "record", "-d", trace, "--", prog, "rights")
	if out != untraced || code != 0 {
		t.Errorf("under record: exit %d, output %q; want exit 0, %q", code, out, untraced)
	}
	note := "ftpatch: note: " + prog + " is setuid or setgid and linked without the runtime: the loader preloads nothing into it, so it runs untraced\n"
	if stderr != note {
		t.Errorf("record's stderr:\n%s\nwant the one line\n%s", stderr, note)
	}
	if _, err := os.Stat(trace); !os.IsNotExist(err) {
		t.Errorf("%s: %v; want no trace", trace, err)
	}
	// Root runs it as any program: preloaded, traced.
	rootTrace := filepath.Join(build, "root-trace")
	out, stderr, code, err := runStatus(build, ftpatch, "record", "--tracer", "function", "-d", rootTrace, "--", prog, "rights")
	if err != nil || code != 0 || !strings.HasSuffix(out, "\neuid 0 secure 0\n") || strings.Contains(stderr, "note:") {
		t.Fatalf("as root under record: exit %d, %v, output %q\n%s", code, err, out, stderr)
	}
	if counts, _ := reportCounts(t, rootTrace); counts["main"] != 1 {
		t.Errorf("as root: report %v; want main's call", counts)
	}
}

// TestPreloadNoTable: a program compiled with -pg or -pg -mfentry whose
// objects recordmcount never saw (nor gcc's -mrecord-mcount), linked
// without the runtime, calls its hook but has no table of its sites,
// from which alone the runtime finds them: ftpatch record says so in one
// line, naming the ways to a table (and -P), and the program runs as
// untraced, none of its functions traced. With -mrecord-mcount, the
// line is not there and its functions are traced.
func TestPreloadNoTable(t *testing.T) {
	t.Parallel()
	for _, flags := range []string{"-pg -mfentry", "-pg", "-pg -mfentry -mrecord-mcount"} {
		t.Run(slug(flags), func(t *testing.T) {
			t.Parallel()
			tg, dir := gccTest(t)
			objs := buildSrc(t, tg, dir, "-O2 "+flags, true, progSources...)
			prog := filepath.Join(dir, "prog")
			run(t, dir, append([]string{"gcc", "-o", prog, "-pie"}, objs...)...)
			wantOut, _, wantCode, err := runStatus(dir, prog)
			if err != nil {
				t.Fatal(err)
			}
			td := filepath.Join(dir, "trace")
			out, stderr, code, err := runStatus(dir, tool("ftpatch"), "record", "--tracer", "function", "-d", td, "--", prog)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, "record", out, code, wantOut, wantCode)
			hook := "__fentry__"
			if !strings.Contains(flags, "-mfentry") {
				hook = "mcount"
			}
			note := "ftpatch: note: " + prog + " calls " + hook + " but has no table of its sites, which the runtime finds them from: none of its functions is traced; run recordmcount on its objects before linking, or compile with -mrecord-mcount (gcc), or record it with -P . (sites made from its functions' prologues)\n"
			counts := map[string]int{}
			if _, err := os.Stat(td); err == nil {
				counts, _ = reportCounts(t, td)
			}
			if strings.Contains(flags, "-mrecord-mcount") {
				if strings.Contains(stderr, "no table") || counts["main"] != 1 {
					t.Errorf("with -mrecord-mcount's table: report %v, record's stderr\n%s\nwant main traced, no note", counts, stderr)
				}
				return
			}
			if strings.Count(stderr, note) != 1 || !strings.HasPrefix(stderr, note) {
				t.Errorf("record's stderr:\n%s\nwant it to begin with the one line\n%s", stderr, note)
			}
			if len(counts) != 0 {
				t.Errorf("report %v; want no call traced", counts)
			}
		})
	}
}
