package tests

import (
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

// TestPreloadExports: the preloaded runtime exports the runtime's API,
// the hooks and the functions it interposes, and nothing else.
func TestPreloadExports(t *testing.T) {
	need(t, "readelf")
	so := filepath.Join(filepath.Dir(runtimeArchive(t)), ftrt.SharedLibName)
	out, err := exec.Command("readelf", "--dyn-syms", "-W", so).Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := ftrt.PreloadExports(arch.X86_64)
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
	for _, must := range []string{"__fentry__", "mcount", "execve", "sigaction", "makecontext", "backtrace", "ftrt_module_register", "_exit"} {
		if !slices.Contains(defined, must) {
			t.Errorf("%s does not export %s", so, must)
		}
	}
}
