package tests

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"ftpatch/internal/asroot"
	"ftpatch/trace"
)

// smallFS mounts a tmpfs of size bytes at a new directory and unmounts
// it when the test ends. Mounting needs root, which CI has.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	asroot.Need(t, "mounts a small file system")
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount -t tmpfs -o size=%s %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("umount %s: %v", dir, err)
		}
	})
	return dir
}

// TestDiskFull: a program traced to a 64 KiB filesystem, whose trace does
// not fit (22,000 calls of fib), prints the same and exits the same as
// untraced, under both tracers; replay and report of what it left say
// what is missing, naming the directory: the events the runtime could
// not write, streams cut short, a run whose end is not recorded, or
// metadata that is empty, never "another version of the runtime".
func TestDiskFull(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GCC, a64GCC}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		prog := traced(t, tg, dir, preferred[tg.arch], true, progSources...)
		wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, tracer := range []string{"function", "function_graph"} {
			t.Run(tracer, func(t *testing.T) {
				tdir := filepath.Join(smallFS(t, "64k"), "t")
				out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_OUT=" + tdir}, tg.on(prog)...)
				if err != nil || out != wantOut || code != wantCode {
					t.Fatalf("exit %d (%v), output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", code, err, out, wantCode, wantOut, errOut)
				}
				for _, cmd := range []string{"replay", "report"} {
					_, stderr, code, err := runStatus(dir, tool("ftpatch"), cmd, tdir)
					if err != nil {
						t.Fatal(err)
					}
					// The session, or its process's image.
					said := regexp.MustCompile("ftpatch: warning: " + regexp.QuoteMeta(tdir) + `(/\d+@\d+)?: ` + regexp.QuoteMeta(trace.ErrUnended.Error())).MatchString(stderr)
					for _, what := range []string{"events lost: ", "incomplete trace: "} {
						said = said || regexp.MustCompile("ftpatch: warning: "+regexp.QuoteMeta(tdir)+`(/\d+@\d+)?: `+what).MatchString(stderr) ||
							(code != 0 && regexp.MustCompile(regexp.QuoteMeta(tdir)+`(/\d+@\d+)?/meta: `+what).MatchString(stderr))
					}
					if !said || strings.Contains(stderr, "another version") {
						t.Errorf("%s: exit %d, stderr\n%s\nwant a warning, or an error about the metadata, saying what is missing from %s", cmd, code, stderr, tdir)
					}
				}
			})
		}
	})
}
