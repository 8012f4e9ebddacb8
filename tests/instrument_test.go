package tests

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// flaglessOpts are the optimisation levels the programs built without
// tracing flags are instrumented at.
var flaglessOpts = []string{"-O0", "-O1", "-O2", "-O3", "-Os"}

// hardening is each ISA's control-flow protection: CET's endbr64 at
// every function's entry, or BTI landing pads and return addresses
// signed with PAC.
var hardening = map[string]string{"x86_64": "-fcf-protection", "arm64": "-mbranch-protection=standard"}

// TestInstrumentFlagless: the end-to-end program built with no tracing
// flag at all (both compilers, every optimisation level, PIE and not,
// with CET or BTI/PAC), copied by ftpatch instrument with a prologue
// site in each function, runs as the original does: the same output
// and exit status; sites --dynamic plans every function but _start (and
// a 4-byte one of -Os, too short for the jump), and
// ftpatch sites lists the copy's trampolines as patchable sites.
func TestInstrumentFlagless(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		for _, opt := range flaglessOpts {
			for _, v := range []struct {
				name  string
				flags []string
			}{{"pie", []string{"-fPIE", "-pie"}}, {"nopie", []string{"-fno-pie", "-no-pie"}}, {"hardened", []string{"-fPIE", "-pie", hardening[tg.arch]}}} {
				name := tg.arch + "/" + tg.name + "/" + opt + "/" + v.name
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					need(t, tg.tools...)
					dir := t.TempDir()
					prog := filepath.Join(dir, "plain")
					argv := append(append(append([]string{}, tg.cc...), opt), v.flags...)
					for _, s := range progSources {
						argv = append(argv, progPath(t, s))
					}
					if tg.name == "clang" && tg.arch == "arm64" {
						argv = append(argv, "-fuse-ld=lld", "-B", filepath.Join(toolDir, "lld"))
					}
					run(t, dir, append(argv, "-o", prog)...)
					checkInstrumented(t, tg, dir, prog, true)
				})
			}
		}
	}
}

// checkInstrumented instruments prog into prog.i and checks it: it runs
// as prog does, every function but the entry point and those too short
// for the jump has a prologue site,
// and ftpatch sites lists them.
func checkInstrumented(t *testing.T, tg target, dir, prog string, strict bool, runs ...[]string) string {
	t.Helper()
	if len(runs) == 0 {
		runs = [][]string{nil}
	}
	js, _ := run(t, dir, tool("ftpatch"), "sites", "--dynamic", "--json", prog)
	var cov struct {
		Funcs []struct {
			Name   string `json:"function"`
			Site   string `json:"site"`
			Detail string `json:"detail"`
		} `json:"functions"`
		Made     int            `json:"prologue"`
		None     int            `json:"none"`
		Compiler int            `json:"compiler"`
		Reasons  map[string]int `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(js), &cov); err != nil {
		t.Fatal(err)
	}
	// A real program: at least 97% of its functions (the cold parts
	// and stubs among its symbols not counted) get a site.
	notFunc := cov.Reasons["not a function's entry (a split-off cold part or a stub)"]
	if all := cov.Made + cov.None + cov.Compiler - notFunc; !strict && (all == 0 || float64(cov.Made) < 0.97*float64(all)) {
		t.Errorf("sites --dynamic: %d of %d functions get a prologue site; reasons %v", cov.Made, all, cov.Reasons)
	}
	for _, f := range cov.Funcs {
		if !strict {
			break
		}
		want := "prologue"
		// The entry point has no return address; a function of four
		// bytes and no padding (-Os: `imul; ret`) has no room for the
		// jump.
		if f.Name == "_start" || strings.HasPrefix(f.Detail, "shorter than the jump") {
			want = "-"
		}
		if f.Site != want {
			t.Errorf("sites --dynamic: %s gets %q (%s), want %q", f.Name, f.Site, f.Detail, want)
		}
	}
	inst := prog + ".i"
	run(t, dir, tool("ftpatch"), "instrument", "-o", inst, prog)
	for _, args := range runs {
		wantOut, wantErr, wantCode, err := runStatus(dir, tg.on(prog, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code, err := runStatus(dir, tg.on(inst, args...)...)
		if err != nil || out != wantOut || code != wantCode || errOut != strings.ReplaceAll(wantErr, prog, inst) {
			t.Errorf("instrumented %q: exit %d (%v), output\n%s\nstderr\n%s\nwant exit %d, output\n%s\nstderr\n%s", args, code, err, out, errOut, wantCode, wantOut, wantErr)
		}
	}
	listed, _ := run(t, dir, tool("ftpatch"), "sites", inst)
	if n := strings.Count(listed, " prologue "); n != cov.Made || n == 0 {
		t.Errorf("ftpatch sites lists %d prologue sites in the copy, want %d:\n%s", n, cov.Made, listed)
	}
	return inst
}

// TestInstrumentLua: Lua 5.4 built as a distribution builds it (-O2, no
// tracing flag; on arm64 with BTI and PAC too), instrumented, runs every
// test script as the original does, and at least 97% of its functions
// get a site.
func TestInstrumentLua(t *testing.T) {
	t.Parallel()
	src := luaSource(t)
	scripts := luaScripts(t)
	for _, b := range []struct {
		tg    target
		flags []string
	}{
		{x86GCC, nil},
		{x86Clang, []string{"-fcf-protection"}},
		{a64GCC, []string{"-mbranch-protection=standard"}},
	} {
		t.Run(b.tg.arch+"/"+b.tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, b.tg.tools...)
			dir := t.TempDir()
			lua := buildLua(t, b.tg, src, dir, b.flags, false)
			var runs [][]string
			for _, script := range scripts {
				script, _ := filepath.Abs(script)
				runs = append(runs, []string{script})
			}
			inst := checkInstrumented(t, b.tg, dir, lua, false, runs...)
			if b.tg.arch != "x86_64" {
				return // arm64's prologue sites are traced under qemu by TestPrologueTrace and TestPrologueRegisters
			}
			// Traced, at load and instrumented, each script prints as
			// untraced, and the same functions of the interpreter are
			// called as in its compiler-site build (-pg -mfentry), as
			// often in all: Lua seeds its string hashes from addresses
			// and the time, so a few functions' counts (internshrstr,
			// luaS_hashlongstr, mainpositionTV) move from run to run,
			// untraced too.
			compiled := buildLua(t, b.tg, src, t.TempDir(), append([]string{"-pg", "-mfentry"}, b.flags...), true)
			skip := withSite(t, dir, lua, "-")
			for i, args := range runs {
				wantOut, _, wantCode, err := runStatus(dir, b.tg.on(lua, args...)...)
				if err != nil {
					t.Fatal(err)
				}
				counts := map[string]map[string]int{}
				for _, k := range []struct {
					name string
					argv []string
				}{{"compiled", []string{compiled}}, {"load", []string{"-P", ".", lua}}, {"instrumented", []string{inst}}} {
					td := filepath.Join(dir, k.name+strconv.Itoa(i))
					argv := append(append([]string{tool("ftpatch"), "record", "--tracer", "function_graph", "--no-libcall", "--no-sched", "-d", td}, k.argv...), args...)
					out, errOut, code, err := runStatus(dir, argv...)
					if err != nil || out != wantOut || code != wantCode {
						t.Errorf("%s %s: exit %d (%v), output\n%s\nstderr\n%s\nwant exit %d, output\n%s", k.name, filepath.Base(args[0]), code, err, out, errOut, wantCode, wantOut)
						continue
					}
					counts[k.name] = callsByName(t, td)
				}
				for name := range counts["compiled"] {
					if skip[name] {
						delete(counts["compiled"], name)
					}
				}
				for _, k := range []string{"load", "instrumented"} {
					for name := range counts[k] {
						if _, ok := counts["compiled"][name]; !ok && !strings.HasPrefix(name, "lua") && !strings.HasPrefix(name, "luaL_") {
							delete(counts[k], name) // the C library's start files' functions
						}
					}
					// The same functions, the same calls give or take
					// the hash-seeded ones (internshrstr, luaS_hashlongstr,
					// mainpositionTV...): within 1% in all.
					total := func(m map[string]int) (n int) {
						for _, c := range m {
							n += c
						}
						return n
					}
					got, want := total(counts[k]), total(counts["compiled"])
					near := maps.EqualFunc(counts[k], counts["compiled"], func(int, int) bool { return true }) && (got-want)*(got-want)*10000 <= want*want
					if !near {
						t.Errorf("%s %s: calls differ from the compiler sites' build:\n%v\nwant\n%v", k, filepath.Base(args[0]), sorted(counts[k]), sorted(counts["compiled"]))
					}
				}
			}
		})
	}
}

// TestInstrumentEnable: a program built without tracing flags but linked
// with the runtime, instrumented, is an ordinary file with sites:
// ftpatch enable bakes tracing of chosen functions into it (on arm64 in
// the prologue sites' own form), the program then traces them with no
// variable set and prints as it did, verify finds it as enable wrote it,
// and disable takes it back to NOPs.
func TestInstrumentEnable(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, a64GCC} {
		t.Run(tg.arch, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			var objs []string
			for _, s := range progSources {
				obj := filepath.Join(dir, strings.TrimSuffix(s, ".c")+".o")
				run(t, dir, append(append([]string{}, tg.cc...), "-O2", "-fPIE", "-c", progPath(t, s), "-o", obj)...)
				objs = append(objs, obj)
			}
			prog := linkLib(t, dir, tg.link, runtimeArchiveFor(t, tg.arch), objs, "-pie")
			wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
			if err != nil {
				t.Fatal(err)
			}
			inst := prog + ".i"
			run(t, dir, tool("ftpatch"), "instrument", "-o", inst, prog)
			run(t, dir, tool("ftpatch"), "enable", "--tracer", "function", inst, "helper", "scale")
			run(t, dir, tool("ftpatch"), "verify", inst)
			listed, _ := run(t, dir, tool("ftpatch"), "sites", inst)
			if n := strings.Count(listed, " traced "); n != 2 {
				t.Errorf("ftpatch sites lists %d traced sites, want helper's and scale's:\n%s", n, listed)
			}
			out, errOut, code, err := runStatus(dir, tg.on(inst)...)
			if err != nil || out != wantOut || code != wantCode {
				t.Fatalf("enabled: exit %d (%v), output\n%s\nstderr\n%s\nwant exit %d, output\n%s", code, err, out, errOut, wantCode, wantOut)
			}
			got := callsByName(t, filepath.Join(dir, "ftrace.data")) // the program's directory: it runs there
			if got["helper"] == 0 || got["scale"] == 0 || len(got) != 2 {
				t.Errorf("the baked-in trace's calls: %v, want helper's and scale's alone", got)
			}
			run(t, dir, tool("ftpatch"), "disable", inst)
			if listed, _ := run(t, dir, tool("ftpatch"), "sites", inst); strings.Contains(listed, " traced ") {
				t.Errorf("disabled, ftpatch sites still lists traced sites:\n%s", listed)
			}
			if len(tg.exec) > 0 {
				return // record runs arm64 programs through binfmt_misc, which this machine may lack
			}
			// The program itself, which links the runtime, traced with
			// sites made at load (-P): the linked runtime asks for them
			// as the preloaded one does.
			td := filepath.Join(dir, "load")
			out, errOut, code, err = runStatus(dir, tool("ftpatch"), "record", "-P", "helper,scale", "--tracer", "function", "--no-libcall", "--no-sched", "-d", td, prog)
			if err != nil || out != wantOut || code != wantCode {
				t.Fatalf("record -P: exit %d (%v), output\n%s\nstderr\n%s\nwant exit %d, output\n%s", code, err, out, errOut, wantCode, wantOut)
			}
			if got := callsByName(t, td); got["helper"] == 0 || got["scale"] == 0 || len(got) != 2 {
				t.Errorf("record -P helper,scale of a program linking the runtime: calls %v, want helper's and scale's alone", got)
			}
		})
	}
}
