package tests

import (
	"debug/elf"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFarCode: on arm64 a bl reaches ±128 MiB. A program whose traced
// functions lie 768 MiB from the runtime (progs/far.c: a section linked
// at 0x30000000) has every site traced, none failed: each far site calls
// a veneer the runtime places within its reach (runtime/src/arch/arm64/
// veneer.c), for every site kind, under function, function_graph and
// nop, with the program's output and exit status unchanged and every
// call counted. -pg sites at the far section's very start read their
// prologue without reading before it (there is no mapping there).
func TestFarCode(t *testing.T) {
	t.Parallel()
	debugLine := regexp.MustCompile(`ftrt: (\d+) sites: .* (\d+) skipped, (\d+) failed; .* (\d+) traced`)
	for _, tg := range []target{a64GCC, a64Clang} {
		for _, flags := range flagSets["arm64"] {
			t.Run(tg.name+"/"+slug(flags), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				wantOut, wantCode := untraced(t, tg, dir, "far.c", "-no-pie", "-Wl,--section-start=farcode=0x30000000")
				objs := buildSrc(t, tg, dir, "-O1 "+flags, false, "far.c")
				prog := linkRecordedOn(t, tg, dir, objs, "-no-pie", "-Wl,--section-start=farcode=0x30000000")
				f, err := elf.Open(prog)
				if err != nil {
					t.Fatal(err)
				}
				syms, err := f.Symbols()
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				at := map[string]uint64{}
				for _, s := range syms {
					at[s.Name] = s.Value
				}
				if at["far_leaf"]-at["ftrace_caller"] < 1<<27 || at["far_leaf"]-at["ftrace_mcount_caller"] < 1<<27 {
					t.Fatalf("far_leaf at %#x, the trampolines at %#x and %#x: not beyond bl's reach", at["far_leaf"], at["ftrace_caller"], at["ftrace_mcount_caller"])
				}
				want := map[string]int{"main": 1, "near_fn": 10, "far_mid": 10, "far_leaf": 20}
				for _, tracer := range []string{"function", "function_graph", "nop"} {
					out := filepath.Join(dir, tracer)
					got, stderr, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_DEBUG=1", "FTRACE_OUT=" + out}, tg.on(prog)...)
					if err != nil {
						t.Fatal(err)
					}
					checkSame(t, tracer, got, code, wantOut, wantCode)
					m := debugLine.FindStringSubmatch(stderr)
					if m == nil || m[1] != "4" || m[2] != "0" || m[3] != "0" || m[4] != "4" {
						t.Errorf("%s: want 4 sites, 0 skipped, 0 failed, 4 traced:\n%s", tracer, stderr)
					}
					if tracer == "nop" {
						continue
					}
					if got := traceCounts(t, out); !maps.Equal(got, want) {
						t.Errorf("%s: traced %v, want %v", tracer, got, want)
					}
				}
				// ftpatch enable: the far functions' sites stay NOPs,
				// named in a warning; the file traces the near ones with
				// nothing set, and all of them with FTRACE set (the
				// runtime's veneers).
				enabled := filepath.Join(dir, "enabled")
				_, errOut, code := ftpatchStatus(t, dir, "enable", "--tracer", "function", "-o", enabled, prog, "*")
				if code != 0 || !strings.Contains(errOut, "2 sites (far_mid, far_leaf) too far from the runtime's trampolines") && !strings.Contains(errOut, "2 sites (far_leaf, far_mid) too far from the runtime's trampolines") {
					t.Fatalf("enable: exit %d, stderr %q; want a warning naming far_mid and far_leaf", code, errOut)
				}
				run(t, dir, tool("ftpatch"), "verify", enabled)
				for _, c := range []struct {
					env  []string
					want map[string]int
				}{
					{nil, map[string]int{"main": 1, "near_fn": 10}},
					{[]string{"FTRACE=function"}, want},
				} {
					out := filepath.Join(dir, fmt.Sprintf("enabled-%d", len(c.env)))
					got, stderr, code, err := runStatusEnv(dir, append(c.env, "FTRACE_OUT="+out), tg.on(enabled)...)
					if err != nil {
						t.Fatal(err)
					}
					checkSame(t, "enabled", got, code, wantOut, wantCode)
					if counts := traceCounts(t, out); !maps.Equal(counts, c.want) {
						t.Errorf("enabled, %v: traced %v, want %v\n%s", c.env, counts, c.want, stderr)
					}
				}
			})
		}
	}
}
