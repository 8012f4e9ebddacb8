package tests

import (
	"debug/elf"
	"maps"
	"path/filepath"
	"regexp"
	"testing"
)

// TestFarCode: on arm64 a bl reaches ±128 MiB. A program whose traced
// functions lie 768 MiB from the runtime (progs/far.c: a section linked
// at 0x30000000) has every site traced, none failed: each far site calls
// a veneer the runtime places within its reach (runtime/src/arm64/
// veneer.c), for every site kind, under function, function_graph and
// nop, with the program's output and exit status unchanged and every
// call counted. -pg sites at the far section's very start read their
// prologue without reading before it (there is no mapping there).
func TestFarCode(t *testing.T) {
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
			})
		}
	}
}
