// Command runtime-bench measures the cost of tracing (`make bench`): a
// loop making 5,000,000 calls of an empty non-inlined leaf in another
// translation unit, built and run every way side by side in one run:
//
//	plain      gcc -O2, no instrumentation (the baseline)
//	nop        -pg -mfentry, recordmcount, the runtime linked, nothing set:
//	           every site a NOP
//	empty      the same binary, FTRACE=nop: leaf's site calls a stub that
//	           returns (the patched-call mechanism alone)
//	function   the same binary, FTRACE=function FTRACE_FILTER=leaf
//	graph      the same binary, FTRACE=function_graph FTRACE_FILTER=leaf
//	subtree    the same, with the subtree filters: every call inside
//	           main chosen by FTRACE_GRAPH_FUNCS (all recorded), inside
//	           main named by FTRACE_GRAPH_NOTRACE (none recorded), and
//	           outside every chosen call (none recorded)
//	floor      what funtrace does, the fastest user-space tracer known:
//	           -finstrument-functions hooks writing 16-byte records
//	           {rdtsc, function} to a per-thread TLS ring, two rdtsc per
//	           call, nothing written out: the physical floor here
//	floor-out  the floor keeping every record: each full ring written to
//	           the thread's file, as function_graph writes its buffers;
//	           the floor on function_graph's own terms
//	skeleton   function_graph's control flow at an entry site (jmp to a
//	           trampoline that calls the body) writing the floor's
//	           records, and nothing else (skeletonS): what the design
//	           costs before the checks and the writing out a tracer needs
//	hijack     the floor's records from a __fentry__ that hijacks the
//	           return instead, as the graph tracer must at -pg sites, and
//	           nothing else (boundS): what a mispredicted return costs
//	uftrace    gcc -O2 -pg, under `uftrace record`
//	xray-nop   clang -fxray-instrument, sleds not patched
//	xray-fdr   the same, XRay's flight-data-recorder mode, every call kept
//
// Each case runs N times, the cases taking turns; it reports the median
// wall time, ns per call over the baseline, the ratio to the baseline,
// bytes of trace per call and peak memory (max RSS).
//
// `-against BIN`, a directory holding another build's ftpatch (a
// checkout of the commit before a change, after `make build`), runs the
// function and function_graph cases with that build's runtime too,
// interleaved with this one's: what a change costs, measured in one run
// on one state of the machine.
//
// Then it times the runtime's load-time pass over a generated program of
// 100,001 functions (patchBench). `-only load` runs that part alone, in
// seconds rather than minutes, and leaves the program in the work
// directory (many) for perf and callgrind:
//
//	go run ./bench/runtime -only load -runs 11
//	perf stat -r 10 build/bench/runtime/many     (FTRACE=function for the other case)
//
// Last, what tracing adds to each process's start and end (startBench):
// a program that makes three calls, run many times untraced, with every
// site a NOP, under each tracer, and under `uftrace record`, interleaved;
// the added wall time per process is its median less the untraced one's.
// `-only start` runs that part alone.
//
// And live patching (liveBench): toggling one function through ftrace.h's
// API while eight threads call it, and a batch of 10,000 functions, with
// XRay's patching of one function beside it. `-only live` runs that part
// alone.
//
// And scheduler events (schedBench): what a traced call, a thread's
// start and end, and a context switch cost with them and without, and
// the target for programs of many short threads. `-only sched` runs that
// part alone.
//
// And ftrace.h's ops (opsBench): one ops on a function (its own
// trampoline), two (the list), one on another function, against the
// untraced build calling the callback itself. `-only ops` runs that part
// alone.
//
// And prologue sites (prologueBench): a traced call through a site made
// at load (record -P) or by ftpatch instrument against a compiler's
// site, a disabled one against the untouched program, and the load-time
// pass per function made, with their targets. `-only prologue` runs
// that part alone.
//
// And attaching (attachBench): how long ftpatch ctl's attach stops a
// process of 8 busy threads and 10,000 functions, linked with the
// runtime or given it by dlopen. `-only attach` runs that part alone.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"ftpatch/internal/machine"
	"ftpatch/internal/measure"
)

const calls = 5_000_000

const leafC = `/* The traced leaf: empty, kept out of line. */
__attribute__((noinline)) void leaf(void) { __asm__ volatile(""); }
`

// tscC measures the physical floor: what one rdtsc costs here.
const tscC = `/* 5,000,000 rdtsc, for the cost of one timestamp on this machine. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
int main(void)
{
	struct timespec a, b;
	uint64_t s = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 5000000; i++) {
		uint32_t lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		s += lo;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.3f %u\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 5e6, (unsigned)(s & 1));
	return 0;
}
`

// floorC is the floor: funtrace's scheme, compiler hooks always called.
// Built a second time with -DWRITE_OUT, it keeps every record instead of
// its last 65,536: each time the ring fills, the thread writes it to its
// own file in $FLOOR_OUT, as the issue asks of function_graph (per-thread
// buffers flushed to per-thread files when full). That is the floor on
// function_graph's own terms: what recording every call costs here with
// nothing else added.
const floorC = `/* Per-thread TLS ring of 16-byte records, raw rdtsc: funtrace's scheme.
 * -DWRITE_OUT: each full ring is written to the thread's file in $FLOOR_OUT. */
#define _GNU_SOURCE
#include <stdint.h>
#ifdef WRITE_OUT
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#endif
struct rec { uint64_t ts, fn; };
#define N (1 << 16)
static __thread struct rec ring[N] __attribute__((tls_model("initial-exec")));
static __thread unsigned pos __attribute__((tls_model("initial-exec")));
static inline uint64_t rdtsc(void) { uint32_t lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)); return (uint64_t)hi << 32 | lo; }
#ifdef WRITE_OUT
static __thread int fd __attribute__((tls_model("initial-exec")));
__attribute__((no_instrument_function, noinline)) static void out(unsigned n)
{
	if (fd <= 0) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%d.trace", getenv("FLOOR_OUT"), (int)gettid());
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	}
	if (fd < 0 || write(fd, ring, n * sizeof ring[0]) != (long)(n * sizeof ring[0]))
		abort();
}
__attribute__((no_instrument_function, destructor)) static void out_rest(void) { if (pos) out(pos); }
#define FULL(p) do { if (__builtin_expect((p) == 0, 0)) out(N); } while (0)
#else
#define FULL(p) (void)(p)
#endif
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *cs)
{ unsigned p = pos; ring[p].ts = rdtsc(); ring[p].fn = (uint64_t)fn; pos = p = (p + 1) & (N - 1); FULL(p); (void)cs; }
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *cs)
{ unsigned p = pos; ring[p].ts = rdtsc(); ring[p].fn = (uint64_t)fn | 1ull << 63; pos = p = (p + 1) & (N - 1); FULL(p); (void)cs; }
`

// ringS is what boundS and skeletonS share: the floor's ring of 16-byte
// records in memory, a shadow stack of return addresses, and the macro
// that writes one record.
const ringS = `	.bss
	.p2align 6
ring:	.zero 16 * 65536	/* {ts, ip} records, 16 bytes each */
pos:	.quad 0			/* next record's index */
shadow:	.zero 8 * 4096		/* the callers' return addresses */
depth:	.quad 0			/* entries on shadow */

/* One record: rax, rdx = its two words; clobbers r10 and r11. */
	.macro RECORD
	mov pos(%rip), %r10
	lea ring(%rip), %r11
	shl $4, %r10
	mov %rax, (%r11, %r10)
	mov %rdx, 8(%r11, %r10)
	shr $4, %r10
	inc %r10
	and $65535, %r10
	mov %r10, pos(%rip)
	.endm
`

// boundS is a graph tracer that hijacks returns, as function_graph must at
// -pg sites (after the prologue, where no trampoline can call the body),
// reduced to nothing else: a __fentry__ that writes the floor's two
// 16-byte records {rdtsc, ip} to a ring in memory and points the caller's
// return slot at its exit hook. No ftrace_regs, no recursion guard, no
// frame check, no TLS, nothing written out. The traced function's `ret`
// no longer goes where the CPU's return stack predicts, so every call
// pays a mispredicted return, which the floor's compiler-inserted exit
// hook and function_graph's entry-site trampolines (skeletonS) do not.
// Single-threaded, at most 4096 nested calls: for this loop only.
const boundS = `/* A return-hijacking graph tracer with nothing else: see boundS in bench/runtime/main.go. */
` + ringS + `
	.text
	.globl __fentry__
	.type __fentry__, @function
/* Entered from the first instruction of a traced function:
 *   0(%rsp)  the function's body (where this returns)
 *   8(%rsp)  the caller's return address, hijacked below */
__fentry__:
	push %rax		/* rax, rdx: argument registers (varargs count, third argument) */
	push %rdx
	rdtsc
	shl $32, %rdx
	or %rdx, %rax
	mov 16(%rsp), %rdx	/* the site's return: the function */
	RECORD
	mov depth(%rip), %r10	/* push the caller's return on the shadow stack */
	lea shadow(%rip), %r11
	mov 24(%rsp), %rax
	mov %rax, (%r11, %r10, 8)
	inc %r10
	mov %r10, depth(%rip)
	lea hijacked(%rip), %rax
	mov %rax, 24(%rsp)	/* the function now returns to hijacked */
	pop %rdx
	pop %rax
	ret
	.size __fentry__, .-__fentry__

/* The traced function's return: rax, rdx hold its return value. */
	.type hijacked, @function
hijacked:
	push %rax
	push %rdx
	rdtsc
	shl $32, %rdx
	or %rdx, %rax
	mov $1, %edx		/* an exit record */
	RECORD
	mov depth(%rip), %r10	/* pop the real return address */
	dec %r10
	mov %r10, depth(%rip)
	lea shadow(%rip), %r11
	mov (%r11, %r10, 8), %r11
	pop %rdx
	pop %rax
	jmp *%r11
	.size hijacked, .-hijacked
	.section .note.GNU-stack, "", @progbits
`

// skeletonS is function_graph's own control flow at an entry site with
// nothing else: the leaf (hand-written here) starts with the `jmp` its
// site becomes, to a trampoline laid out as site.c builds them (call the
// entry hook, drop the caller's return address, call the body, jump to
// the exit hook, which returns where the caller's call predicts), and the
// hooks write the floor's two 16-byte records to a ring in memory. No
// TLS, no checks, no recursion guard or frame check, nothing written
// out: what the trampoline design costs before anything a real tracer
// needs. Single-threaded, at most 4096 nested calls: for this loop only.
const skeletonS = `/* function_graph's skeleton: see skeletonS in bench/runtime/main.go. */
` + ringS + `
	.text
	.globl leaf
	.type leaf, @function
	.p2align 4
leaf:	jmp tramp		/* the site, as function_graph writes it */
body:	ret			/* the empty body */
	.size leaf, .-leaf

	.p2align 4
tramp:	lea leaf(%rip), %r11	/* the site, for the record */
	call enter
	add $8, %rsp		/* drop the caller's return address (on shadow)... */
	call body		/* ...and call the body in its place */
	jmp leave

/* 24(%rsp) the caller's return, 16(%rsp) into the trampoline, then rax, rdx */
enter:	push %rax
	push %rdx
	rdtsc
	shl $32, %rdx
	or %rdx, %rax
	mov %r11, %rdx
	RECORD
	mov depth(%rip), %r10
	lea shadow(%rip), %r11
	mov 24(%rsp), %rax
	mov %rax, (%r11, %r10, 8)
	inc %r10
	mov %r10, depth(%rip)
	pop %rdx
	pop %rax
	ret

/* Back from the body: the caller's return slot is 16(%rsp) after the sub. */
leave:	sub $24, %rsp
	mov %rax, (%rsp)
	mov %rdx, 8(%rsp)
	rdtsc
	shl $32, %rdx
	or %rdx, %rax
	mov $1, %edx		/* an exit record */
	RECORD
	mov depth(%rip), %r10
	dec %r10
	mov %r10, depth(%rip)
	lea shadow(%rip), %r11
	mov (%r11, %r10, 8), %r11
	mov %r11, 16(%rsp)	/* the real return address, where ret finds it */
	mov 8(%rsp), %rdx
	mov (%rsp), %rax
	add $16, %rsp
	ret
	.section .note.GNU-stack, "", @progbits
`

const mainC = `/* The loop: calls leaf() N times (default 5,000,000). */
#include <stdlib.h>
void leaf(void);
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	for (long i = 0; i < n; i++)
		leaf();
	return 0;
}
`

type benchCase struct {
	name    string
	argv    []string
	env     []string
	outDir  string  // where the case writes its trace, emptied before each run
	mkdir   bool    // outDir is made before each run: the case writes into it
	target  float64 // ns per call; 0: no target
	walls   []time.Duration
	rss     int64 // KB
	bytes   int64
	skipped string

	bytesTarget float64 // the most trace a call may take, in bytes (streams and metadata); 0: no target
}

func main() {
	work := flag.String("dir", "build/bench/runtime", "work directory")
	bin := flag.String("bin", "bin", "directory holding recordmcount and ftpatch")
	runs := flag.Int("runs", 7, "runs per case")
	only := flag.String("only", "", "run one part: calls (the per-call cases), load (the load-time pass), start (a process's start and end), live (patching while threads run), ops (ftrace.h's ops), libcall (library calls), sched (scheduler events), prologue (sites made from prologues) or attach (how long attaching stops a process); default all")
	against := flag.String("against", "", "a directory holding another build's ftpatch: the function and function_graph cases run with its runtime too, interleaved with this one's, to compare the two in one run")
	flag.Parse()
	if *only != "" && *only != "calls" && *only != "load" && *only != "start" && *only != "live" && *only != "ops" && *only != "libcall" && *only != "sched" && *only != "prologue" && *only != "attach" {
		fmt.Fprintf(os.Stderr, "runtime-bench: -only %q: want calls, load, start, live, ops, libcall, sched, prologue or attach\n", *only)
		os.Exit(2)
	}
	if err := run(*work, *bin, *against, *runs, *only); err != nil {
		fmt.Fprintln(os.Stderr, "runtime-bench:", err)
		os.Exit(1)
	}
}

// run builds and runs the cases in work; only names one part ("calls",
// "load" or "start"), or is empty for all. against, if not empty, holds
// another build's ftpatch, whose runtime the tracers' cases run with too.
func run(work, bin, against string, runs int, only string) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "leaf.c"), []byte(leafC), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "main.c"), []byte(mainC), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "tsc.c"), []byte(tscC), 0o644); err != nil {
		return err
	}
	for name, text := range map[string]string{"floor.c": floorC, "bound.S": boundS, "skeleton.S": skeletonS} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	libs, err := exec.Command(filepath.Join(bin, "ftpatch"), "flags", "--libs").Output()
	if err != nil {
		return fmt.Errorf("ftpatch flags --libs: %w", err)
	}
	fmt.Printf("machine: %s; load average at start %s\n", machine.Name(), machine.LoadAvg())
	switch only {
	case "load":
		return patchBench(work, bin, libs, runs)
	case "start":
		return startBench(work, bin, libs, runs)
	case "live":
		return liveBench(work, bin, libs, runs)
	case "ops":
		return opsBench(work, bin, libs, runs)
	case "libcall":
		return libcallBench(work, bin, libs, runs)
	case "sched":
		return schedBench(work, bin, libs, runs)
	case "prologue":
		return prologueBench(work, bin, libs, runs)
	case "attach":
		return attachBench(work, bin, libs, runs)
	}
	steps := [][]string{
		{"gcc", "-O2", "leaf.c", "main.c", "-o", "plain"},
		{"gcc", "-O2", "tsc.c", "-o", "tsc"},
		{"gcc", "-O2", "-finstrument-functions", "-c", "leaf.c", "-o", "leaf-cyg.o"},
		{"gcc", "-O2", "main.c", "leaf-cyg.o", "floor.c", "-o", "floor"},
		{"gcc", "-O2", "-DWRITE_OUT", "main.c", "leaf-cyg.o", "floor.c", "-o", "floor-out"},
		{"gcc", "-O2", "-pg", "-mfentry", "-fno-pie", "-c", "leaf.c", "-o", "leaf-bound.o"},
		{"gcc", "-O2", "-no-pie", "main.c", "leaf-bound.o", "bound.S", "-o", "bound"},
		{"gcc", "-O2", "-no-pie", "main.c", "skeleton.S", "-o", "skeleton"},
		{"gcc", "-O2", "-pg", "-mfentry", "-c", "leaf.c", "main.c"},
		{filepath.Join(bin, "recordmcount"), "leaf.o", "main.o"},
		append([]string{"gcc", "leaf.o", "main.o", "-o", "ours"}, strings.Fields(string(libs))...),
	}
	if err := measure.Steps(work, steps...); err != nil {
		return err
	}
	abs := func(p string) string { return filepath.Join(work, p) }
	cases := []*benchCase{
		{name: "plain -O2 (baseline)", argv: []string{abs("plain")}},
		{name: "ftpatch: sites NOP'd", argv: []string{abs("ours")}, target: 0.3},
		{name: "ftpatch: empty tracer (FTRACE=nop)", argv: []string{abs("ours")}, env: []string{"FTRACE=nop", "FTRACE_FILTER=leaf"}, target: 2},
		{name: "ftpatch: FTRACE=function", argv: []string{abs("ours")}, env: []string{"FTRACE=function", "FTRACE_FILTER=leaf", "FTRACE_OUT=" + abs("t-function")}, outDir: abs("t-function"), target: 11, bytesTarget: 16},
		{name: "ftpatch: FTRACE=function_graph", argv: []string{abs("ours")}, env: []string{"FTRACE=function_graph", "FTRACE_FILTER=leaf", "FTRACE_OUT=" + abs("t-graph")}, outDir: abs("t-graph"), target: 20, bytesTarget: 16},
		// The flight recorder: the last 64 MiB of records kept in
		// memory, written at the end (the same loop's last calls).
		{name: ringName, argv: []string{abs("ours")}, env: []string{"FTRACE=function_graph", "FTRACE_FILTER=leaf", "FTRACE_BUFFER=ring:64m", "FTRACE_OUT=" + abs("t-ring")}, outDir: abs("t-ring")},
		// A ring the floor's size (it keeps 65,536 records, 1 MiB; a
		// ring keeps at least one 1.5 MiB segment): what the graph
		// tracer costs with nothing written out and no first pass over
		// fresh memory.
		{name: ringSmallName, argv: []string{abs("ours")}, env: []string{"FTRACE=function_graph", "FTRACE_FILTER=leaf", "FTRACE_BUFFER=ring:1m", "FTRACE_OUT=" + abs("t-ring1")}, outDir: abs("t-ring1")},
		// Full buffers written by the runtime's writer thread, on the
		// second core: the traced thread makes no write.
		{name: writerName, argv: []string{abs("ours")}, env: []string{"FTRACE=function_graph", "FTRACE_FILTER=leaf", "FTRACE_BUFFER=writer", "FTRACE_OUT=" + abs("t-writer")}, outDir: abs("t-writer")},
		// The subtree filters: every call inside main, chosen (each
		// recorded) or notrace (none), and every call outside a chosen
		// function, main being left untraced (none recorded).
		{name: subtreeInside, argv: []string{abs("ours")}, env: []string{"FTRACE=function_graph", "FTRACE_FILTER=leaf,main", "FTRACE_GRAPH_FUNCS=main", "FTRACE_OUT=" + abs("t-inside")}, outDir: abs("t-inside")},
		{name: subtreeNotrace, argv: []string{abs("ours")}, env: []string{"FTRACE=function_graph", "FTRACE_FILTER=leaf,main", "FTRACE_GRAPH_NOTRACE=main", "FTRACE_OUT=" + abs("t-notrace")}, outDir: abs("t-notrace")},
		{name: subtreeOutside, argv: []string{abs("ours")}, env: []string{"FTRACE=function_graph", "FTRACE_FILTER=leaf", "FTRACE_GRAPH_FUNCS=main", "FTRACE_OUT=" + abs("t-outside")}, outDir: abs("t-outside")},
		{name: floorName, argv: []string{abs("floor")}},
		{name: floorOutName, argv: []string{abs("floor-out")}, env: []string{"FLOOR_OUT=" + abs("t-floor")}, outDir: abs("t-floor"), mkdir: true},
		{name: skeletonName, argv: []string{abs("skeleton")}},
		{name: boundName, argv: []string{abs("bound")}},
	}
	if against != "" {
		other, err := exec.Command(filepath.Join(against, "ftpatch"), "flags", "--libs").Output()
		if err != nil {
			return fmt.Errorf("%s flags --libs: %w", filepath.Join(against, "ftpatch"), err)
		}
		if err := measure.Sh(work, append([]string{"gcc", "leaf.o", "main.o", "-o", "against"}, strings.Fields(string(other))...)...); err != nil {
			return err
		}
		for _, tracer := range []string{"function", "function_graph"} {
			out := abs("t-against-" + tracer)
			cases = append(cases, &benchCase{name: "against: FTRACE=" + tracer, argv: []string{abs("against")},
				env: []string{"FTRACE=" + tracer, "FTRACE_FILTER=leaf", "FTRACE_OUT=" + out}, outDir: out})
		}
	}
	u, err := uftraceCase(work, "upg", "t-uftrace", "leaf.c", "main.c")
	if err != nil {
		return err
	}
	cases = append(cases, u)
	if err := measure.Sh(work, "clang", "-O2", "-fxray-instrument", "-fxray-instruction-threshold=1", "leaf.c", "main.c", "-o", "xray"); err == nil {
		cases = append(cases,
			&benchCase{name: "XRay sleds, not patched", argv: []string{abs("xray")}, env: []string{"XRAY_OPTIONS=patch_premain=false"}},
			&benchCase{name: "XRay FDR mode", argv: []string{abs("xray")}, outDir: abs("t-xray"), mkdir: true,
				env: []string{"XRAY_OPTIONS=patch_premain=true xray_mode=xray-fdr verbosity=0 xray_logfile_base=" + abs("t-xray") + "/xray-log.", "XRAY_FDR_OPTIONS=func_duration_threshold_us=0"}})
	} else {
		cases = append(cases, &benchCase{name: "XRay", skipped: "clang -fxray-instrument failed (libclang-rt-14-dev missing?): " + err.Error()})
	}

	if err := interleave(cases, runs); err != nil {
		return err
	}
	base := measure.Median(cases[0].walls)
	var floors []float64
	for i := 0; i < runs; i++ {
		out, err := exec.Command(abs("tsc")).Output()
		if err != nil {
			return fmt.Errorf("tsc: %w", err)
		}
		var f float64
		fmt.Sscan(string(out), &f)
		floors = append(floors, f)
	}
	slices.Sort(floors)
	floor := floors[len(floors)/2]
	fmt.Printf("%d calls of an empty leaf in another translation unit; median of %d runs each, cases interleaved\n\n", calls, runs)
	fmt.Printf("%-34s %10s %10s %8s %10s %10s\n", "case", "median", "ns/call", "ratio", "bytes/call", "max RSS")
	byName := map[string]float64{}
	for _, c := range cases {
		if c.skipped != "" {
			fmt.Printf("%-34s %s\n", c.name, c.skipped)
			continue
		}
		m := measure.Median(c.walls)
		per := float64(m-base) / calls
		byName[c.name] = per
		fmt.Printf("%-34s %8.1fms %10.2f %8.2f %10.1f %8d KB\n", c.name, float64(m.Microseconds())/1000, per, m.Seconds()/base.Seconds(), float64(c.bytes)/calls, c.rss)
	}
	fmt.Printf("\n(XRay FDR keeps its log in memory until the program flushes it, which this loop does not: its bytes/call reads 0.)\n")
	fmt.Printf("floor: one rdtsc costs %.2f ns here (median of %d runs); function records one timestamp per call, function_graph two\n", floor, runs)
	if f, ok := byName["ftpatch: FTRACE=function"]; ok {
		fmt.Printf("       function: %.2f ns/call beyond its timestamp; function_graph: %.2f ns/call beyond its two\n", f-floor, byName["ftpatch: FTRACE=function_graph"]-2*floor)
	}
	if in, ok := byName[subtreeInside]; ok {
		g := byName["ftpatch: FTRACE=function_graph"]
		fmt.Printf("       subtree filters: a call inside a chosen one %.2f ns/call (%+.2f against function_graph's), inside a notrace one %.2f, outside every chosen one %.2f\n",
			in, in-g, byName[subtreeNotrace], byName[subtreeOutside])
	}
	if f, ok := byName[floorName]; ok {
		g := byName["ftpatch: FTRACE=function_graph"]
		verdict := "met"
		if g > 1.1*f {
			verdict = "MISSED"
		}
		fmt.Printf("       function_graph records every call to disk at %.2f ns/call, %.2fx the floor's %.2f ns/call (which keeps only its last 65,536 records in memory); target 1.10x: %s\n", g, g/f, f, verdict)
		if o, ok := byName[floorOutName]; ok {
			verdict := "met"
			if g > 1.1*o {
				verdict = "MISSED"
			}
			fmt.Printf("       the floor's scheme made to keep every record, each full ring written to a file as function_graph does: %.2f ns/call, %.2fx the floor;\n", o, o/f)
			fmt.Printf("       function_graph is %.2fx that, the floor on its own terms; target 1.10x: %s\n", g/o, verdict)
		}
		if r, ok := byName[ringName]; ok {
			verdict := "met"
			if r > 1.1*f {
				verdict = "MISSED"
			}
			fmt.Printf("       function_graph into the flight recorder (FTRACE_BUFFER=ring:64m: the last 64 MiB a thread in memory): %.2f ns/call, %.2fx the floor; target 1.10x: %s\n", r, r/f, verdict)
		}
		if r, ok := byName[ringSmallName]; ok {
			verdict := "met"
			if r > 1.1*f {
				verdict = "MISSED"
			}
			fmt.Printf("       the same into a ring the floor's size (ring:1m: one 1.5 MiB segment): %.2f ns/call, %.2fx the floor; target 1.10x: %s\n", r, r/f, verdict)
		}
		if w, ok := byName[writerName]; ok {
			verdict := "met"
			if w > 1.15*f {
				verdict = "MISSED"
			}
			fmt.Printf("       function_graph writing every record through the writer thread (FTRACE_BUFFER=writer): %.2f ns/call, %.2fx the floor; target 1.15x: %s\n", w, w/f, verdict)
		}
		if k, ok := byName[skeletonName]; ok {
			fmt.Printf("       function_graph's skeleton (its trampoline and the floor's records, no checks, nothing written out): %.2f ns/call, %.2fx the floor;\n", k, k/f)
			fmt.Printf("       function_graph does %.2f ns/call more than its skeleton: the checks that keep it safe, and writing every record out\n", g-k)
		}
		if b, ok := byName[boundName]; ok {
			fmt.Printf("       a graph tracer that hijacks returns, as at -pg sites, with nothing else: %.2f ns/call, %.2fx the floor (a mispredicted return per call)\n", b, b/f)
		}
	}
	fmt.Println()
	for _, c := range cases {
		if c.target == 0 || c.skipped != "" {
			continue
		}
		verdict := "met"
		if byName[c.name] > c.target {
			verdict = "MISSED"
		}
		fmt.Printf("target: %s at most %.1f ns/call: %.2f ns/call: %s\n", c.name, c.target, byName[c.name], verdict)
	}
	for _, c := range cases {
		if c.bytesTarget == 0 || c.skipped != "" {
			continue
		}
		// To the hundredth of a byte: what a trace has once (its
		// metadata, a stream's header and first TIME: under 1 KiB) is
		// not a call's.
		per := math.Round(float64(c.bytes)/calls*100) / 100
		verdict := "met"
		if per > c.bytesTarget {
			verdict = "MISSED"
		}
		fmt.Printf("target: %s at most %.0f bytes of trace a call: %.2f bytes/call (%d bytes in all): %s\n", c.name, c.bytesTarget, per, c.bytes, verdict)
	}
	if only == "" {
		if err := patchBench(work, bin, libs, runs); err != nil {
			return err
		}
		if err := startBench(work, bin, libs, runs); err != nil {
			return err
		}
		if err := liveBench(work, bin, libs, runs); err != nil {
			return err
		}
		if err := opsBench(work, bin, libs, runs); err != nil {
			return err
		}
		if err := libcallBench(work, bin, libs, runs); err != nil {
			return err
		}
		if err := schedBench(work, bin, libs, runs); err != nil {
			return err
		}
		if err := prologueBench(work, bin, libs, runs); err != nil {
			return err
		}
		if err := attachBench(work, bin, libs, runs); err != nil {
			return err
		}
	}
	for _, other := range []string{"uftrace record (-pg)", "XRay FDR mode"} {
		if o, ok := byName[other]; ok {
			for _, ours := range []string{"ftpatch: FTRACE=function", "ftpatch: FTRACE=function_graph"} {
				fmt.Printf("speed-up of %s over %s: %.1fx\n", ours, other, o/byName[ours])
			}
		}
	}
	return nil
}

// uftraceCase is `uftrace record` of srcs built with gcc -O2 -pg into
// prog, tracing into outDir (all in work); a skipped case when uftrace is
// not installed.
func uftraceCase(work, prog, outDir string, srcs ...string) (*benchCase, error) {
	const name = "uftrace record (-pg)"
	if _, err := exec.LookPath("uftrace"); err != nil {
		return &benchCase{name: name, skipped: "uftrace not installed (scripts/deps.sh bench)"}, nil
	}
	if err := measure.Sh(work, append(append([]string{"gcc", "-O2", "-pg"}, srcs...), "-o", prog)...); err != nil {
		return nil, err
	}
	out := filepath.Join(work, outDir)
	return &benchCase{name: name, argv: []string{"uftrace", "record", "-d", out, filepath.Join(work, prog)}, outDir: out}, nil
}

// interleave runs every case n times, recorded, after one run each that
// is not: the cases take turns, so a change in the machine's load falls
// on all alike.
func interleave(cases []*benchCase, n int) error {
	for i := 0; i < n+1; i++ {
		for _, c := range cases {
			if c.skipped != "" {
				continue
			}
			if err := c.run(i > 0); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	return nil
}

const (
	subtreeInside  = "graph, inside FTRACE_GRAPH_FUNCS"
	subtreeNotrace = "graph, inside FTRACE_GRAPH_NOTRACE"
	subtreeOutside = "graph, outside FTRACE_GRAPH_FUNCS"
)

const (
	floorName     = "floor: funtrace's scheme (TLS ring)"
	floorOutName  = "floor, every record written out"
	skeletonName  = "graph's skeleton (trampoline only)"
	ringName      = "ftpatch: function_graph, ring:64m"
	ringSmallName = "ftpatch: function_graph, ring:1m"
	writerName    = "ftpatch: function_graph, writer"
	boundName     = "hijack's skeleton (-pg sites)"
)

func (c *benchCase) run(record bool) error {
	if c.outDir != "" {
		os.RemoveAll(c.outDir)
		os.RemoveAll(c.outDir + ".old")
		if c.mkdir {
			os.MkdirAll(c.outDir, 0o755)
		}
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), c.env...)
	wall, err := measure.Run(cmd)
	if err != nil {
		return err
	}
	if !record {
		return nil
	}
	c.walls = append(c.walls, wall)
	c.rss = max(c.rss, measure.MaxRSS(cmd.ProcessState))
	if c.outDir != "" {
		c.bytes = measure.DirSize(c.outDir)
	}
	return nil
}

// patchBench times the runtime's load-time pass over a program of 100,000
// functions (generated as assembly: `call __fentry__` first in each, the
// -mfentry -fno-pie shape), as the runtime itself reports it: every site
// checked and turned into a NOP, and every site enabled for tracing.
func patchBench(work, bin string, libs []byte, runs int) error {
	const n = 100_000
	var b strings.Builder
	b.WriteString("\t.text\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\t.globl f%d\n\t.type f%d, @function\n\t.p2align 4\nf%d:\n\tcall __fentry__\n\tret\n\t.size f%d, .-f%d\n", i, i, i, i, i)
	}
	b.WriteString("\t.globl main\n\t.type main, @function\nmain:\n\tcall __fentry__\n\txorl %eax, %eax\n\tret\n\t.size main, .-main\n")
	b.WriteString("\t.section .note.GNU-stack,\"\",@progbits\n")
	if err := os.WriteFile(filepath.Join(work, "many.s"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	for _, s := range [][]string{
		{"as", "-o", "many.o", "many.s"},
		{filepath.Join(bin, "recordmcount"), "many.o"},
		append([]string{"gcc", "-no-pie", "many.o", "-o", "many"}, strings.Fields(string(libs))...),
	} {
		if err := measure.Sh(work, s...); err != nil {
			return err
		}
	}
	re := regexp.MustCompile(`ftrt: (\d+) sites: .* in (\d+) ns`)
	fmt.Println()
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"every site checked and NOP'd", nil},
		{"every site enabled (FTRACE=function)", []string{"FTRACE=function", "FTRACE_OUT=" + filepath.Join(work, "t-many")}},
	} {
		var per []float64
		for i := 0; i < runs; i++ {
			os.RemoveAll(filepath.Join(work, "t-many"))
			os.RemoveAll(filepath.Join(work, "t-many.old"))
			cmd := exec.Command(filepath.Join(work, "many"))
			cmd.Env = append(append(os.Environ(), "FTRACE_DEBUG=1"), c.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("many: %w\n%s", err, out)
			}
			m := re.FindSubmatch(out)
			if m == nil {
				return fmt.Errorf("many: no report in %q", out)
			}
			sites, _ := strconv.ParseFloat(string(m[1]), 64)
			ns, _ := strconv.ParseFloat(string(m[2]), 64)
			per = append(per, ns/sites)
		}
		slices.Sort(per)
		verdict := "met"
		if per[len(per)/2] > 20 {
			verdict = "MISSED"
		}
		fmt.Printf("load-time pass, %d sites, %s: %.1f ns/site (median of %d; target 20): %s\n", n+1, c.name, per[len(per)/2], runs, verdict)
	}
	return nil
}

// fewC records a few calls: the program of the start-and-end case.
const fewC = `/* Three calls of a traced leaf, then exit: what a short process traces. */
#include <stdio.h>
__attribute__((noinline)) int leaf(int x) { __asm__ volatile(""); return x + 1; }
int main(void)
{
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += leaf(i);
	printf("%d\n", s);
	return 0;
}
`

// startBench measures what tracing adds to a process that records a few
// calls: making the trace directory and its files at start, writing the
// stream and the final metadata at the end (target: at most 1 ms).
// Every case runs 20 times per -runs, the cases taking turns; a run's
// wall time is from fork to wait, the process's whole life.
func startBench(work, bin string, libs []byte, runs int) error {
	if err := os.WriteFile(filepath.Join(work, "few.c"), []byte(fewC), 0o644); err != nil {
		return err
	}
	steps := [][]string{
		{"gcc", "-O2", "few.c", "-o", "few-plain"},
		{"gcc", "-O2", "-pg", "-mfentry", "-c", "few.c", "-o", "few.o"},
		{filepath.Join(bin, "recordmcount"), "few.o"},
		append([]string{"gcc", "few.o", "-o", "few"}, strings.Fields(string(libs))...),
	}
	if err := measure.Steps(work, steps...); err != nil {
		return err
	}
	abs := func(p string) string { return filepath.Join(work, p) }
	cases := []*benchCase{
		{name: "untraced -O2 (baseline)", argv: []string{abs("few-plain")}},
		{name: "ftpatch: sites NOP'd", argv: []string{abs("few")}},
		{name: "ftpatch: FTRACE=function", argv: []string{abs("few")}, env: []string{"FTRACE=function", "FTRACE_OUT=" + abs("t-few")}, outDir: abs("t-few"), target: 1},
		{name: "ftpatch: FTRACE=function_graph", argv: []string{abs("few")}, env: []string{"FTRACE=function_graph", "FTRACE_OUT=" + abs("t-few")}, outDir: abs("t-few"), target: 1},
	}
	u, err := uftraceCase(work, "few-upg", "t-ufew", "few.c")
	if err != nil {
		return err
	}
	cases = append(cases, u)
	n := 20 * runs
	if err := interleave(cases, n); err != nil {
		return err
	}
	base := measure.Median(cases[0].walls)
	fmt.Printf("\na process that records 3 calls, start to end; median of %d runs each, cases interleaved\n\n", n)
	fmt.Printf("%-34s %10s %10s %10s\n", "case", "median", "added", "target")
	for _, c := range cases {
		if c.skipped != "" {
			fmt.Printf("%-34s %s\n", c.name, c.skipped)
			continue
		}
		m := measure.Median(c.walls)
		added := float64(m-base) / 1e6
		verdict := ""
		if c.target > 0 {
			verdict = fmt.Sprintf("<= %.0f ms: met", c.target)
			if added > c.target {
				verdict = fmt.Sprintf("<= %.0f ms: MISSED", c.target)
			}
		}
		fmt.Printf("%-34s %8.3fms %8.3fms %s\n", c.name, float64(m.Microseconds())/1000, added, verdict)
	}
	fmt.Printf("\nload average at end: %s\n", machine.LoadAvg())
	return nil
}
