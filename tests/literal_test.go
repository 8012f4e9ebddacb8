package tests

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/internal/sitetest"
	"ftpatch/sites"
	"ftpatch/trace"
)

// TestLiterals: arm64's pre-function literal (the kernel's CALL_OPS). A
// -fpatchable-function-entry=4,2 function whose slot before it is 8-byte
// aligned is enabled through its literal (ftrace_ops_caller and the
// tracer's ops record); one whose slot is not (no -falign-functions=8:
// about half the functions at -O0) takes the shared path, counted. The
// runtime's counts must be the linked file's (ftpatch sites: callops for
// an aligned slot, patchable for the rest), and the program must print,
// exit and be traced as the same source built with =2, where every
// function takes the shared path.
func TestLiterals(t *testing.T) {
	t.Parallel()
	builds := []struct {
		name, flags string
		misaligned  bool // some slots are not 8-byte aligned
	}{
		{"aligned", "-O2 -fpatchable-function-entry=4,2 -falign-functions=8", false},
		{"aligned-bti", "-O2 -fpatchable-function-entry=4,2 -falign-functions=8 -mbranch-protection=standard", false},
		{"unaligned", "-O0 -fpatchable-function-entry=4,2", true},
	}
	for _, tg := range []target{a64GCC, a64Clang} {
		for _, b := range builds {
			t.Run(tg.name+"/"+b.name, func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir, refDir := t.TempDir(), t.TempDir()
				prog := traced(t, tg, dir, b.flags, true, "edge.c")
				ref := traced(t, tg, refDir, strings.Replace(b.flags, "=4,2", "=2", 1), true, "edge.c")

				// What the linked file says each function is.
				var ops, shared int
				for _, s := range sitetest.Find(t, sitetest.Open(t, prog), sites.FindLinked).Sites {
					switch s.Kind {
					case sites.ARM64CallOps:
						ops++
					case sites.ARM64Patchable:
						shared++
					default:
						t.Fatalf("site %#x (%s): kind %s in a =4,2 build", s.Off, s.Func, s.Kind)
					}
				}
				if ops == 0 || (shared > 0) != b.misaligned {
					t.Fatalf("%d sites with an aligned slot, %d without: want some with%s", ops, shared, map[bool]string{true: ", and some without", false: " and none without"}[b.misaligned])
				}

				wantOut, _, wantCode, err := runStatus(dir, tg.on(ref)...)
				if err != nil {
					t.Fatal(err)
				}
				for _, tracer := range []string{"function", "function_graph", "nop"} {
					out, refOut := filepath.Join(dir, tracer), filepath.Join(refDir, tracer)
					got, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_OUT=" + out}, tg.on(prog)...)
					if err != nil {
						t.Fatal(err)
					}
					if got != wantOut || code != wantCode {
						t.Errorf("%s: exit %d, output\n%s\nstderr\n%s\nwant exit %d, output\n%s", tracer, code, got, stderr, wantCode, wantOut)
					}
					if tracer == "nop" {
						continue // the empty tracer's sites call ftrace_stub: no trace
					}
					m := traceMeta(t, out)
					if m.Literal != uint64(ops) || m.Misaligned != uint64(shared) || m.Enabled != uint64(ops+shared) {
						t.Errorf("%s: %d sites enabled, %d through their literal, %d misaligned; want %d, %d, %d", tracer, m.Enabled, m.Literal, m.Misaligned, ops+shared, ops, shared)
					}
					if tracer != "function" {
						continue // the graph's counts depend on the shadow stack's overflow, per thread
					}
					if _, _, _, err := runStatusEnv(refDir, []string{"FTRACE=" + tracer, "FTRACE_OUT=" + refOut}, tg.on(ref)...); err != nil {
						t.Fatal(err)
					}
					if got, want := traceCounts(t, out), traceCounts(t, refOut); !maps.Equal(got, want) {
						t.Errorf("%s: calls %v through literals, %v on the shared path", tracer, got, want)
					}
				}
			})
		}
	}
}

// traceMeta reads a trace's metadata.
func traceMeta(t *testing.T, dir string) trace.Meta {
	t.Helper()
	return openForks(t, dir).Meta
}
