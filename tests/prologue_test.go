package tests

import (
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ftpatch/funclist"
	"ftpatch/prologue"
	ftrt "ftpatch/runtime"
	"ftpatch/runtime/abi"
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

// withSite are the functions of a file with the site sites --dynamic
// says they have: "compiler", "prologue", or "-" for none.
func withSite(t *testing.T, dir, prog, site string) map[string]bool {
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
		if f.Site == site {
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
// linked; arm64's preferred entry sites) do: every function but those
// too short for a site; under both tracers, on both ISAs (arm64 under
// qemu).
func TestPrologueTrace(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		for _, pie := range []bool{true, false} {
			t.Run(tg.arch+"/"+tg.name+"/"+picFlag(pie), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				plain, wantOut, wantCode := plainRun(t, tg, pie, "bfd")
				prog := filepath.Join(dir, "plain")
				sharedProgram(t, plain, prog)
				compiled := traced(t, tg, dir, preferred[tg.arch], pie, progSources...)
				inst := filepath.Join(dir, "plain.i")
				run(t, dir, tool("ftpatch"), "instrument", "-o", inst, prog)
				skip := withSite(t, dir, prog, "-")
				sources := withSite(t, dir, compiled, "compiler")
				// x86-64 through ftpatch record; arm64 under qemu (no
				// binfmt_misc here to run it through record), with the
				// runtime preloaded and -P's server started here.
				lib := filepath.Join(filepath.Dir(runtimeArchiveFor(t, tg.arch)), ftrt.SharedLibName)
				var plans *prologue.Server
				if len(tg.exec) > 0 {
					all := &funclist.List{}
					all.Add("*", "test")
					var err error
					if plans, err = prologue.ServePlans(all, io.Discard); err != nil {
						t.Fatal(err)
					}
					defer plans.Close()
					if err := plans.Prepare(prog); err != nil {
						t.Fatal(err)
					}
				}
				for _, tracer := range []string{"function", "function_graph"} {
					rec := func(name string, argv ...string) map[string]int {
						out := filepath.Join(dir, name+"-"+tracer)
						var cmd []string
						var env []string
						switch {
						case plans == nil:
							cmd = append([]string{tool("ftpatch"), "record", "--tracer", tracer, "--no-libcall", "--no-sched", "-d", out}, argv...)
						default:
							env = []string{"FTRACE=" + tracer, "FTRACE_OUT=" + out, "FTRACE_SCHED=0"}
							if argv[0] == "-P" {
								env = append(env, abi.EnvPrologueSocket+"="+plans.Path())
								argv = argv[2:]
							}
							if argv[0] != compiled {
								env = preloaded(tg, lib, env)
							}
							cmd = tg.on(argv[0])
						}
						got, errOut, code, err := runStatusEnv(dir, env, cmd...)
						if err != nil || got != wantOut || code != wantCode {
							t.Fatalf("%s %s: exit %d (%v), output\n%s\nstderr\n%s\nwant exit %d, output\n%s", strings.Join(env, " "), strings.Join(cmd, " "), code, err, got, errOut, wantCode, wantOut)
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
						// The C library's start files' functions
						// (call_weak_fn...) have prologue sites too,
						// and no compiler's: compared are the sources'.
						for name := range got {
							if !sources[name] {
								delete(got, name)
							}
						}
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

// TestDebianBinaries: programs nobody built for ftpatch, Debian's own
// binaries as installed (stripped: their functions come from .eh_frame,
// named from .dynsym where exported), traced with -P . under
// function_graph and instrumented (the copy run untraced, and traced),
// print and exit as they do untraced; the traces hold calls of their own
// functions, named.
func TestDebianBinaries(t *testing.T) {
	t.Parallel()
	need(t, "sqlite3")
	dir := t.TempDir()
	nums := filepath.Join(dir, "nums.txt")
	var b strings.Builder
	for i := range 500 {
		b.WriteString(strconv.Itoa((i*7919)%1009) + "\n")
	}
	if err := os.WriteFile(nums, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sql := filepath.Join(dir, "q.sql")
	if err := os.WriteFile(sql, []byte("create table t(a, b);\ninsert into t values (1, 'x'), (2, 'y'), (3, 'x');\nselect b, sum(a) from t group by b order by b;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"sort", []string{"/usr/bin/sort", "-n", nums}},
		{"ls", []string{"/usr/bin/ls", "-la", "/usr/share/doc/coreutils"}},
		{"sha256sum", []string{"/usr/bin/sha256sum", nums, sql}},
		{"sqlite3", []string{"/usr/bin/sqlite3", "-init", sql, ":memory:", ".quit"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wantOut, wantErr, wantCode, err := runStatus(dir, c.argv...)
			if err != nil {
				t.Fatal(err)
			}
			inst := filepath.Join(dir, c.name+".i")
			run(t, dir, tool("ftpatch"), "instrument", "-o", inst, c.argv[0])
			for _, k := range []struct {
				what string
				argv []string
			}{
				{"instrumented, untraced", append([]string{inst}, c.argv[1:]...)},
				{"-P .", append([]string{tool("ftpatch"), "record", "-P", ".", "--no-sched", "-d", filepath.Join(dir, c.name+"-load"), "--"}, c.argv...)},
				{"instrumented, traced", append([]string{tool("ftpatch"), "record", "--no-sched", "-d", filepath.Join(dir, c.name+"-inst"), "--", inst}, c.argv[1:]...)},
			} {
				out, errOut, code, err := runStatus(dir, k.argv...)
				if err != nil || out != wantOut || code != wantCode {
					t.Errorf("%s: exit %d (%v), output\n%s\nstderr\n%s\nwant exit %d, output\n%s\nstderr\n%s", k.what, code, err, out, errOut, wantCode, wantOut, wantErr)
				}
			}
			for _, td := range []string{c.name + "-load", c.name + "-inst"} {
				calls := callsByName(t, filepath.Join(dir, td))
				own := 0 // the program's own functions', named from .eh_frame (its exported ones are few)
				for name := range calls {
					if strings.HasPrefix(name, "sub_") {
						own++
					}
				}
				if own < 5 {
					t.Errorf("%s: %d of the program's own functions called, want 5 at least: %v", td, own, sorted(calls))
				}
			}
		})
	}
}
