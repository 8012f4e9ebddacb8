package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ftpatch/argspec"
	"ftpatch/internal/golden"
	ftrt "ftpatch/runtime"
	"ftpatch/trace"
)

// argTypes builds progs/argtypes.c with -g and tg's preferred sites,
// linked with libargtypes.so (argtypeslib.c, a module with sites), and
// the plugin libargplug.so (argtypesplug.c) it loads with dlopen; it
// returns the program's and the plugin's paths.
func argTypes(t *testing.T, tg target, dir string) (prog, plug string) {
	t.Helper()
	flags := preferred[tg.arch] + " -g"
	linkShared(t, tg, dir, "libargtypes.so", buildSrc(t, tg, dir, flags+" -fPIC", true, "argtypeslib.c"))
	plug = linkShared(t, tg, dir, "libargplug.so", buildSrc(t, tg, dir, flags+" -fPIC", true, "argtypesplug.c"), "-L"+dir, "-largtypes")
	main := buildSrc(t, tg, dir, flags, true, "argtypes.c")
	run(t, dir, append([]string{tool("recordmcount")}, main...)...)
	prog = filepath.Join(dir, "argtypes")
	run(t, dir, append(append(append([]string{}, tg.link...), "-pie", "-o", prog, main[0], "-L"+dir, "-largtypes", "-ldl", "-Wl,-rpath,"+dir), ftrt.LinkFlags(runtimeArchiveFor(t, tg.arch))...)...)
	return prog, plug
}

// argTypesOut is progs/argtypes.c's output, traced or not.
const argTypesOut = "total -2147319397\n"

// TestAutoArgs: `ftpatch record --auto-args --filter '*'` on
// progs/argtypes.c records every argument and return value as C reads
// them (testdata/args-types-ARCH.golden, reviewed against the program's
// values): int_add(-1, 2) = 1; each width and sign from its own bits;
// float, double, bool, char, enums by name (a flags enum's OR), strings
// and pointers; long doubles (2.5), structs by their members ({5, -6})
// in registers, on the stack or by reference, more integer arguments
// than registers and floats past the vector registers on the stack
// after them, each value where the calling convention put it; struct
// and long double return values; a shared object's function (its own
// DWARF), a plugin's loaded with dlopen (asked for when it loads), and
// 40 functions more. On x86-64 through ftpatch record; on arm64 under
// qemu, the program given FTRACE_ARGS_SOCKET of a server started here
// (record cannot run an arm64 program). The runtime's own functions are
// never among those --auto-args types; a socket with no server is
// warned about once and the program runs as without it.
func TestAutoArgs(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, a64GCC} {
		t.Run(tg.arch, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			prog, plug := argTypes(t, tg, dir)
			if out, _, code, err := runStatus(dir, tg.on(prog, plug)...); err != nil || code != 0 || out != argTypesOut {
				t.Fatalf("untraced: exit %d, %v, output %q", code, err, out)
			}
			tdir := filepath.Join(dir, "t")
			if tg.arch == "x86_64" {
				// --no-sched: the golden holds no times off the CPU, which vary from run to run.
				out, stderr, code, err := runStatus(dir, tool("ftpatch"), "record", "--no-sched", "--auto-args", "--filter", "*,!main", "-d", tdir, prog, plug)
				if err != nil || code != 0 || out != argTypesOut {
					t.Fatalf("record: exit %d, %v, output %q\n%s", code, err, out, stderr)
				}
			} else {
				var notes bytes.Buffer
				enums := argspec.NewEnums()
				srv, err := argspec.Serve([]string{"*", "!main"}, enums, &notes)
				if err != nil {
					t.Fatal(err)
				}
				env := []string{"FTRACE=function_graph", "FTRACE_OUT=" + tdir, "FTRACE_FILTER=*,!main", "FTRACE_ARGS_SOCKET=" + srv.Path()}
				out, stderr, code, err := runStatusEnv(dir, env, tg.on(prog, plug)...)
				srv.Close()
				if err != nil || code != 0 || out != argTypesOut || stderr != "" || notes.Len() > 0 {
					t.Fatalf("traced: exit %d, %v, output %q\n%s%s", code, err, out, stderr, notes.String())
				}
				var b bytes.Buffer
				if err := trace.WriteEnums(&b, enums.List()); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(tdir, trace.EnumsFile), b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, stderr := run(t, dir, tool("ftpatch"), "replay", tdir)
			if stderr != "" {
				t.Errorf("replay: %s", stderr)
			}
			// The library calls' (record types them): the plugin's path,
			// the addresses a run chooses.
			golden.Check(t, filepath.Join("testdata", "args-types-"+tg.arch+".golden"), maskedAddrs([]byte(strings.ReplaceAll(out, dir, "DIR"))))

			m, err := argspec.Read(prog, []string{"*"}, argspec.NewEnums())
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(m.Funcs, func(f argspec.Func) bool {
				return strings.HasPrefix(f.Name, "ftrt_") || strings.HasPrefix(f.Name, "ftrace_")
			}); i >= 0 || len(m.Funcs) < 50 {
				t.Errorf("--auto-args '*' types %d functions, the runtime's %v among them", len(m.Funcs), i >= 0)
			}

			env := []string{"FTRACE=function_graph", "FTRACE_OUT=" + filepath.Join(dir, "gone"), "FTRACE_ARGS_SOCKET=" + filepath.Join(dir, "no-such-socket")}
			out, stderr, code, err := runStatusEnv(dir, env, tg.on(prog, plug)...)
			if err != nil || code != 0 || out != argTypesOut || strings.Count(stderr, "FTRACE_ARGS_SOCKET") != 1 {
				t.Errorf("no server: exit %d, %v, output %q, stderr\n%s", code, err, out, stderr)
			}
		})
	}
}

// TestAutoArgsErrors: --auto-args without a filter, and -A and -R specs
// the grammar refuses, stop record before the program runs, with exit
// status 2 and one error naming the spec.
func TestAutoArgsErrors(t *testing.T) {
	t.Parallel()
	tg, dir := gccTest(t)
	prog := traced(t, tg, dir, "-O2 -g -pg -mfentry", true, "args.c")
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--auto-args"}, "--auto-args needs --filter or -F"},
		{[]string{"-A", "parse@arg0"}, `--args: "parse@arg0": item "arg0": want a number from 1 after "arg"`},
		{[]string{"-A", "parse@arg4294967297"}, `item "arg4294967297": x86_64's arg1-arg6 are registers, arg7-arg70 the stack's words after them`},
		{[]string{"-A", "parse@fparg9"}, `item "fparg9": x86_64 passes 8 floating-point arguments in registers (fparg1-fparg8); one on the stack is stack+OFF/f64`},
		{[]string{"-A", "parse@stack+4"}, `item "stack+4": the stack's arguments are 8-byte words: OFF is a multiple of 8`},
		{[]string{"-A", "parse@stack+8/f128,arg1/{i64,i64,i64}"}, `item "arg1/{i64,i64,i64}": 24 bytes: a struct in registers has at most 16 (two)`},
		{[]string{"-R", "parse/f80", "-A", "parse@stack+8/f80,fparg1/f80"}, `item "fparg1/f80": format "f80": no vector register holds one`},
		{[]string{"-A", "parse@arg1,pointer"}, `item "pointer": want argN[/FMT], fpargN[/FMT], stack+OFF[/FMT], *argN/{...}, *stack+OFF/{...}, argN+fpargM/{...} or ?`},
		{[]string{"-A", "parse@arg1/w"}, `unknown format "w"`},
		{[]string{"-R", "parse/e:nosuch"}, "e:nosuch: " + prog + "'s DWARF has no enum of that name"},
	} {
		tdir := filepath.Join(dir, "t")
		out, stderr, code, _ := runStatus(dir, append(append([]string{tool("ftpatch"), "record", "-d", tdir}, c.flags...), prog)...)
		if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, output %q, stderr %q, want exit 2 and %q", c.flags, code, out, stderr, c.want)
		}
		if _, err := os.Stat(tdir); err == nil {
			t.Errorf("%v: the program ran", c.flags)
		}
	}
}
