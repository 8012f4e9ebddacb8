package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"ftpatch/internal/measure"
)

// opsC times OPS_CALLS calls of leaf (in another translation unit, with
// a site) in the way its argument says, after as many unmeasured, and
// prints "ns_per_call X":
//
//	none      no ops: leaf's site a NOP
//	one       one ops on leaf, its callback (cb.c, built without sites)
//	          empty: leaf's site calls the ops's own trampoline
//	two       two such ops on leaf: the module's list
//	other     one ops on another function: leaf's site a NOP still
//	direct    a direct trampoline on leaf (register_ftrace_direct),
//	          which returns at once: leaf's site calls it
//	callback  no ops; the loop calls the callback itself through a
//	          pointer after leaf: what the callback costs, the ops
//	          machinery aside (built with -DPLAIN, no runtime)
const opsC = `/* ops' cost per call: see opsC in bench/runtime/ops.go. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef PLAIN
#include <ftrace.h>
#else
struct ftrace_ops;
struct ftrace_regs;
#endif
#define OPS_CALLS 20000000L
void leaf(void);
void other(void);
void cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs);
void dtramp(void);
__asm__(".text\n.globl dtramp\n.type dtramp, @function\ndtramp: ret\n");
static void (*volatile cbp)(unsigned long, unsigned long, struct ftrace_ops *, struct ftrace_regs *) = cb;
static long ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}
int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "none";
	int callback = strcmp(mode, "callback") == 0;
#ifndef PLAIN
	static struct ftrace_ops a = { .func = cb }, b = { .func = cb }, d;
	if (strcmp(mode, "direct") == 0) {
		if (ftrace_set_filter(&d, "leaf", 1) < 0 || register_ftrace_direct(&d, (unsigned long)dtramp) != 0) {
			fprintf(stderr, "ops: %s\n", ftrace_error());
			return 1;
		}
	} else if (strcmp(mode, "none") != 0) {
		if (ftrace_set_filter(&a, strcmp(mode, "other") == 0 ? "other" : "leaf", 1) < 0 || register_ftrace_function(&a) != 0) {
			fprintf(stderr, "ops: %s\n", ftrace_error());
			return 1;
		}
		if (strcmp(mode, "two") == 0 && (ftrace_set_filter(&b, "leaf", 1) < 0 || register_ftrace_function(&b) != 0)) {
			fprintf(stderr, "ops: %s\n", ftrace_error());
			return 1;
		}
	}
#endif
	long t0 = 0;
	for (int pass = 0; pass < 2; pass++) {
		t0 = ns();
		if (callback)
			for (long i = 0; i < OPS_CALLS; i++) {
				leaf();
				cbp(0, 0, 0, 0);
			}
		else
			for (long i = 0; i < OPS_CALLS; i++)
				leaf();
	}
	printf("ns_per_call %.3f\n", (double)(ns() - t0) / OPS_CALLS);
	return 0;
}
`

// opsLeafC is the functions the loop calls, and the callback, which
// cb.c holds without a site.
const opsLeafC = `void leaf(void) { __asm__ volatile(""); }
void other(void) { __asm__ volatile(""); }
`

const opsCbC = `struct ftrace_ops;
struct ftrace_regs;
void cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op, (void)fregs;
	__asm__ volatile("");
}
`

var nsLine = regexp.MustCompile(`ns_per_call ([0-9.]+)`)

// opsBench measures what ops cost a call (issue 17's targets), every
// case once per run, taking turns.
func opsBench(work, bin string, libs []byte, runs int) error {
	cflags, err := measureOut(filepath.Join(bin, "ftpatch"), "flags", "--cflags")
	if err != nil {
		return err
	}
	for name, text := range map[string]string{"opsmain.c": opsC, "opsleaf.c": opsLeafC, "opscb.c": opsCbC} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	steps := [][]string{
		{"gcc", "-O2", "-DPLAIN", "opsmain.c", "opsleaf.c", "opscb.c", "-o", "ops-plain"},
		append(append([]string{"gcc", "-O2"}, strings.Fields(cflags)...), "-c", "opsmain.c", "opsleaf.c"),
		{"gcc", "-O2", "-c", "opscb.c"},
		{filepath.Join(bin, "recordmcount"), "opsmain.o", "opsleaf.o"},
		append([]string{"gcc", "opsmain.o", "opsleaf.o", "opscb.o", "-o", "ops"}, strings.Fields(string(libs))...),
	}
	// The same program built without tracing flags (the header's
	// directory alone), its sites made from the functions' prologues by
	// ftpatch instrument: what ops cost at a prologue site.
	var incs []string
	for _, f := range strings.Fields(cflags) {
		if strings.HasPrefix(f, "-I") {
			incs = append(incs, f)
		}
	}
	steps = append(steps,
		append(append([]string{"gcc", "-O2"}, incs...), "-c", "opsmain.c", "-o", "opsmain-pro.o"),
		[]string{"gcc", "-O2", "-c", "opsleaf.c", "-o", "opsleaf-pro.o"},
		append([]string{"gcc", "opsmain-pro.o", "opsleaf-pro.o", "opscb.o", "-o", "ops-pro"}, strings.Fields(string(libs))...),
		[]string{filepath.Join(bin, "ftpatch"), "instrument", "-o", "ops-pro.i", "ops-pro"},
	)
	if err := measure.Steps(work, steps...); err != nil {
		return err
	}
	type opsCase struct {
		name string
		argv []string
		ns   []float64
	}
	cases := []*opsCase{
		{name: "untraced build: leaf", argv: []string{"ops-plain", "none"}},
		{name: "untraced build: leaf, then the callback", argv: []string{"ops-plain", "callback"}},
		{name: "sites NOP'd, no ops", argv: []string{"ops", "none"}},
		{name: "one ops on another function", argv: []string{"ops", "other"}},
		{name: "one ops on leaf (its trampoline)", argv: []string{"ops", "one"}},
		{name: "two ops on leaf (the list)", argv: []string{"ops", "two"}},
		{name: "a direct trampoline on leaf", argv: []string{"ops", "direct"}},
		{name: "prologue site: NOP'd, no ops", argv: []string{"ops-pro.i", "none"}},
		{name: "prologue site: one ops on leaf", argv: []string{"ops-pro.i", "one"}},
		{name: "prologue site: two ops on leaf", argv: []string{"ops-pro.i", "two"}},
		{name: "prologue site: a direct trampoline", argv: []string{"ops-pro.i", "direct"}},
	}
	for range runs {
		for _, c := range cases {
			out, err := measureOut(filepath.Join(work, c.argv[0]), c.argv[1])
			if err != nil {
				return err
			}
			m := nsLine.FindStringSubmatch(out)
			if m == nil {
				return fmt.Errorf("%s: unexpected output %q", c.name, out)
			}
			c.ns = append(c.ns, atof(m[1]))
		}
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	fmt.Printf("\nops: 20,000,000 calls of an empty leaf (median of %d runs)\n", runs)
	fmt.Printf("%-44s %10s %10s\n", "case", "ns/call", "min-max")
	m := map[string]float64{}
	for _, c := range cases {
		m[c.argv[0]+" "+c.argv[1]] = med(c.ns)
		fmt.Printf("%-44s %10.2f %4.2f-%.2f\n", c.name, med(c.ns), c.ns[0], c.ns[len(c.ns)-1])
	}
	direct := m["ops one"] - m["ops-plain callback"]
	verdict := "met"
	if direct > 3 {
		verdict = "MISSED"
	}
	fmt.Printf("target: one ops called directly at most 3 ns beyond what its callback does: %.2f ns: %s\n", direct, verdict)
	fmt.Printf("        two ops on one function: %.2f ns beyond the untraced leaf and one callback\n", m["ops two"]-m["ops-plain callback"])
	other := m["ops other"] - m["ops none"]
	verdict = "met"
	if other > 0.2 || other < -0.2 {
		verdict = "MISSED"
	}
	fmt.Printf("target: an ops on another function leaves leaf's cost as it was (within 0.2 ns): %+.2f ns: %s\n", other, verdict)
	dt := m["ops direct"] - m["ops-plain none"]
	verdict = "met"
	if dt > 2 {
		verdict = "MISSED"
	}
	fmt.Printf("target: a direct trampoline (one that returns) at most 2 ns beyond the untraced leaf: %.2f ns: %s\n", dt, verdict)
	fmt.Printf("prologue sites against compiler sites (every register and the vector state kept): one ops %+.2f ns, two %+.2f ns, a direct trampoline %+.2f ns\n",
		m["ops-pro.i one"]-m["ops one"], m["ops-pro.i two"]-m["ops two"], m["ops-pro.i direct"]-m["ops direct"])
	return nil
}
