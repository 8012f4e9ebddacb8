package tests

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	ftrt "ftpatch/runtime"
)

// iparaFuncs are progs/ipara.c's functions, whose calls the traces
// count.
var iparaFuncs = []string{"main", "ints", "floats", "leaf", "leaf0", "fleaf"}

// iparaKept is what ints and floats of progs/ipara.c must keep live
// across their calls of the leaves, in call-clobbered registers, for
// the test to mean anything: registers the compiler kept there because
// -fipa-ra saw the leaves leave them alone (checked with objdump).
var iparaKept = map[string][]string{
	"x86_64": {"%rcx", "%rdx", "%rsi", "%rdi", "%r8", "%r9", "%r10", "%r11", "%xmm8", "%xmm9"},
	"arm64":  {"x1", "x2", "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x18"},
}

// TestPrologueRegisters: a program built without tracing flags (-O2,
// where gcc's -fipa-ra lets a caller keep values in call-clobbered
// registers across a call to a function it sees leave them alone),
// instrumented (ftpatch instrument: a prologue site in each function),
// runs traced exactly as untraced: the same output and exit status
// under function and function_graph, every function traced or one
// alone, with FTRACE_THRESH, FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE,
// and as the empty tracer. Every path the runtime takes from a prologue
// site keeps every general register (and never touches a vector one).
// And each function's calls, counted, are those the same program built
// with compiler sites counts.
func TestPrologueRegisters(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		tg       target
		compiler string // the compiler sites' build, whose counts the trace must equal
	}{{x86GCC, "-O2 -pg -mfentry"}, {x86Clang, "-O2 -pg -mfentry"}, {a64GCC, "-O2 -fpatchable-function-entry=2"}, {a64Clang, "-O2 -fpatchable-function-entry=2"}} {
		tg := b.tg
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			prog := filepath.Join(dir, "ipara")
			argv := append(append([]string{}, tg.cc...), "-O2", progPath(t, "ipara.c"), "-o", prog)
			if tg.name == "clang" && tg.arch == "arm64" {
				argv = append(argv, "-fuse-ld=lld", "-B", filepath.Join(toolDir, "lld"))
			}
			run(t, dir, argv...)
			if tg.name == "gcc" {
				checkKept(t, tg, dir, prog)
			}
			inst := prog + ".i"
			run(t, dir, tool("ftpatch"), "instrument", "-o", inst, prog)
			args := []string{"300", "seen"}
			wantOut, _, wantCode, err := runStatus(dir, tg.on(prog, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			lib := filepath.Join(filepath.Dir(runtimeArchiveFor(t, tg.arch)), ftrt.SharedLibName)
			runs := [][]string{
				{"FTRACE=function"},
				{"FTRACE=function", "FTRACE_FILTER=leaf"},
				{"FTRACE=function", "FTRACE_FILTER=fleaf"},
				{"FTRACE=function_graph"},
				{"FTRACE=function_graph", "FTRACE_FILTER=leaf"},
				{"FTRACE=function_graph", "FTRACE_FILTER=leaf0"},
				{"FTRACE=function_graph", "FTRACE_FILTER=fleaf"},
				{"FTRACE=function_graph", "FTRACE_THRESH=1000000"},
				{"FTRACE=function_graph", "FTRACE_GRAPH_FUNCS=ints"},
				{"FTRACE=function_graph", "FTRACE_GRAPH_NOTRACE=floats"},
				{"FTRACE=nop"},
			}
			for i, env := range runs {
				td := filepath.Join(dir, "t"+strconv.Itoa(i))
				out, errOut, code, err := runStatusEnv(dir, preloaded(tg, lib, append(env, "FTRACE_OUT="+td)), tg.on(inst, args...)...)
				if err != nil {
					t.Fatal(err)
				}
				if out != wantOut || code != wantCode {
					t.Errorf("%s: exit %d, output %q (stderr %q); untraced: exit %d, output %q", strings.Join(env, " "), code, out, errOut, wantCode, wantOut)
				}
			}
			// The calls each function makes, counted from the trace of
			// every function under function (t0), are the compiler
			// sites' build's.
			got := reportCalls(t, dir, filepath.Join(dir, "t0"))
			cdir := filepath.Join(dir, "compiler")
			cprog := traced(t, tg, dir, b.compiler, true, "ipara.c")
			out, _, code, err := runStatusEnv(dir, []string{"FTRACE=function", "FTRACE_OUT=" + cdir}, tg.on(cprog, args...)...)
			if err != nil || out != wantOut || code != wantCode {
				t.Fatalf("the compiler sites' build: exit %d (%v), output %q; want %d, %q", code, err, out, wantCode, wantOut)
			}
			want := reportCalls(t, dir, cdir)
			for _, f := range iparaFuncs {
				if got[f] != want[f] || got[f] == 0 {
					t.Errorf("%s: %d calls traced from its prologue site, %d from its compiler site", f, got[f], want[f])
				}
			}
		})
	}
}

// preloaded is env for a run of a program of tg's with the runtime lib
// preloaded (through qemu for arm64, whose own loader must not load it).
func preloaded(tg target, lib string, env []string) []string {
	if len(tg.exec) > 0 {
		return append(env, "QEMU_SET_ENV=LD_PRELOAD="+lib)
	}
	return append(env, "LD_PRELOAD="+lib)
}

// reportCalls is each of progs/ipara.c's functions' count of calls in
// ftpatch report's table of the trace td.
func reportCalls(t *testing.T, dir, td string) map[string]int {
	t.Helper()
	rep, _ := run(t, dir, tool("ftpatch"), "report", td)
	calls := map[string]int{}
	for _, line := range strings.Split(rep, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if n, err := strconv.Atoi(f[len(f)-2]); err == nil {
			calls[f[len(f)-1]] = n
		}
	}
	return calls
}

// checkKept fails the test unless the callers of progs/ipara.c's leaves
// (ints and floats, in prog's disassembly) keep a value in each
// call-clobbered register iparaKept names across a call of a leaf:
// they write the register, call a leaf, and read it after the call
// without writing it in between.
func checkKept(t *testing.T, tg target, dir, prog string) {
	t.Helper()
	dis, _ := run(t, dir, tg.objdump, "-d", "--no-show-raw-insn", prog)
	kept := map[string]bool{}
	for _, fn := range []string{"ints", "floats"} {
		_, after, _ := strings.Cut(dis, "<"+fn+">:\n")
		body, _, _ := strings.Cut(after, "\n\n")
		written, call := map[string]int{}, -1
		for i, line := range strings.Split(body, "\n") {
			_, insn, ok := strings.Cut(line, ":\t") // "  13c1:\tcall   1350 <leaf>"
			if !ok {
				continue
			}
			op, args, _ := strings.Cut(strings.Join(strings.Fields(insn), " "), " ")
			if op == "call" || op == "bl" {
				if strings.Contains(args, "leaf") {
					call = i
				}
				continue
			}
			regs := iparaRegs(tg.arch, args)
			var dst []string
			switch {
			case tg.arch == "x86_64" && len(regs) > 0 && (strings.HasPrefix(op, "mov") || strings.HasPrefix(op, "lea") || strings.HasPrefix(op, "cvt")):
				dst, regs = regs[len(regs)-1:], regs[:len(regs)-1]
			case tg.arch == "arm64" && strings.HasPrefix(op, "ldp") && len(regs) > 1:
				dst, regs = regs[:2], regs[2:]
			case tg.arch == "arm64" && !strings.HasPrefix(op, "st") && !strings.HasPrefix(op, "cmp") && len(regs) > 0:
				dst, regs = regs[:1], regs[1:]
			}
			for _, r := range regs {
				if w, ok := written[r]; ok && call > w {
					kept[r] = true
				}
			}
			for _, r := range dst {
				written[r] = i
			}
		}
	}
	for _, r := range iparaKept[tg.arch] {
		if !kept[r] {
			t.Errorf("no value is kept in %s across a call of a leaf: the program no longer tests that register\n%s", r, dis)
		}
	}
}

// iparaRegs are the registers an instruction's operands name, in
// order, each by its 64-bit name (x86-64: %ecx and %cl as %rcx, %r8d as
// %r8; arm64: w1 as x1).
func iparaRegs(arch, args string) []string {
	args, _, _ = strings.Cut(args, "//")
	args, _, _ = strings.Cut(args, "#")
	var out []string
	if arch == "arm64" {
		for _, m := range arm64Reg.FindAllStringSubmatch(args, -1) {
			out = append(out, "x"+m[1])
		}
		return out
	}
	for _, r := range x86Reg.FindAllString(args, -1) {
		if n, ok := x86Names[r]; ok {
			r = n
		} else if !strings.HasPrefix(r, "%xmm") {
			r = strings.TrimRight(r, "dwb") // %r8d, %r10w, %r11b
		}
		out = append(out, r)
	}
	return out
}

// x86Names are the legacy registers' 32-, 16- and 8-bit names, each
// with its 64-bit one.
var x86Names = func() map[string]string {
	m := map[string]string{}
	for _, r := range [][]string{{"ax", "al"}, {"cx", "cl"}, {"dx", "dl"}, {"bx", "bl"}, {"si", "sil"}, {"di", "dil"}, {"bp", "bpl"}, {"sp", "spl"}} {
		for _, n := range []string{"%r" + r[0], "%e" + r[0], "%" + r[0], "%" + r[1]} {
			m[n] = "%r" + r[0]
		}
	}
	return m
}()

var (
	x86Reg   = regexp.MustCompile(`%(xmm[0-9]+|r[0-9]+[dwb]?|[re]?[a-z]{2}l?)\b`)
	arm64Reg = regexp.MustCompile(`\b[xw]([0-9]+)\b`)
)

// TestPrologueHooks: ftrace.h's ops (one, and two through the module's
// list), graph users, fprobe and direct calls (a direct trampoline the
// site calls, and one the list branches to after a callback) on sites
// made from prologues: progs/ipara.c built without tracing flags and
// without the runtime (progs/iparahook.c reaches the API through weak
// references the preloaded runtime resolves), instrumented, its leaves
// hooked with callbacks that change every call-clobbered register,
// integer and vector (x86-64: rax rcx rdx rsi rdi r8-r11, xmm0-15;
// arm64: x0-x18, v0-v7 and v16-v31 whole, v8-v15's upper halves). The
// output and exit status are the untraced program's, with no tracer
// and under function and function_graph, and every callback ran as
// often as the leaves were called: the runtime kept, around each, the
// values ipara.c's callers keep in those registers across the calls
// (gcc's -fipa-ra, checked in the disassembly). arm64 runs without a
// tracer with FTRACE_CTL=1: a preloaded runtime leaves an arm64 site
// `nop; nop` (one word short of a call) unless it may patch itself.
func TestPrologueHooks(t *testing.T) {
	t.Parallel()
	// The counts progs/iparahook.c prints for ipara.c's 300 rounds: 2700
	// calls of the leaves (4 of leaf, 2 of leaf0, 3 of fleaf a round).
	hooks := map[string]string{
		"ops":        "hooks: 2700 entries 0 returns 0 direct",
		"ops2":       "hooks: 5400 entries 0 returns 0 direct",
		"fgraph":     "hooks: 2700 entries 2700 returns 0 direct",
		"fprobe":     "hooks: 2700 entries 2700 returns 0 direct",
		"direct":     "hooks: 2700 entries 0 returns 2700 direct",
		"directonly": "hooks: 0 entries 0 returns 2700 direct",
	}
	for _, tg := range []target{x86GCC, a64GCC} {
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			prog := filepath.Join(dir, "ipara")
			argv := append(append([]string{}, tg.cc...), "-O2")
			argv = append(argv, strings.Fields(apiFlags(t, tg))...)
			run(t, dir, append(argv, progPath(t, "ipara.c"), progPath(t, "iparahook.c"), "-o", prog)...)
			checkKept(t, tg, dir, prog)
			inst := prog + ".i"
			run(t, dir, tool("ftpatch"), "instrument", "-o", inst, prog)
			args := []string{"300", "seen"}
			wantOut, _, wantCode, err := runStatus(dir, tg.on(prog, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			lib := filepath.Join(filepath.Dir(runtimeArchiveFor(t, tg.arch)), ftrt.SharedLibName)
			for _, hook := range []string{"ops", "ops2", "fgraph", "fprobe", "direct", "directonly"} {
				for i, tracer := range [][]string{{}, {"FTRACE=function"}, {"FTRACE=function_graph"}} {
					env := append([]string{"IPARA_HOOK=" + hook, "FTRACE_OUT=" + filepath.Join(dir, hook+strconv.Itoa(i))}, tracer...)
					if len(tracer) == 0 && tg.arch == "arm64" {
						env = append(env, "FTRACE_CTL=1")
					}
					out, errOut, code, err := runStatusEnv(dir, preloaded(tg, lib, env), tg.on(inst, args...)...)
					if err != nil {
						t.Fatal(err)
					}
					if out != wantOut || code != wantCode || !strings.Contains(errOut, hooks[hook]+"\n") {
						t.Errorf("%s: exit %d, output %q, stderr %q; want exit %d, output %q (untraced), and %q",
							strings.Join(env, " "), code, out, errOut, wantCode, wantOut, hooks[hook])
					}
				}
			}
		})
	}
}

// TestPrologueVectors: every vector register a caller holds across a
// call survives callbacks that change them all, at a site made from a
// prologue: progs/veckeep.c's vk_call loads each with a pattern of its
// own (x86-64: xmm0-15, or ymm0-15 with AVX, or zmm0-31 and k0-7 with
// AVX-512, as the CPU running the test has them, and mxcsr; arm64:
// q0-q31), calls vk_leaf, and compares, 100 times; vk_leaf hooked by one
// ops, two, and a graph user (whose return callback changes them too),
// with no tracer, function and function_graph. The output ("kept") and
// exit status are the untraced program's, and every callback ran. The
// x86-64 program runs natively (the vector state this machine has) and
// under qemu-x86_64 as a CPU with SSE alone (Nehalem) and with AVX but
// not AVX-512 (Haswell), so each of the runtime's ways is taken.
func TestPrologueVectors(t *testing.T) {
	t.Parallel()
	hooks := map[string]string{
		"ops":    "veckeep: 100 entries 0 returns",
		"ops2":   "veckeep: 200 entries 0 returns",
		"fgraph": "veckeep: 100 entries 100 returns",
	}
	for _, tg := range []target{x86GCC, a64GCC} {
		t.Run(tg.arch+"/"+tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			prog := filepath.Join(dir, "veckeep")
			argv := append(append([]string{}, tg.cc...), "-O2")
			argv = append(argv, strings.Fields(apiFlags(t, tg))...)
			run(t, dir, append(argv, progPath(t, "veckeep.c"), "-o", prog)...)
			inst := prog + ".i"
			run(t, dir, tool("ftpatch"), "instrument", "-o", inst, prog)
			wantOut, _, wantCode, err := runStatus(dir, tg.on(prog)...)
			if err != nil {
				t.Fatal(err)
			}
			if wantOut != "kept\n" || wantCode != 0 {
				t.Fatalf("untraced: exit %d, output %q; want 0, \"kept\"", wantCode, wantOut)
			}
			lib := filepath.Join(filepath.Dir(runtimeArchiveFor(t, tg.arch)), ftrt.SharedLibName)
			ways := []target{tg}
			if tg.arch == "x86_64" {
				need(t, "qemu-x86_64")
				for _, cpu := range []string{"Nehalem", "Haswell-noTSX"} {
					q := tg
					q.exec = []string{"qemu-x86_64", "-cpu", cpu}
					ways = append(ways, q)
				}
			}
			for _, way := range ways {
				for _, hook := range []string{"ops", "ops2", "fgraph"} {
					for i, tracer := range [][]string{{}, {"FTRACE=function"}, {"FTRACE=function_graph"}} {
						env := append([]string{"VK_HOOK=" + hook, "FTRACE_OUT=" + filepath.Join(dir, hook+strconv.Itoa(i))}, tracer...)
						if len(tracer) == 0 && tg.arch == "arm64" {
							env = append(env, "FTRACE_CTL=1")
						}
						out, errOut, code, err := runStatusEnv(dir, preloaded(way, lib, env), way.on(inst)...)
						if err != nil {
							t.Fatal(err)
						}
						if out != wantOut || code != wantCode || !strings.Contains(errOut, hooks[hook]+"\n") {
							t.Errorf("%s %s: exit %d, output %q, stderr %q; want exit %d, output %q, and %q",
								strings.Join(way.exec, " "), strings.Join(env, " "), code, out, errOut, wantCode, wantOut, hooks[hook])
						}
					}
				}
			}
		})
	}
}
