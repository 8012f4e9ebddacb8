package tests

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ftpatch/trace"
)

// callsByName counts the calls of each function a trace recorded, by
// name, as its symbols name them (a trampoline's site as its function).
func callsByName(t *testing.T, dir string) map[string]int {
	t.Helper()
	tr, syms := readTrace(t, dir)
	out := map[string]int{}
	for _, s := range tr.Streams {
		for _, r := range s.Records {
			if !r.IsCall() {
				continue
			}
			name, _, ok := syms.LookupAt(r.IP, r.TS)
			if !ok {
				t.Errorf("%s: a call at 0x%x that no symbol names", dir, r.IP)
				continue
			}
			out[name]++
		}
	}
	return out
}

// refused are the functions sites --dynamic gives no site in prog.
func refused(t *testing.T, dir, prog string) map[string]bool {
	t.Helper()
	js, _ := run(t, dir, tool("ftpatch"), "sites", "--dynamic", "--json", prog)
	var cov struct {
		Funcs []struct {
			Name string `json:"function"`
			Site string `json:"site"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(js), &cov); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range cov.Funcs {
		if f.Site == "-" {
			out[f.Name] = true
		}
	}
	return out
}

// TestPrologueTrace: the end-to-end program built with no tracing flag,
// traced with sites made from its functions' prologues, at load (record
// -P .) and after link (ftpatch instrument, the runtime preloaded),
// prints and exits as untraced, and records each function as often as
// the same sources built with compiler sites (-pg -mfentry, the runtime
// linked) do: every function but those too short for a site. gcc's
// builds under the function tracer, clang's (which keeps no value in a
// call-clobbered register across a call) under function_graph too.
func TestPrologueTrace(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang} {
		for _, pie := range []bool{true, false} {
			t.Run(tg.name+"/"+picFlag(pie), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				plain, wantOut, wantCode := plainRun(t, tg, pie, "bfd")
				prog := filepath.Join(dir, "plain")
				sharedProgram(t, plain, prog)
				compiled := traced(t, tg, dir, "-pg -mfentry", pie, progSources...)
				inst := filepath.Join(dir, "plain.i")
				run(t, dir, tool("ftpatch"), "instrument", "-o", inst, prog)
				skip := refused(t, dir, prog)
				tracers := []string{"function"}
				if tg.name == "clang" {
					tracers = append(tracers, "function_graph")
				}
				for _, tracer := range tracers {
					rec := func(name string, argv ...string) map[string]int {
						out := filepath.Join(dir, name+"-"+tracer)
						cmd := append([]string{tool("ftpatch"), "record", "--tracer", tracer, "--no-libcall", "--no-sched", "-d", out}, argv...)
						got, errOut, code, err := runStatus(dir, cmd...)
						if err != nil || got != wantOut || code != wantCode {
							t.Fatalf("%s: exit %d (%v), output\n%s\nstderr\n%s\nwant exit %d, output\n%s", strings.Join(cmd, " "), code, err, got, errOut, wantCode, wantOut)
						}
						return callsByName(t, out)
					}
					want := rec("compiled", compiled)
					for name := range want {
						if skip[name] {
							delete(want, name)
						}
					}
					for _, c := range []struct {
						name string
						argv []string
					}{{"load", []string{"-P", ".", prog}}, {"instrumented", []string{inst}}} {
						got := rec(c.name, c.argv...)
						if !maps.Equal(got, want) {
							t.Errorf("%s, %s: calls\n%v\nwant (the compiler's sites)\n%v", c.name, tracer, sorted(got), sorted(want))
						}
					}
				}
				tr := openForks(t, filepath.Join(dir, "load-function"))
				if tr.Meta.PrologueSites == 0 || len(tr.Meta.Prologues) != int(tr.Meta.PrologueSites) {
					t.Errorf("-P: metadata counts %d prologue sites, the file %d", tr.Meta.PrologueSites, len(tr.Meta.Prologues))
				}
				if _, ok := trace.MovedTo(tr.Meta.Prologues, 1); ok {
					t.Error("address 1 named as a prologue site")
				}
			})
		}
	}
}

// sorted lists a count map as name=count, sorted, for messages.
func sorted(m map[string]int) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+strconv.Itoa(m[k]))
	}
	return out
}
