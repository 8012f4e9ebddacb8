package tests

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	ftrt "ftpatch/runtime"
	"ftpatch/runtime/abi"
	"ftpatch/trace"
	"ftpatch/views"
)

// modBuild is how the shared-object test program is built: modmain
// linked with the runtime and with libmod.so (module stub) at start,
// libplug.so (module stub) loaded by dlopen.
type modBuild struct {
	flags string // site flags of all three
	entry bool   // sites at function entries: graphed through per-site trampolines
}

// modBuilds are the site kinds a shared object may have.
var modBuilds = []modBuild{
	{"-pg -mfentry", true},
	{"-pg", false},
	{"-fpatchable-function-entry=5", true},
}

// arm64ModBuilds are arm64's.
var arm64ModBuilds = []modBuild{
	{"-fpatchable-function-entry=2", true},
	{"-fpatchable-function-entry=4,2 -falign-functions=8", true},
	{"-pg", false},
}

// modCalls are the calls the program makes, by reading modmain.c,
// modlib.c and modplug.c: main calls lib_sum (3 lib_leaf each) and
// lib_scale, and anon_exec four times; each of the two loads
// of the plugin calls plug_run once, which calls plug_step twice and
// lib_sum once.
var modCalls = map[string]int{
	"main": 1, "anon_exec": 4, "lib_sum": 3, "lib_leaf": 9, "lib_scale": 1,
	"plug_run": 2, "plug_step": 4,
}

// untracedModules runs the program linkModules linked, with its plugin,
// untraced, and returns its output and exit status, which must be
// modmain.c's 7 (any other means a module failed to load or call).
func untracedModules(t *testing.T, tg target, dir, prog, plug string) (string, int) {
	t.Helper()
	out, _, code, err := runStatus(dir, tg.on(prog, plug)...)
	if err != nil || code != 7 {
		t.Fatalf("untraced: exit %d, %v", code, err)
	}
	return out, code
}

// modLibs builds the library and the plugin of progs/modmain.c with
// flags and their own tables into dir, libmod.so and libplug.so, and
// returns the plugin's path.
func modLibs(t *testing.T, tg target, dir, flags string) string {
	t.Helper()
	objs := buildSrc(t, tg, dir, flags+" -fPIC", true, "modlib.c", "modplug.c")
	linkShared(t, tg, dir, "libmod.so", objs[:1])
	return linkShared(t, tg, dir, "libplug.so", objs[1:], "-L"+dir, "-lmod")
}

// linkModules builds the program, its library and its plugin into dir
// and returns the program's and the plugin's paths.
func linkModules(t *testing.T, tg target, dir string, b modBuild) (prog, plug string) {
	t.Helper()
	lib := runtimeArchiveFor(t, tg.arch)
	plug = modLibs(t, tg, dir, b.flags)
	main := buildSrc(t, tg, dir, b.flags, true, "modmain.c")
	run(t, dir, append([]string{tool("recordmcount")}, main...)...)
	prog = filepath.Join(dir, "modmain")
	run(t, dir, append(append(append([]string{}, tg.link...), "-pie", "-o", prog, main[0], "-L"+dir, "-lmod", "-Wl,-rpath,"+dir), ftrt.LinkFlags(lib)...)...)
	checkExports(t, filepath.Join(dir, "libmod.so"), nil, stubNames(tg.arch))
	checkExports(t, plug, nil, stubNames(tg.arch))
	checkExports(t, prog, []string{abi.ModuleRegister, abi.ModuleUnregister}, nil)
	return prog, plug
}

// stubNames are the module stub's symbols: hidden, so that no shared
// object's hooks or trampolines are bound to another's (or the program's).
func stubNames(arch string) []string {
	names := []string{abi.ModuleSlots, abi.ModuleInit, "ftrt_config"}
	if arch == "arm64" {
		return append(names, abi.ARM64Mcount, abi.ARM64Caller, abi.ARM64McountCaller, abi.Stub)
	}
	for t := range abi.NumTargets {
		names = append(names, t.String())
	}
	return names
}

// checkExports: the file's dynamic symbol table defines every name of
// want and none of never.
func checkExports(t *testing.T, path string, want, never []string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defined := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF {
			defined[s.Name] = true
		}
	}
	for _, n := range want {
		if !defined[n] {
			t.Errorf("%s does not export %s", path, n)
		}
	}
	for _, n := range never {
		if defined[n] {
			t.Errorf("%s exports %s", path, n)
		}
	}
}

var anonLine = regexp.MustCompile(`anon-exec before=(\d+) loaded=(\d+) after=(\d+)`)

// anonExec reads modmain's report of its anonymous executable mappings.
func anonExec(t *testing.T, stderr string) (before, loaded, after int) {
	t.Helper()
	m := anonLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no anon-exec line in stderr:\n%s", stderr)
	}
	return atoi(m[1]), atoi(m[2]), atoi(m[3])
}

// TestSharedObjects: one runtime serves a program and its shared objects,
// the one linked at start and the one loaded with dlopen, each
// registering its own table. Traced under function and function_graph
// (all functions, and a filter naming only the plugin's), the program
// prints the same and exits the same as untraced; the trace names every
// module's functions with exact counts; each module's trampolines go when
// it is unloaded; and the metadata lists each load of each module.
func TestSharedObjects(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, x86Clang, a64GCC, a64Clang} {
		builds, prefix := modBuilds, ""
		if tg.arch != "x86_64" {
			builds, prefix = arm64ModBuilds, tg.arch+"/"
		}
		for _, b := range builds {
			t.Run(prefix+tg.name+"/"+slug(b.flags), func(t *testing.T) {
				t.Parallel()
				need(t, tg.tools...)
				dir := t.TempDir()
				prog, plug := linkModules(t, tg, dir, b)
				wantOut, wantCode := untracedModules(t, tg, dir, prog, plug)
				plugOnly := map[string]int{"plug_run": 2, "plug_step": 4}
				cases := []struct {
					name   string
					env    []string
					tracer string
					want   map[string]int
				}{
					{"function", []string{"FTRACE=function"}, "function", modCalls},
					{"function_graph", []string{"FTRACE=function_graph"}, "function_graph", modCalls},
					{"filter", []string{"FTRACE=function_graph", "FTRACE_FILTER=plug_*"}, "function_graph", plugOnly},
					// Library calls between the modules (the program's
					// and the plugin's slots of lib_*'s functions): the
					// functions' own sites record them, once; the
					// plugin's stub pages go with it.
					{"libcall", []string{"FTRACE=function", "FTRACE_LIBCALL=1", "FTRACE_FILTER=main,lib_*,plug_*,anon_*"}, "function", modCalls},
					// The same under function_graph, whose slots (on
					// x86-64) point at graph stubs: their fast path
					// leaves a slot whose function records its own
					// calls to the C entry, which goes straight on.
					{"libcall_graph", []string{"FTRACE=function_graph", "FTRACE_LIBCALL=1", "FTRACE_FILTER=main,lib_*,plug_*,anon_*"}, "function_graph", modCalls},
				}
				for _, c := range cases {
					tdir := filepath.Join(dir, "t-"+c.name)
					out, errOut, code, err := runStatusEnv(dir, append(c.env, "FTRACE_OUT="+tdir), tg.on(prog, plug)...)
					if err != nil || out != wantOut || code != wantCode {
						t.Fatalf("%s: exit %d (%v), output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", c.name, code, err, out, wantCode, wantOut, errOut)
					}
					if got := traceCounts(t, tdir); fmt.Sprint(got) != fmt.Sprint(c.want) {
						t.Errorf("%s: traced %v, want %v", c.name, got, c.want)
					}
					tr, err := trace.Read(tdir)
					if err != nil {
						t.Fatal(err)
					}
					checkModules(t, tr, dir, c.tracer)
					// Every module's =4,2 sites through their
					// literals (a shared object's through its
					// stub's ftrace_ops_caller).
					if literal := strings.Contains(b.flags, "=4,2"); literal && (tr.Meta.Literal != tr.Meta.Enabled || tr.Meta.Misaligned != 0) || !literal && tr.Meta.Literal != 0 {
						t.Errorf("%s: %d sites enabled, %d through their literal, %d misaligned", c.name, tr.Meta.Enabled, tr.Meta.Literal, tr.Meta.Misaligned)
					}
					before, loaded, after := anonExec(t, errOut)
					if after != before {
						t.Errorf("%s: %d bytes of anonymous code before the plugin's load, %d after its unload: its trampolines were not unmapped", c.name, before, after)
					}
					// x86-64's graph tracer maps a trampoline per entry site;
					// arm64's calls ftrace_caller from every site. (Library
					// calls' stub pages: only that they go, above. Under
					// qemu-user, whose /proc/self/maps is its own account
					// of the guest's pages, a stub page now and then does
					// not show as anonymous code, before the load (the
					// program's) or while loaded (the plugin's): 2 runs in
					// 36, natively never.)
					if graphs := c.tracer == "function_graph" && b.entry && tg.arch == "x86_64"; !strings.HasPrefix(c.name, "libcall") && graphs != (loaded > before) {
						t.Errorf("%s: %d bytes of anonymous code before the plugin's load, %d while loaded (trampolines expected: %v)", c.name, before, loaded, graphs)
					}
				}
				// The graph: the plugin's call back into the library nests
				// under plug_run, across three modules.
				_, threads := graphOf(t, filepath.Join(dir, "t-function_graph"))
				checkNesting(t, threads)
				var w strings.Builder
				if err := views.WriteTrees(&w, &trace.Trace{}, threads); err != nil {
					t.Fatal(err)
				}
				if !regexp.MustCompile(`(?s)plug_run\(\) \{.*plug_step\(\);.*lib_sum\(\) \{.*lib_leaf\(\);.*\} /\* lib_sum \*/.*\} /\* plug_run \*/`).MatchString(w.String()) {
					t.Errorf("graph: plug_run does not hold plug_step and lib_sum { lib_leaf }:\n%s", w.String())
				}
			})
		}
	}
}

// checkModules: the metadata lists libmod.so once (loaded before the
// trace began, never unloaded) and libplug.so once per load, each loaded
// and unloaded while tracing, with their sites counted.
func checkModules(t *testing.T, tr *trace.Trace, dir, tracer string) {
	t.Helper()
	if tr.Meta.Tracer != tracer {
		t.Errorf("tracer %q, want %q", tr.Meta.Tracer, tracer)
	}
	var got []string
	for _, m := range tr.Meta.Modules {
		if filepath.Dir(m.Path) != dir {
			t.Errorf("module %q: want an absolute path in %s", m.Path, dir)
		}
		state := "loaded"
		if m.Unload != 0 {
			state = "unloaded"
		}
		got = append(got, fmt.Sprintf("%s %s sites=%d", filepath.Base(m.Path), state, m.Sites))
		if m.BuildID == "" || m.Lo >= m.Hi || m.Lo < m.Bias {
			t.Errorf("module %+v", m)
		}
		if m.Unload != 0 && (m.Load == 0 || m.Unload < m.Load) {
			t.Errorf("module %s loaded at %d, unloaded at %d", m.Path, m.Load, m.Unload)
		}
	}
	want := []string{"libmod.so loaded sites=3", "libplug.so unloaded sites=2", "libplug.so unloaded sites=2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("modules %q, want %q", got, want)
	}
}

// TestSharedObjectsEnabled: the program and both shared objects
// pre-patched by ftpatch enable, each with its own list, run with no
// environment: the trace holds exactly the listed functions of all three,
// and no code page is made writable, at start or at dlopen (the nowrite
// launcher kills the process at the first attempt). ftpatch verify passes
// on each file; after ftpatch disable, nothing is traced.
func TestSharedObjectsEnabled(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GCC, x86Clang, a64GCC, a64Clang}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		prog, plug := linkModules(t, tg, dir, modBuild{preferred[tg.arch], true})
		lib := filepath.Join(dir, "libmod.so")
		wantOut, _, wantCode, err := runStatus(dir, tg.on(prog, plug)...)
		if err != nil {
			t.Fatal(err)
		}
		for file, funcs := range map[string][]string{prog: {"main"}, lib: {"lib_sum"}, plug: {"plug_*"}} {
			run(t, dir, append([]string{tool("ftpatch"), "enable", "--tracer", "function_graph", file}, funcs...)...)
			if out, _ := run(t, dir, tool("ftpatch"), "verify", file); !strings.Contains(out, "call the function_graph tracer") {
				t.Errorf("verify %s: %s", file, out)
			}
		}
		tdir := filepath.Join(dir, "t")
		out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE_OUT=" + tdir}, noWrite(t, tg, prog, plug)...)
		if err != nil || out != wantOut || code != wantCode {
			t.Fatalf("enabled under nowrite: exit %d (%v), output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", code, err, out, wantCode, wantOut, errOut)
		}
		checkNoWrite(t, tg, errOut)
		want := map[string]int{"main": 1, "lib_sum": 3, "plug_run": 2, "plug_step": 4}
		if got := traceCounts(t, tdir); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("traced %v, want %v", got, want)
		}
		tr, err := trace.Read(tdir)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Meta.Config != "patched" || len(tr.Meta.Modules) != 3 {
			t.Fatalf("config %q, modules %+v", tr.Meta.Config, tr.Meta.Modules)
		}
		for _, m := range tr.Meta.Modules {
			if m.Config != "patched" {
				t.Errorf("module %s: config %q, want patched", m.Path, m.Config)
			}
		}
		for _, file := range []string{prog, lib, plug} {
			run(t, dir, tool("ftpatch"), "disable", file)
			run(t, dir, tool("ftpatch"), "verify", file)
		}
		tdir = filepath.Join(dir, "t-disabled")
		out, _, code, err = runStatusEnv(dir, []string{"FTRACE_OUT=" + tdir}, tg.on(prog, plug)...)
		if err != nil || out != wantOut || code != wantCode {
			t.Fatalf("disabled: exit %d (%v), output\n%s", code, err, out)
		}
		if _, err := os.Stat(tdir); !os.IsNotExist(err) {
			t.Errorf("disabled: a trace directory was made (%v)", err)
		}
	})
}

// TestSharedObjectWithoutRuntime: a shared object with sites loaded into a
// program without the runtime runs untraced, says so when FTRACE asks for
// tracing, and changes nothing of the program's behaviour.
func TestSharedObjectWithoutRuntime(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GCC, a64GCC}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		plug := modLibs(t, tg, dir, preferred[tg.arch])
		main := buildSrc(t, tg, dir, "", true, "modmain.c")
		prog := filepath.Join(dir, "modmain")
		run(t, dir, append(append([]string{}, tg.link...), "-pie", "-o", prog, main[0], "-L"+dir, "-lmod", "-Wl,-rpath,"+dir)...)
		wantOut, _, wantCode, err := runStatus(dir, tg.on(prog, plug)...)
		if err != nil || wantCode != 7 {
			t.Fatalf("exit %d, %v", wantCode, err)
		}
		out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_OUT=" + filepath.Join(dir, "t")}, tg.on(prog, plug)...)
		if err != nil || out != wantOut || code != wantCode {
			t.Fatalf("exit %d (%v), output\n%s", code, err, out)
		}
		if !strings.Contains(errOut, "without the ftpatch runtime") {
			t.Errorf("no warning on stderr:\n%s", errOut)
		}
	})
}

var basesLine = regexp.MustCompile(`bases (0x[0-9a-f]+) (0x[0-9a-f]+)`)

// TestModuleReuse: a plugin loaded with dlopen and closed, and another
// loaded at the same addresses (progs/reuse.c: it checks that the second
// was), both with sites, traced under function and function_graph:
// replay and report name each plugin's calls from its own file, as the
// metadata's load and unload times say which was mapped when.
//
// x86-64 only: under qemu-user, dlclose's unmapped range is not where the
// next dlopen maps (qemu places guest mappings itself), so the second
// plugin never lands where the first was.
func TestModuleReuse(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GCC}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		lib := runtimeArchiveFor(t, tg.arch)
		var plugins []string
		for _, name := range []string{"reuseplum", "reusepear"} {
			plugins = append(plugins, linkShared(t, tg, dir, "lib"+name+".so", buildSrc(t, tg, dir, preferred[tg.arch]+" -fPIC", true, name+".c")))
		}
		main := buildSrc(t, tg, dir, preferred[tg.arch], true, "reuse.c")
		run(t, dir, append([]string{tool("recordmcount")}, main...)...)
		prog := filepath.Join(dir, "reuse")
		run(t, dir, append(append(append([]string{}, tg.link...), "-pie", "-o", prog, main[0]), ftrt.LinkFlags(lib)...)...)
		wantOut, _, wantCode, err := runStatus(dir, tg.on(prog, plugins...)...)
		if err != nil || wantCode != 3 {
			t.Fatalf("untraced: exit %d, %v", wantCode, err)
		}
		want := map[string]int{"main": 1, "plum_run": 1, "plum_step": 2, "pear_run": 1, "pear_step": 3}
		for _, tracer := range []string{"function", "function_graph"} {
			t.Run(tracer, func(t *testing.T) {
				tdir := filepath.Join(dir, "t-"+tracer)
				out, errOut, code, err := runStatusEnv(dir, []string{"FTRACE=" + tracer, "FTRACE_OUT=" + tdir}, tg.on(prog, plugins...)...)
				if err != nil || out != wantOut || code != wantCode {
					t.Fatalf("exit %d (%v), output\n%s\nwant exit %d, output\n%s\nstderr:\n%s", code, err, out, wantCode, wantOut, errOut)
				}
				m := basesLine.FindStringSubmatch(errOut)
				if m == nil || m[1] != m[2] {
					t.Fatalf("the second plugin was not loaded where the first was (stderr: %q): the test proves nothing", errOut)
				}
				tr, err := trace.Read(tdir)
				if err != nil {
					t.Fatal(err)
				}
				if len(tr.Meta.Modules) != 2 || tr.Meta.Modules[0].Lo != tr.Meta.Modules[1].Lo || tr.Meta.Modules[0].Unload > tr.Meta.Modules[1].Load {
					t.Fatalf("modules %+v: want two loads at the same address, one after the other", tr.Meta.Modules)
				}
				counts, repErr := reportCounts(t, tdir)
				if fmt.Sprint(counts) != fmt.Sprint(want) || repErr != "" {
					t.Errorf("report: %v, want %v; stderr:\n%s", counts, want, repErr)
				}
				replay, _ := run(t, dir, tool("ftpatch"), "replay", tdir)
				order := `(?s)plum_run.*plum_step.*plum_step.*pear_run.*pear_step.*pear_step.*pear_step`
				if tracer == "function" {
					// Each call's caller is named from the plugin mapped then too.
					order = `(?s)plum_run <- main\+.*plum_step <- plum_run\+.*plum_step <- plum_run\+.*pear_run <- main\+.*pear_step <- pear_run\+`
				}
				if !regexp.MustCompile(order).MatchString(replay) {
					t.Errorf("replay does not name each plugin's calls from its own file:\n%s", replay)
				}
			})
		}
	})
}

// TestModuleVersion: the runtime serves a module stub of its own version
// only (FTRT_MODULE_VERSION, bumped whenever the description or the
// slots change: the chain trampolines added two), and fills a served
// stub's slots with its trampolines in the order of the stub's jumps.
func TestModuleVersion(t *testing.T) {
	t.Parallel()
	need(t, "gcc")
	dir := t.TempDir()
	src := progPath(t, "modversion.c")
	hdr, err := filepath.Abs(filepath.Join("..", "runtime", "src"))
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "modversion")
	run(t, dir, append([]string{"gcc", "-O2", "-I", hdr, "-o", prog, src}, ftrt.LinkFlags(runtimeArchive(t))...)...)
	out, _ := run(t, dir, prog)
	const want = "register 0: 1 1 1 1 1 1\nregister -1: 0 0 0 0 0 0\nregister -1: 0 0 0 0 0 0\n"
	if out != want {
		t.Errorf("modversion printed\n%s\nwant\n%s", out, want)
	}
}

// TestEnableInLinkedObject: a glob given to enable that matches no
// function of the program but functions of a shared object it links
// (found by its run path) is answered with that object and the command
// that enables them there, which works; one matching a function of the
// C library, found as the loader finds it (for arm64, in the cross C
// library qemu runs the program with), says that it was not built for
// tracing.
func TestEnableInLinkedObject(t *testing.T) {
	t.Parallel()
	forCompilers(t, []target{x86GCC, a64GCC}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		prog, _ := linkModules(t, tg, dir, modBuild{flags: preferred[tg.arch], entry: true})
		out := filepath.Join(t.TempDir(), "out")
		_, stderr, code, err := runStatus(dir, tool("ftpatch"), "enable", "-o", out, prog, "lib_s*")
		want := fmt.Sprintf(`ftpatch: "lib_s*" matches lib_scale, lib_sum in libmod.so, which %s links: enable it there: ftpatch enable libmod.so 'lib_s*'`, prog)
		if err != nil || code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("enable %s 'lib_s*': exit %d (%v), stderr:\n%s\nwant exit 1 and\n%s", prog, code, err, stderr, want)
		}
		if _, stderr, code, err := runStatus(dir, tool("ftpatch"), "enable", "-o", out, "libmod.so", "lib_s*"); err != nil || code != 0 {
			t.Errorf("the command the hint gives: exit %d (%v):\n%s", code, err, stderr)
		}
		libc := "/lib/x86_64-linux-gnu/libc.so.6"
		if tg.arch == "arm64" {
			libc = "/usr/aarch64-linux-gnu/lib/libc.so.6"
		}
		_, stderr, code, err = runStatus(dir, tool("ftpatch"), "enable", "-o", out, prog, "puts")
		want = fmt.Sprintf(`ftpatch: "puts" matches puts in %s, which %s links, but that object was not built for tracing`, libc, prog)
		if err != nil || code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("enable %s puts: exit %d (%v), stderr:\n%s\nwant exit 1 and\n%s", prog, code, err, stderr, want)
		}
	})
}
