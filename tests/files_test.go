package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ftpatch/internal/bounded"
	"ftpatch/internal/special"
	"ftpatch/internal/untouched"
)

// toolLimits bound a tool given a file it must refuse: one that waits on
// a FIFO or reads a device without end fails the test instead of
// stalling it or taking the machine's memory.
var toolLimits = bounded.Limits{Time: 30 * time.Second, Mem: 2 << 20}

// TestNotRegularFiles: every command of the tools that takes a file,
// given something that is not a regular file (/dev/zero, a FIFO no one
// writes, a directory, a symbolic link to /dev/zero) where it reads or
// writes one, fails at once with one line naming it and saying what it
// is, and a non-zero exit status, and writes nothing: it neither waits on
// the FIFO nor reads the device without end. That includes the
// executable a trace's metadata names, which replay and report read,
// and the directory ftpatch runtime build -o writes into.
func TestNotRegularFiles(t *testing.T) {
	t.Parallel()
	need(t, x86GCC.tools...)
	work := t.TempDir()
	prog := linkEnabled(t, x86GCC, work, enableBuilds[0])
	objs, err := filepath.Glob(filepath.Join(work, "*.o")) // recorded by linkEnabled
	if err != nil || len(objs) == 0 {
		t.Fatalf("no object beside %s: %v", prog, err)
	}
	obj := objs[0]
	tr := filepath.Join(work, "trace")
	if _, _, _, err := runStatusEnv(work, []string{"FTRACE=function", "FTRACE_OUT=" + tr}, prog); err != nil {
		t.Fatalf("tracing %s: %v", prog, err)
	}
	tr = image(t, tr) // the process's own trace directory, a plain one
	meta, err := os.ReadFile(filepath.Join(tr, "meta"))
	if err != nil {
		t.Fatal(err)
	}
	exeLine := regexp.MustCompile(`(?m)^exe .*$`)
	if !exeLine.Match(meta) {
		t.Fatalf("%s/meta has no exe line:\n%s", tr, meta)
	}
	// Each command: BAD stands for the file, TRACE for a trace whose
	// metadata names BAD as its executable. code is the exit status:
	// ftpatch gives 2 for an input it cannot read, 1 for a bad output.
	commands := []struct {
		argv []string
		code int
	}{
		{[]string{"ftpatch", "sites", "BAD"}, 2},
		{[]string{"ftpatch", "verify", "BAD"}, 2},
		{[]string{"ftpatch", "enable", "BAD", "fib"}, 2},
		{[]string{"ftpatch", "disable", "BAD"}, 2},
		{[]string{"ftpatch", "enable", "-o", "BAD", prog, "fib"}, 1},
		{[]string{"ftpatch", "disable", "-o", "BAD", prog}, 1},
		{[]string{"ftpatch", "enable", "--funcs", "BAD", prog}, 2},
		{[]string{"ftpatch", "enable", "--funcs-from", "BAD", prog}, 2},
		{[]string{"ftpatch", "replay", "--exe", "BAD", tr}, 1},
		{[]string{"ftpatch", "report", "--exe", "BAD", tr}, 1},
		{[]string{"ftpatch", "replay", "TRACE"}, 1},
		{[]string{"ftpatch", "report", "TRACE"}, 1},
		{[]string{"recordmcount", "BAD"}, 1},
		{[]string{"recordmcount", "--list", "BAD"}, 1},
		{[]string{"recordmcount", "-o", "BAD", obj}, 1},
	}
	for _, k := range special.Files {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bad := k.Make(t, filepath.Join(dir, k.Name))
			badTrace := filepath.Join(dir, "trace")
			if err := os.CopyFS(badTrace, os.DirFS(tr)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(badTrace, "meta"), exeLine.ReplaceAll(meta, []byte("exe "+bad)), 0o644); err != nil {
				t.Fatal(err)
			}
			keep := []untouched.File{untouched.Take(t, prog), untouched.Take(t, obj)}
			for _, c := range commands {
				argv := []string{tool(c.argv[0])}
				for _, a := range c.argv[1:] {
					argv = append(argv, strings.NewReplacer("BAD", bad, "TRACE", badTrace).Replace(a))
				}
				what := strings.Join(c.argv, " ")
				out, errOut, code := toolLimits.Run(t, dir, argv...)
				want := bad + ": " + k.Want
				if strings.Contains(what, "--list") && strings.HasPrefix(out, "OBJECT ") && strings.Count(out, "\n") == 1 {
					out = "" // the table's header alone
				}
				if code != c.code || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) || out != "" {
					t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit %d and one line saying %q", what, code, out, errOut, c.code, want)
				}
			}
			// The runtime's build writes into a directory: anything else
			// there is one line too.
			if k.Name != "directory" {
				_, errOut, code := toolLimits.Run(t, dir, tool("ftpatch"), "runtime", "build", "-o", bad)
				if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, bad+": not a directory") {
					t.Errorf("ftpatch runtime build -o BAD: exit %d, stderr:\n%s\nwant exit 1 and one line saying %q", code, errOut, bad+": not a directory")
				}
			}
			for _, s := range keep {
				s.Check(t, "after every command")
			}
			want := 1 // the trace
			if filepath.Dir(bad) == dir {
				want++
			}
			if ents, _ := os.ReadDir(dir); len(ents) != want {
				t.Errorf("%s holds %d entries, want %d: nothing written beside them", dir, len(ents), want)
			}
		})
	}
}
