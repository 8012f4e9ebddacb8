package tests

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"ftpatch/internal/golden"
	"ftpatch/internal/sitetest"
	ftrt "ftpatch/runtime"
)

// TestOps: ftrace.h's ops, modelled on the kernel's ftrace self-tests
// (progs/ops.c): exact callback counts for three ops with filters of
// their own and one global ops, after each filter change and unregister
// (then all zero); a callback that recurses, guarded by the runtime and
// by itself; the arguments a callback reads (integers, a pointer, a
// string, doubles, the stack's) and the floating-point registers kept
// across it; a live patch (the function sent to a fixed version) and a
// function made to return at once; eight threads calling a function
// while its ops is registered and unregistered 200 times, no callback
// beginning or running after unregister returned. The output is
// testdata/ops.golden in every mode: no FTRACE (the sites enabled by the
// first register), and under each tracer, where the ops and the tracer
// share the sites (the module's list); at an -pg site after the
// prologue the redirects are refused and direct trampolines never
// called, as they must be (testdata/ops-pg.golden). Direct calls: a
// direct trampoline alone (called by the site), modified, with a
// callback ops and with each tracer on the same function (the list
// calls them, then branches to it), a second one refused, one out of
// reach (the ops trampoline branches to it), unregistered. On x86-64
// natively, and on arm64 under qemu: a patchable area with the
// pre-function literal, one with BTI and pointer authentication, -pg.
// Under each tracer the trace has every call of t_one, whose site went
// from the tracer to the list and back, and of t_dir, with its direct
// trampolines.
func TestOps(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile(filepath.Join("testdata", "ops.golden"))
	if err != nil {
		t.Fatal(err)
	}
	goldenPg, err := os.ReadFile(filepath.Join("testdata", "ops-pg.golden"))
	if err != nil {
		t.Fatal(err)
	}
	builds := []struct {
		ccBuild
		pie   bool
		entry bool // sites at the function's entry: redirects work
	}{
		{ccBuild{x86GCC, "-O2 -pg -mfentry"}, true, true},
		{ccBuild{x86GCC, "-O2 -pg -mfentry -fcf-protection"}, false, true},
		{ccBuild{x86GCC, "-O2 -pg"}, true, false},
		{ccBuild{x86Clang, "-O2 -pg -mfentry"}, true, true},
		{ccBuild{x86Clang, "-O2 -fpatchable-function-entry=5"}, false, true},
		{ccBuild{x86Clang, "-O2 -pg"}, true, false},
		{ccBuild{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"}, true, true},
		{ccBuild{a64Clang, "-O2 -fpatchable-function-entry=2 -mbranch-protection=standard"}, true, true},
		{ccBuild{a64GCC, "-O2 -pg"}, true, false},
	}
	for _, c := range builds {
		t.Run(c.tg.arch+"/"+c.tg.name+"/"+slug(c.flags)+"/"+picFlag(c.pie), func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			want := string(golden)
			if !c.entry {
				want = string(goldenPg)
			}
			prog := traced(t, c.tg, dir, c.flags+apiFlags(t, c.tg), c.pie, "ops.c")
			argv := c.tg.on(prog)
			if c.entry {
				argv = append(argv, "entry")
			}
			out, stderr, code, err := runStatusEnv(dir, nil, argv...)
			if err != nil {
				t.Fatal(err)
			}
			if out != want || code != 0 {
				t.Fatalf("untraced start: exit %d, output\n%s\nwant exit 0, output\n%s\nstderr:\n%s", code, out, want, stderr)
			}
			for _, tracer := range []string{"function", "function_graph", "nop"} {
				_, tdir := runTracedArgv(t, dir, argv, tracer, tracer, nil, want, 0)
				if tracer == "nop" {
					continue
				}
				tr, syms := readWhole(t, tdir, tracer)
				got, stats := tracedCalls(t, tr, syms, tracer)
				if got["t_one"] != 12 || got["t_dir"] != 13 || got["t_hot"] == 0 {
					t.Errorf("%s: t_one traced %d times, t_dir %d, t_hot %d; want 12 and 13 (every call), and some",
						tracer, got["t_one"], got["t_dir"], got["t_hot"])
				}
				for _, s := range stats {
					if s.Unwound != 0 || s.Open != 0 || s.Untimed != 0 {
						t.Errorf("%s: %s: %d calls unwound, %d open, %d without their return", tracer, s.Func, s.Unwound, s.Open, s.Untimed)
					}
				}
			}
		})
	}
}

// TestOpsBytes: what registering one ops on one function writes, decoded
// with x/arch (progs/ops.c's dump): the site calls a trampoline made for
// the ops, `movabs $record, %r11; jmp ftrace_ops_caller` (in reach: the
// program's own runtime), whose slot holds ftrace_ops_caller too and
// whose padding is int3; the record is the
// runtime's first (ops.c's recs); unregistering leaves the site the
// compare a disabled call becomes.
func TestOpsBytes(t *testing.T) {
	t.Parallel()
	tg, dir := gccTest(t)
	prog := traced(t, tg, dir, "-O2 -pg -mfentry"+apiFlags(t, tg), true, "ops.c")
	out, stderr, code, err := runStatusEnv(dir, nil, prog, "dump")
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
	d := readOpsDump(t, prog, out)
	addr, site, bias, tramp := d.addr, d.site, d.bias, d.tramp
	on, tb, off, db := d.on, d.tb, d.off, d.direct

	if call, err := x86asm.Decode(db, 64); err != nil || call.Op != x86asm.CALL || call.Len != 5 ||
		site+5+uint64(int64(call.Args[0].(x86asm.Rel))) != addr["tramp_a"]+bias {
		t.Errorf("site with a direct trampoline: %v (%x), want a 5-byte call of tramp_a at %#x", call, db[:5], addr["tramp_a"]+bias)
	}
	call, err := x86asm.Decode(on, 64)
	rel, ok := call.Args[0].(x86asm.Rel)
	if err != nil || call.Op != x86asm.CALL || call.Len != 5 || !ok || site+5+uint64(int64(rel)) != tramp {
		t.Errorf("site: %v (%x), want a 5-byte call of the trampoline at %#x", call, on[:5], tramp)
	}
	mov, err := x86asm.Decode(tb, 64)
	imm, ok := mov.Args[1].(x86asm.Imm)
	if err != nil || mov.Op != x86asm.MOV || mov.Args[0] != x86asm.R11 || mov.Len != 10 || !ok || uint64(imm) != addr["recs"]+bias {
		t.Errorf("trampoline +0: %v, want movabs $%#x (recs), %%r11", mov, addr["recs"]+bias)
	}
	// The caller in rel32's reach of the trampoline (the runtime in the
	// program, the trampoline near it): a direct jump.
	jmp, err := x86asm.Decode(tb[10:], 64)
	jrel, ok := jmp.Args[0].(x86asm.Rel)
	if err != nil || jmp.Op != x86asm.JMP || jmp.Len != 5 || !ok || tramp+15+uint64(int64(jrel)) != addr["ftrace_ops_caller"]+bias {
		t.Errorf("trampoline +10: %v, want jmp ftrace_ops_caller", jmp)
	}
	if slot := binary.LittleEndian.Uint64(tb[16:]); slot != addr["ftrace_ops_caller"]+bias {
		t.Errorf("trampoline slot %#x, want ftrace_ops_caller at %#x", slot, addr["ftrace_ops_caller"]+bias)
	}
	for _, k := range []int{15, 24, 25, 26, 27, 28, 29, 30, 31} {
		if in, err := x86asm.Decode(tb[k:], 64); err != nil || in.Op != x86asm.INT || in.Len != 1 {
			t.Errorf("trampoline +%d: %v, want int3", k, in)
		}
	}
	cmp, err := x86asm.Decode(off, 64)
	cimm, ok := cmp.Args[1].(x86asm.Imm)
	if err != nil || cmp.Op != x86asm.CMP || cmp.Args[0] != x86asm.EAX || cmp.Len != 5 || !ok ||
		site+5+uint64(int64(int32(cimm))) != tramp {
		t.Errorf("site after unregister: %v, want cmp $rel32, %%eax keeping the call's rel32", cmp)
	}
}

// TestOpsBytesARM64: the same on arm64 (a patchable area with BTI, run
// under qemu), decoded with x/arch: the area's bl goes to a trampoline
// `ldr x11, .+16; ldr x16, .+20; br x16; brk #0`, whose words after
// are the runtime's first record and ftrace_ops_regs_caller; after
// unregister the bl is a NOP again and the area keeps `mov x9, x30`; a
// direct trampoline in reach is the area's bl's own target.
func TestOpsBytesARM64(t *testing.T) {
	t.Parallel()
	tg := a64Clang
	need(t, tg.tools...)
	dir := t.TempDir()
	prog := traced(t, tg, dir, "-O2 -fpatchable-function-entry=2 -mbranch-protection=standard"+apiFlags(t, tg), true, "ops.c")
	out, stderr, code, err := runStatusEnv(dir, nil, tg.on(prog, "dump")...)
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
	d := readOpsDump(t, prog, out)
	addr, site, bias, tramp := d.addr, d.site, d.bias, d.tramp
	on, tb, off, db := d.on, d.tb, d.off, d.direct
	decode := func(b []byte, at uint64) string {
		in, err := arm64asm.Decode(b)
		if err != nil {
			return "?"
		}
		return arm64asm.GNUSyntax(in) + fmt.Sprintf(" @%x", at)
	}
	// bti c; mov x9, x30; bl tramp (or the NOP after unregister).
	k := 0
	for k < 8 && binary.LittleEndian.Uint32(on[k:]) != 0xaa1e03e9 {
		k += 4
	}
	if k == 8 {
		t.Fatalf("site %x: no mov x9, x30", on)
	}
	bl, err := arm64asm.Decode(on[k+4:])
	rel, ok := bl.Args[0].(arm64asm.PCRel)
	if err != nil || bl.Op != arm64asm.BL || !ok || site+uint64(k+4)+uint64(int64(rel)) != tramp {
		t.Errorf("site: %s, want bl to the trampoline at %#x", decode(on[k+4:], site+uint64(k+4)), tramp)
	}
	if d, err := arm64asm.Decode(db[k+4:]); err != nil || d.Op != arm64asm.BL ||
		site+uint64(k+4)+uint64(int64(d.Args[0].(arm64asm.PCRel))) != addr["tramp_a"]+bias {
		t.Errorf("site with a direct trampoline: %s, want bl tramp_a at %#x", decode(db[k+4:], site+uint64(k+4)), addr["tramp_a"]+bias)
	}
	if nop, err := arm64asm.Decode(off[k+4:]); err != nil || nop.Op != arm64asm.NOP || binary.LittleEndian.Uint32(off[k:]) != 0xaa1e03e9 {
		t.Errorf("site after unregister: %x, want mov x9, x30; nop", off)
	}
	want := []string{"ldr x11, ", "ldr x16, ", "br x16", "brk "}
	for i, w := range want {
		in, err := arm64asm.Decode(tb[4*i:])
		if got := arm64asm.GNUSyntax(in); err != nil || !strings.HasPrefix(got, w) {
			t.Errorf("trampoline +%d: %q, want %q", 4*i, got, w)
		}
		if i < 2 {
			lit, ok := in.Args[1].(arm64asm.PCRel)
			if !ok || int64(lit) != int64(16+4*i) { /* +16 from +0, +20 from +4: the words at 16 and 24 */
				t.Errorf("trampoline +%d: %v, want a literal at +%d", 4*i, in, 16+8*i)
			}
		}
	}
	if rec := binary.LittleEndian.Uint64(tb[16:]); rec != addr["recs"]+bias {
		t.Errorf("trampoline record %#x, want recs at %#x", rec, addr["recs"]+bias)
	}
	if c := binary.LittleEndian.Uint64(tb[24:]); c != addr["ftrace_ops_regs_caller"]+bias {
		t.Errorf("trampoline caller %#x, want ftrace_ops_regs_caller at %#x", c, addr["ftrace_ops_regs_caller"]+bias)
	}
}

// TestOpsBytesPrologue: what registering one ops writes at a site made
// from a prologue (progs/veckeep.c built without tracing flags,
// instrumented, the runtime preloaded; its dump), decoded with x/arch.
// x86-64: the site (the first bytes of ftpatch instrument's trampoline)
// calls a trampoline of the prologue form, `push %r11; movabs $record,
// %r11; jmp ftrace_ops_prologue_caller` (jmp rel32 in reach, else jmp
// *6(%rip) through the slot at +24, which holds the caller either way),
// int3 padding; arm64: the site's `mov x17, x30; bl` goes to `str x11,
// [sp, #-16]!; ldr x11, .+12; ldr x16, .+16; br x16`, the record and
// the caller the words at +16 and +24. The record is the runtime's
// first (ops.c's recs), the caller ftrace_ops_prologue_caller, both in
// the preloaded libftrt.so.
func TestOpsBytesPrologue(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{x86GCC, a64GCC} {
		t.Run(tg.arch, func(t *testing.T) {
			t.Parallel()
			need(t, tg.tools...)
			dir := t.TempDir()
			prog := filepath.Join(dir, "veckeep")
			argv := append(append([]string{}, tg.cc...), "-O2")
			argv = append(argv, strings.Fields(apiFlags(t, tg))...)
			run(t, dir, append(argv, progPath(t, "veckeep.c"), "-o", prog)...)
			run(t, dir, tool("ftpatch"), "instrument", "-o", prog+".i", prog)
			lib := filepath.Join(filepath.Dir(runtimeArchiveFor(t, tg.arch)), ftrt.SharedLibName)
			var env []string
			if tg.arch == "arm64" {
				env = []string{"FTRACE_CTL=1"} // a preloaded runtime patches arm64 code only so
			}
			out, stderr, code, err := runStatusEnv(dir, preloaded(tg, lib, env), tg.on(prog+".i", "dump")...)
			if err != nil || code != 0 {
				t.Fatalf("exit %d, %v\n%s%s", code, err, out, stderr)
			}
			lines := map[string][]string{}
			for l := range strings.Lines(out) {
				if f := strings.Fields(l); len(f) >= 2 {
					lines[f[0]] = f[1:]
				}
			}
			word := func(name string, n int) (uint64, []byte) {
				f := lines[name]
				if len(f) != n {
					t.Fatalf("dump: no %q line of %d fields:\n%s", name, n, out)
				}
				a, err := strconv.ParseUint(f[0], 16, 64)
				var b []byte
				if err == nil && n > 1 {
					b, err = hex.DecodeString(f[1])
				}
				if err != nil {
					t.Fatalf("dump line %q: %v", f, err)
				}
				return a, b
			}
			base, _ := word("lib", 1)
			site, sb := word("site", 2)
			tramp, tb := word("tramp", 2)
			syms := sitetest.Symbols(t, sitetest.Open(t, lib))
			rec, caller := base+syms["recs"], base+syms["ftrace_ops_prologue_caller"]
			if syms["recs"] == 0 || syms["ftrace_ops_prologue_caller"] == 0 {
				t.Fatalf("%s: no recs or ftrace_ops_prologue_caller in its symbols", lib)
			}
			if tg.arch == "x86_64" {
				opsBytesPrologueX86(t, site, sb, tramp, tb, rec, caller)
			} else {
				opsBytesPrologueARM64(t, site, sb, tramp, tb, rec, caller)
			}
		})
	}
}

func opsBytesPrologueX86(t *testing.T, site uint64, sb []byte, tramp uint64, tb []byte, rec, caller uint64) {
	call, err := x86asm.Decode(sb, 64)
	if rel, ok := call.Args[0].(x86asm.Rel); err != nil || call.Op != x86asm.CALL || call.Len != 5 || !ok || site+5+uint64(int64(rel)) != tramp {
		t.Errorf("site: %v (%x), want a 5-byte call of the trampoline at %#x", call, sb[:5], tramp)
	}
	push, err := x86asm.Decode(tb, 64)
	if err != nil || push.Op != x86asm.PUSH || push.Args[0] != x86asm.R11 || push.Len != 2 {
		t.Errorf("trampoline +0: %v (%x), want push %%r11", push, tb[:2])
	}
	mov, err := x86asm.Decode(tb[2:], 64)
	imm, ok := mov.Args[1].(x86asm.Imm)
	if err != nil || mov.Op != x86asm.MOV || mov.Args[0] != x86asm.R11 || mov.Len != 10 || !ok || uint64(imm) != rec {
		t.Errorf("trampoline +2: %v, want movabs $%#x (recs), %%r11", mov, rec)
	}
	jmp, err := x86asm.Decode(tb[12:], 64)
	end := 12 + jmp.Len
	switch a := jmp.Args[0].(type) {
	case x86asm.Rel:
		if err != nil || jmp.Op != x86asm.JMP || jmp.Len != 5 || tramp+17+uint64(int64(a)) != caller {
			t.Errorf("trampoline +12: %v, want jmp ftrace_ops_prologue_caller at %#x", jmp, caller)
		}
	case x86asm.Mem:
		if err != nil || jmp.Op != x86asm.JMP || jmp.Len != 6 || a.Base != x86asm.RIP || a.Index != 0 || 18+a.Disp != 24 {
			t.Errorf("trampoline +12: %v, want jmp *6(%%rip), through the slot at +24", jmp)
		}
	default:
		t.Errorf("trampoline +12: %v (%x), want a jmp", jmp, tb[12:18])
	}
	for k := end; k < 24; k++ {
		if in, err := x86asm.Decode(tb[k:], 64); err != nil || in.Op != x86asm.INT || in.Len != 1 {
			t.Errorf("trampoline +%d: %v, want int3", k, in)
		}
	}
	if slot := binary.LittleEndian.Uint64(tb[24:]); slot != caller {
		t.Errorf("trampoline slot %#x, want ftrace_ops_prologue_caller at %#x", slot, caller)
	}
}

func opsBytesPrologueARM64(t *testing.T, site uint64, sb []byte, tramp uint64, tb []byte, rec, caller uint64) {
	if mov, err := arm64asm.Decode(sb); err != nil || arm64asm.GNUSyntax(mov) != "mov x17, x30" {
		t.Errorf("site +0: %v (%x), want mov x17, x30", mov, sb[:4])
	}
	bl, err := arm64asm.Decode(sb[4:])
	if rel, ok := bl.Args[0].(arm64asm.PCRel); err != nil || bl.Op != arm64asm.BL || !ok || site+4+uint64(int64(rel)) != tramp {
		t.Errorf("site +4: %v, want bl to the trampoline at %#x", bl, tramp)
	}
	want := []string{"str x11, [sp,#-16]!", "ldr x11, ", "ldr x16, ", "br x16"}
	for i, w := range want {
		in, err := arm64asm.Decode(tb[4*i:])
		if got := arm64asm.GNUSyntax(in); err != nil || !strings.HasPrefix(got, w) {
			t.Errorf("trampoline +%d: %q, want %q", 4*i, got, w)
		}
		if i == 1 || i == 2 {
			if lit, ok := in.Args[1].(arm64asm.PCRel); !ok || int64(lit) != int64(16+8*(i-1)-4*i) {
				t.Errorf("trampoline +%d: %v, want a literal at +%d", 4*i, in, 16+8*(i-1))
			}
		}
	}
	if r := binary.LittleEndian.Uint64(tb[16:]); r != rec {
		t.Errorf("trampoline record %#x, want recs at %#x", r, rec)
	}
	if c := binary.LittleEndian.Uint64(tb[24:]); c != caller {
		t.Errorf("trampoline caller %#x, want ftrace_ops_prologue_caller at %#x", c, caller)
	}
}

// TestOpsLoadedLater: ops registered before a shared object is loaded
// are called at its functions once it is (its sites made to call its own
// trampolines and list), again after it is unloaded and loaded anew, and
// not after they are unregistered (progs/opsdl.c); with no FTRACE and
// under function_graph, on x86-64 and arm64.
func TestOpsLoadedLater(t *testing.T) {
	t.Parallel()
	for _, c := range []ccBuild{
		{x86GCC, "-O2 -pg -mfentry"},
		{x86Clang, "-O2 -pg"},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"},
	} {
		t.Run(c.tg.arch+"/"+c.tg.name, func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			plug := livePlugin(t, c.tg, dir, c.flags)
			prog := traced(t, c.tg, dir, c.flags+apiFlags(t, c.tg), true, "opsdl.c")
			want := "loaded: all=2 a=1 sum=8\nreloaded: all=2 a=1 sum=8\nunregistered: all=0 a=0 sum=8\n"
			for _, tracer := range []string{"", "function_graph"} {
				env := []string{"FTRACE_OUT=" + filepath.Join(dir, "t-"+tracer)}
				if tracer != "" {
					env = append(env, "FTRACE="+tracer)
				}
				got, stderr, code, err := runStatusEnv(dir, env, c.tg.on(prog, plug)...)
				if err != nil || code != 0 || got != want {
					t.Errorf("FTRACE=%s: exit %d, %v, output\n%s\nwant\n%s\nstderr:\n%s", tracer, code, err, got, want, stderr)
				}
			}
		})
	}
}

// TestFgraph: graph users (progs/fgraph.c): two with filters of their
// own each see the entries and returns of their functions alone, with
// the return values; data of 1, 2, 4, 8 and 256 bytes goes whole from
// each entry to its return through recursion, with one user and with
// four; floating-point and long double results survive a retfunc that
// computes; calls left by a longjmp run no retfunc; a user unregistered
// and freed while its call is under way runs no callback again, and the
// call returns. The output is testdata/fgraph.golden with no FTRACE and
// under each tracer; under function_graph, which shares the shadow
// stack with the users, every call in the trace is whole. On x86-64,
// and on arm64 under qemu at patchable areas and -pg sites, with and
// without pointer authentication (the frame record's return address
// hooked signed, as function_graph hooks it).
func TestFgraph(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile(filepath.Join("testdata", "fgraph.golden"))
	if err != nil {
		t.Fatal(err)
	}
	builds := []struct {
		ccBuild
		pie bool
	}{
		{ccBuild{x86GCC, "-O2 -pg -mfentry"}, true},
		{ccBuild{x86GCC, "-O2 -pg"}, false},
		{ccBuild{x86Clang, "-O2 -pg -mfentry -fcf-protection"}, true},
		{ccBuild{x86Clang, "-O2 -fpatchable-function-entry=5"}, false},
		{ccBuild{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"}, true},
		{ccBuild{a64Clang, "-O2 -fpatchable-function-entry=2 -mbranch-protection=standard"}, true},
		{ccBuild{a64GCC, "-O2 -pg"}, true},
		{ccBuild{a64GCC, "-O2 -pg -mbranch-protection=standard"}, true},
	}
	for _, c := range builds {
		t.Run(c.tg.arch+"/"+c.tg.name+"/"+slug(c.flags)+"/"+picFlag(c.pie), func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			prog := traced(t, c.tg, dir, c.flags+apiFlags(t, c.tg), c.pie, "fgraph.c")
			out, stderr, code, err := runStatusEnv(dir, nil, c.tg.on(prog)...)
			if err != nil {
				t.Fatal(err)
			}
			if out != string(golden) || code != 0 {
				t.Fatalf("untraced start: exit %d, output\n%s\nwant exit 0, output\n%s\nstderr:\n%s", code, out, golden, stderr)
			}
			for _, tracer := range []string{"function", "function_graph"} {
				_, tdir := runTracedArgv(t, dir, c.tg.on(prog), tracer, tracer, nil, string(golden), 0)
				tr, syms := readTrace(t, tdir)
				wantUnwound := uint64(0)
				if tracer == "function_graph" {
					wantUnwound = 6 // g_jump's calls, left by the longjmp
				}
				if tr.Meta.Tracer != tracer || tr.Meta.Unended || tr.Meta.Unwound != wantUnwound || tr.Meta.Overflow != 0 || tr.Meta.LostBytes != 0 {
					t.Errorf("%s: tracer %q, unended %v, %d calls unwound (want %d), %d not graphed, %d bytes lost",
						tracer, tr.Meta.Tracer, tr.Meta.Unended, tr.Meta.Unwound, wantUnwound, tr.Meta.Overflow, tr.Meta.LostBytes)
				}
				got, stats := tracedCalls(t, tr, syms, tracer)
				if got["g_both"] != 2 || got["g_rec"] != 2*21 || got["g_jump"] != 6 {
					t.Errorf("%s: g_both traced %d times, g_rec %d, g_jump %d; want 2, 42 and 6", tracer, got["g_both"], got["g_rec"], got["g_jump"])
				}
				for _, s := range stats {
					if s.Func == "g_jump" {
						continue // left by the longjmp
					}
					if s.Unwound != 0 || s.Open != 0 || s.Untimed != 0 {
						t.Errorf("%s: %s: %d calls unwound, %d open, %d without their return", tracer, s.Func, s.Unwound, s.Open, s.Untimed)
					}
				}
			}
		})
	}
}

// TestFgraphExceptions: a C++ exception thrown through calls a graph
// user hooked (progs/fgraphx.cc), with no tracer recording them, is
// caught as untraced: the unwinder's hooks mind the users' calls as the
// tracer's; the calls left run no retfunc, those after do. With no
// FTRACE and under each tracer, g++ and clang++ on x86-64, g++ on arm64.
func TestFgraphExceptions(t *testing.T) {
	t.Parallel()
	want := "caught 42: 0 returns of the calls left, then middle(1) = 2 and 2 returns\n"
	forCompilers(t, []target{x86GXX, x86ClangXX, a64GXX}, func(t *testing.T, tg target) {
		dir := t.TempDir()
		objs := buildSrc(t, tg, dir, preferred[tg.arch]+apiFlags(t, tg), true, "fgraphx.cc")
		prog := linkRecordedOn(t, tg, dir, objs, "-pie")
		for _, tracer := range []string{"", "function", "function_graph"} {
			env := []string{"FTRACE_OUT=" + filepath.Join(dir, "t-"+tracer)}
			if tracer != "" {
				env = append(env, "FTRACE="+tracer)
			}
			got, stderr, code, err := runStatusEnv(dir, env, tg.on(prog)...)
			if err != nil || code != 0 || got != want {
				t.Errorf("FTRACE=%s: exit %d, %v, output\n%s\nwant\n%s\nstderr:\n%s", tracer, code, err, got, want, stderr)
			}
		}
	})
}

// argsEnv asks progs/args.c's every argument and return value, each
// where the architecture passes it: stacked's past the registers
// (x86-64's 6, arm64's 8) on the stack, its struct there (x86-64) or
// where the pointer there points (arm64), its long double on the stack
// (x86-64) or in a vector register (arm64); at_top's past its stack's
// last mapped page.
func argsEnv(arch string) []string {
	const args = "parse@arg1,arg2/s;check@arg1/s;scale@fparg1,fparg2,arg1;sum_pair@arg1,arg2;name_of@arg1;first@arg1/s;where@arg1/p;outer@arg1;pair_of@arg1;at_top@stack+16,stack+504"
	const ret = "parse;scale/f;sum_pair;name_of/s;first/c;where/p;outer;check;stacked/f;pair_of/{d,d}"
	if arch == "arm64" {
		return []string{
			"FTRACE_ARGS=" + args + ";stacked@arg1,arg2,arg3,arg4,arg5,arg6,arg7,arg8,arg9,*arg10/{d,d,d},fparg1/f128,arg11/i32,fparg2/f32;halve@fparg1/f128",
			"FTRACE_RETVAL=" + ret + ";halve/f128",
		}
	}
	return []string{
		"FTRACE_ARGS=" + args + ";stacked@arg1,arg2,arg3,arg4,arg5,arg6,arg7,arg8,arg9,stack+24/{d,d,d},stack+48/f80,stack+64/i32,fparg1/f32;halve@stack+0/f80",
		"FTRACE_RETVAL=" + ret + ";halve/f80",
	}
}

// TestArgs: arguments and return values in the trace (FTRACE_ARGS,
// FTRACE_RETVAL; progs/args.c): integers, a pointer, strings (one cut
// at 96 bytes, one at a bad address shown as such, one that ends just
// before an unreadable page), doubles, a char, a struct by value in two
// registers, arguments past the registers on the stack (argN, stack+OFF)
// with a struct there or by reference and a long double, long double and
// struct return values, and a return value of each kind, as `ftpatch
// replay` shows them under function_graph (testdata/args-graph.golden:
// parse(3, "abc") = 6) and the arguments under function
// (testdata/args-function.golden), times, thread ids and callers masked;
// stack items past a context's last mapped page show ?, and the program
// goes on. The program's output is the untraced one. On x86-64 (entry
// and -pg sites, whose stack arguments are found from the frame) and
// arm64 under qemu.
func TestArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []ccBuild{
		{x86GCC, "-O2 -pg -mfentry"},
		{x86GCC, "-O2 -pg"},
		{x86Clang, "-O2 -pg -mfentry -fcf-protection"},
		{a64GCC, "-O2 -fpatchable-function-entry=4,2 -falign-functions=8"},
		{a64Clang, "-O2 -fpatchable-function-entry=2 -mbranch-protection=standard"},
	} {
		t.Run(c.tg.arch+"/"+c.tg.name+"/"+slug(c.flags), func(t *testing.T) {
			t.Parallel()
			need(t, c.tg.tools...)
			dir := t.TempDir()
			wantOut, wantCode := untraced(t, c.tg, dir, "args.c")
			prog := traced(t, c.tg, dir, c.flags, true, "args.c")
			for _, tracer := range []string{"function_graph", "function"} {
				_, tdir := runTracedArgv(t, dir, c.tg.on(prog), tracer, tracer, argsEnv(c.tg.arch), wantOut, wantCode)
				out, stderr := run(t, dir, tool("ftpatch"), "replay", tdir)
				if stderr != "" {
					t.Errorf("%s: replay: %s", tracer, stderr)
				}
				name := "args-graph"
				if tracer == "function" {
					name = "args-function"
					out = regexp.MustCompile(`(?m)^ *[0-9]+\.[0-9]{3} +[0-9]+  `).ReplaceAllString(out, "  T.TTT  TID  ")
					out = regexp.MustCompile(` <- .*`).ReplaceAllString(out, " <- CALLER")
				}
				golden.Check(t, filepath.Join("testdata", name+".golden"), masked([]byte(out)))
			}
		})
	}
}

// TestArgsMcountStack: at arm64's -pg sites, after a prologue, the
// stack arguments are found from the frame the prologue built
// (progs/args.c's stacked: the ninth integer argument, a struct by
// reference after it, the eleventh), and a context's first function's
// past its stack's last page show ?.
func TestArgsMcountStack(t *testing.T) {
	t.Parallel()
	tg := a64GCC
	need(t, tg.tools...)
	dir := t.TempDir()
	wantOut, wantCode := untraced(t, tg, dir, "args.c")
	prog := traced(t, tg, dir, "-O2 -pg", true, "args.c")
	// arg1 is gone at a -pg site (gcc's mov x0, x30 for _mcount): ?.
	env := []string{"FTRACE_ARGS=stacked@arg1,arg2,arg9,*arg10/{d,d,d},arg11/i32;at_top@stack+16,stack+504"}
	_, tdir := runTracedArgv(t, dir, tg.on(prog), "function_graph", "graph", env, wantOut, wantCode)
	out, _ := run(t, dir, tool("ftpatch"), "replay", tdir)
	for _, want := range []string{"stacked(?, 2, 9, {10, 20, 30}, -11);", "at_top(?, ?);"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay lacks %q:\n%s", want, out)
		}
	}
}

// An opsDump is what progs/ops.c's dump printed: t_one's site (its
// address, bias from the file's, and bytes) with one ops registered, the
// trampoline it calls (address and bytes), and its bytes after the ops
// is unregistered and with a direct trampoline registered; and the
// program's symbols.
type opsDump struct {
	addr                map[string]uint64
	site, bias, tramp   uint64
	on, tb, off, direct []byte
}

func readOpsDump(t *testing.T, prog, out string) opsDump {
	t.Helper()
	var lines [][]string
	for l := range strings.Lines(out) {
		lines = append(lines, strings.Fields(l))
	}
	if len(lines) != 4 || lines[0][0] != "site" || lines[1][0] != "tramp" || lines[2][0] != "site" || lines[3][0] != "direct" {
		t.Fatalf("dump:\n%s", out)
	}
	word := func(f []string) (uint64, []byte) {
		a, err1 := strconv.ParseUint(f[1], 16, 64)
		b, err2 := hex.DecodeString(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("dump line %q", f)
		}
		return a, b
	}
	d := opsDump{addr: sitetest.Symbols(t, sitetest.Open(t, prog))}
	d.site, d.on = word(lines[0])
	d.bias = d.site - d.addr["t_one"]
	d.tramp, d.tb = word(lines[1])
	_, d.off = word(lines[2])
	_, d.direct = word(lines[3])
	return d
}
