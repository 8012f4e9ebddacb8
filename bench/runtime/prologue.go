package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ftpatch/arch"
	"ftpatch/funclist"
	"ftpatch/internal/measure"
	"ftpatch/prologue"
	ftrt "ftpatch/runtime"
	"ftpatch/runtime/abi"
)

// prologueLeafC is the leaf pmain.c calls 5,000,000 times, in its own
// translation unit so that no caller keeps a value across it, and long
// enough for a prologue site (8 bytes: mov, xor, ret).
const prologueLeafC = `__attribute__((noinline)) int pleaf(int x) { __asm__ volatile(""); return x ^ 0x5a5a5a; }
`

// prologueLeafJumpS is pleaf as gcc -O2 makes it, entered through one
// direct jump to its body 4 KiB away: what the disabled target allows.
const prologueLeafJumpS = `	.text
	.globl	pleaf
	.type	pleaf, @function
	.p2align 4
pleaf:
	jmp	.Lbody
	.size	pleaf, .-pleaf
	.p2align 12
	.skip	4096
.Lbody:
	movl	%edi, %eax
	xorl	$5921370, %eax
	ret
	.section	.note.GNU-stack,"",@progbits
`

const prologueMainC = `#include <stdio.h>
int pleaf(int);
int main(void)
{
	int s = 0;
	for (int i = 0; i < 5000000; i++)
		s = pleaf(s);
	printf("%d\n", s);
	return 0;
}
`

// prologueFuncs is how many functions the load-time pass case's program
// has, each called once.
const prologueFuncs = 10000

// prologueManyC writes that program: prologueFuncs small functions of
// various shapes, called once each from main.
func prologueManyC() string {
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <string.h>\nstatic volatile int sink;\n")
	for i := range prologueFuncs {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "__attribute__((noinline)) int f%d(int x) { return x * %d + 1; }\n", i, i)
		case 1:
			fmt.Fprintf(&b, "__attribute__((noinline)) int f%d(int x) { char buf[32]; memset(buf, x, sizeof buf); sink = buf[x & 31]; return sink + %d; }\n", i, i)
		case 2:
			fmt.Fprintf(&b, "__attribute__((noinline)) int f%d(int x) { int s = 0; for (int k = 0; k < x; k++) s += k ^ %d; return s; }\n", i, i)
		default:
			fmt.Fprintf(&b, "__attribute__((noinline)) int f%d(int x) { if (x > %d) return f%d(x - 1); return x; }\n", i, i%100, i-1)
		}
	}
	b.WriteString("int main(void)\n{\n\tlong s = 0;\n")
	for i := range prologueFuncs {
		fmt.Fprintf(&b, "\ts += f%d(%d);\n", i, i%7)
	}
	b.WriteString("\tprintf(\"%ld\\n\", s);\n\treturn 0;\n}\n")
	return b.String()
}

// prologueBench measures prologue sites (record -P at load, ftpatch
// instrument) against compiler sites, in one run, cases interleaved:
// a traced call through each (both with the runtime preloaded, and the
// compiler's with it linked too), the targets: a prologue site costs at
// most a compiler site plus 2 ns a traced call; a disabled one at most
// one direct jump a call (the instrumented copy untraced against the
// original); the load-time pass at most 200 ns a function made, its
// plans made beforehand (ftpatch record makes them before the program
// starts), and the planning itself, per function.
func prologueBench(work, bin string, libs []byte, runs int) error {
	files := map[string]string{"pleaf.c": prologueLeafC, "pmain.c": prologueMainC, "pmany.c": prologueManyC()}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	lib := strings.Fields(string(libs))
	steps := [][]string{
		{"gcc", "-O2", "pleaf.c", "pmain.c", "-o", "pplain"},
		{"gcc", "-O2", "-pg", "-mfentry", "-c", "pleaf.c", "-o", "pleaf-fentry.o"},
		{"gcc", "-O2", "-c", "pmain.c", "-o", "pmain.o"},
		{filepath.Join(bin, "recordmcount"), "pleaf-fentry.o"},
		{"gcc", "pleaf-fentry.o", "pmain.o", "-o", "pcompiler"},
		append([]string{"gcc", "pleaf-fentry.o", "pmain.o", "-o", "pcompiler-linked"}, lib...),
		{filepath.Join(bin, "ftpatch"), "instrument", "-o", "pplain.i", "pplain"},
		{"gcc", "-O2", "pmany.c", "-o", "pmany"},
		{"gcc", "-O2", "-pg", "-mfentry", "-c", "pmany.c", "-o", "pmany-fentry.o"},
		{filepath.Join(bin, "recordmcount"), "pmany-fentry.o"},
		{"gcc", "pmany-fentry.o", "-o", "pmany-compiler"},
	}
	if err := measure.Steps(work, steps...); err != nil {
		return err
	}
	// The yardstick of the disabled target: the same leaf entered
	// through one direct jump to its body, a page away, as a
	// trampoline is.
	if err := os.WriteFile(filepath.Join(work, "pleaf-jump.s"), []byte(prologueLeafJumpS), 0o644); err != nil {
		return err
	}
	if err := measure.Steps(work, []string{"gcc", "-O2", "pleaf-jump.s", "pmain.c", "-o", "pplain-jump"}); err != nil {
		return err
	}
	abs := func(p string) string { return filepath.Join(work, p) }
	rt, err := ftrt.Find(context.Background(), ftrt.Options{Arch: arch.X86_64, Notes: os.Stderr}, "")
	if err != nil {
		return err
	}
	if rt.Scratch != "" {
		defer os.RemoveAll(rt.Scratch)
	}
	all := &funclist.List{}
	all.Add("*", "the bench")
	srv, err := prologue.ServePlans(all, os.Stderr)
	if err != nil {
		return err
	}
	defer srv.Close()
	planStart := time.Now()
	if err := srv.Prepare(abs("pmany")); err != nil {
		return err
	}
	planned := time.Since(planStart)
	if err := srv.Prepare(abs("pplain")); err != nil {
		return err
	}
	preload := "LD_PRELOAD=" + rt.Shared
	plans := abi.EnvPrologueSocket + "=" + srv.Path()
	traced := func(name, prog, tracer string, env ...string) *benchCase {
		out := abs("t-" + strings.ReplaceAll(name, " ", "-"))
		return &benchCase{name: name, argv: []string{abs(prog)}, outDir: out,
			env: append([]string{"FTRACE=" + tracer, "FTRACE_SCHED=0", "FTRACE_OUT=" + out}, env...)}
	}
	plain := &benchCase{name: "untraced", argv: []string{abs("pplain")}}
	inst := &benchCase{name: "instrumented, untraced", argv: []string{abs("pplain.i")}}
	jump := &benchCase{name: "untraced, one direct jump more", argv: []string{abs("pplain-jump")}}
	cGraph := traced("compiler site, graph", "pcompiler", "function_graph", preload)
	pGraph := traced("prologue at load, graph", "pplain", "function_graph", preload, plans)
	iGraph := traced("instrumented, graph", "pplain.i", "function_graph", preload)
	lGraph := traced("compiler site linked, graph", "pcompiler-linked", "function_graph")
	cFunc := traced("compiler site, function", "pcompiler", "function", preload)
	pFunc := traced("prologue at load, function", "pplain", "function", preload, plans)
	manyPlain := &benchCase{name: "10,000 functions, untraced", argv: []string{abs("pmany")}}
	manyNop := traced("10,000 functions, -P, nop", "pmany", "nop", preload, plans)
	manyPreload := traced("10,000 functions, preloaded, nop", "pmany", "nop", preload)
	manyCompiler := traced("10,000 compiler sites, nop", "pmany-compiler", "nop", preload)
	cases := []*benchCase{plain, inst, jump, cGraph, pGraph, iGraph, lGraph, cFunc, pFunc, manyPlain, manyPreload, manyCompiler, manyNop}
	if err := interleave(cases, runs); err != nil {
		return err
	}
	med := func(c *benchCase) float64 { return float64(measure.Median(c.walls).Nanoseconds()) }
	const calls = 5e6
	fmt.Printf("\nprologue sites against compiler sites (5,000,000 calls of a leaf; the runtime preloaded unless said); median of %d runs each, cases interleaved\n\n", runs)
	fmt.Printf("%-40s %10s %12s\n", "case", "median", "ns/call")
	for _, c := range cases[:9] {
		fmt.Printf("%-40s %8.1fms %10.2f\n", c.name, med(c)/1e6, (med(c)-med(plain))/calls)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	dg := (med(pGraph) - med(cGraph)) / calls
	di := (med(iGraph) - med(cGraph)) / calls
	df := (med(pFunc) - med(cFunc)) / calls
	fmt.Printf("\ntarget: a traced call through a prologue site at most a compiler site's + 2 ns: function_graph %+.2f ns at load, %+.2f ns instrumented; function %+.2f ns: %s\n",
		dg, di, df, verdict(dg <= 2 && di <= 2 && df <= 2))
	dd := (med(inst) - med(plain)) / calls
	dj := (med(jump) - med(plain)) / calls
	fmt.Printf("target: a disabled prologue site at most one direct jump a call: %+.2f ns a call (the jump there and back, and the site's NOP), one direct jump %+.2f ns: %s\n", dd, dj, verdict(dd <= dj+0.1))
	pass := (med(manyNop) - med(manyPreload)) / prologueFuncs
	made := (med(manyNop) - med(manyCompiler)) / prologueFuncs
	fmt.Printf("target: the load-time pass at most 200 ns a function made: %+.0f ns a function made beyond what enabling a compiler's site costs (%+.0f ns with the enabling, against the same program with no site; %d functions; their plans made before the program starts, in %.1f us a function, in ftpatch): %s\n",
		made, pass, prologueFuncs, float64(planned.Nanoseconds())/prologueFuncs/1e3, verdict(made <= 200))
	return nil
}
