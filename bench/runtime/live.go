package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"ftpatch/internal/measure"
)

// liveC toggles one function while eight threads call it, then enables
// and disables a batch of BATCH functions (funcs.c), through ftrace.h's
// API (or, built with -DXRAY, XRay's __xray_patch_function and
// __xray_unpatch_function on the one function: the toggle alone). Each
// toggle is an enable and a disable, timed apart with CLOCK_MONOTONIC;
// it prints
//
//	toggle N median_ns M mean_ns A
//	batch K enable_ns_per_site E disable_ns_per_site D
const liveC = `/* Live patching's cost: see liveC in bench/runtime/live.go. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef XRAY
/* XRay's interface (xray/xray_interface.h is C++): its extern "C" calls. */
#include <stdint.h>
enum { XRAY_SUCCESS = 1 };
int __xray_patch_function(int32_t id);
int __xray_unpatch_function(int32_t id);
uintptr_t __xray_function_address(int32_t id);
size_t __xray_max_function_id(void);
int __xray_set_handler(void (*entry)(int32_t, int));
#else
#include <ftrace.h>
void batch_anchor(void);
#endif
#define THREADS 8
#define TOGGLES 2000
static atomic_int done;
static volatile long sink;
__attribute__((noinline)) long hot(long x) { return x * 7 + 1; }
static void *caller(void *arg)
{
	long s = (long)arg;
	while (!atomic_load_explicit(&done, memory_order_relaxed))
		s += hot(s);
	sink += s;
	return NULL;
}
static long ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}
static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}
static void must(int r, const char *what)
{
	if (r < 0) {
#ifdef XRAY
		fprintf(stderr, "%s failed\n", what);
#else
		fprintf(stderr, "%s: %s\n", what, ftrace_error());
#endif
		exit(1);
	}
}
int main(void)
{
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, caller, (void *)i);
	static long took[TOGGLES];
#ifdef XRAY
	int id = 0;
	for (int i = 1; i <= (int)__xray_max_function_id(); i++)
		if (__xray_function_address(i) == (uintptr_t)hot)
			id = i;
	if (!id) {
		fprintf(stderr, "hot has no XRay sled\n");
		return 1;
	}
	__xray_set_handler(NULL);
#endif
	for (int i = 0; i < TOGGLES; i++) {
		long t0 = ns();
#ifdef XRAY
		must(__xray_patch_function(id) == XRAY_SUCCESS ? 0 : -1, "patch");
		must(__xray_unpatch_function(id) == XRAY_SUCCESS ? 0 : -1, "unpatch");
#else
		must(ftrace_enable_functions("hot"), "enable hot");
		must(ftrace_disable_functions("hot"), "disable hot");
#endif
		took[i] = ns() - t0;
	}
	long sum = 0;
	for (int i = 0; i < TOGGLES; i++)
		sum += took[i];
	qsort(took, TOGGLES, sizeof *took, cmp);
	printf("toggle %d median_ns %ld mean_ns %ld\n", TOGGLES, took[TOGGLES / 2], sum / TOGGLES);
#ifndef XRAY
	(void)batch_anchor;
	long e = 0, d = 0;
	int n = 0;
	for (int r = 0; r < 5; r++) {
		long t0 = ns();
		int k = ftrace_enable_functions("batch_*");
		must(k, "enable batch_*");
		long t1 = ns();
		must(ftrace_disable_functions("batch_*"), "disable batch_*");
		long t2 = ns();
		if (r == 0 || t1 - t0 < e)
			e = t1 - t0;
		if (r == 0 || t2 - t1 < d)
			d = t2 - t1;
		n = k;
	}
	printf("batch %d enable_ns_per_site %.1f disable_ns_per_site %.1f\n", n, (double)e / n, (double)d / n);
#endif
	atomic_store(&done, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
`

// liveBatch is how many functions the batch enables and disables at once.
const liveBatch = 10000

// liveFuncs is the batch: liveBatch empty functions, each with its site.
func liveFuncs() string {
	var b strings.Builder
	b.WriteString("/* The batch: see liveC in bench/runtime/live.go. */\n")
	for i := range liveBatch {
		fmt.Fprintf(&b, "__attribute__((noinline)) void batch_%d(void) { __asm__ volatile(\"\"); }\n", i)
	}
	b.WriteString("void batch_anchor(void) {}\n")
	return b.String()
}

var (
	toggleLine = regexp.MustCompile(`(?m)^toggle \d+ median_ns (\d+) mean_ns (\d+)$`)
	batchLine  = regexp.MustCompile(`(?m)^batch (\d+) enable_ns_per_site ([\d.]+) disable_ns_per_site ([\d.]+)$`)
)

// liveBench measures live patching (ftrace.h's API) while eight threads
// call the function toggled: an enable and a disable of one function,
// and of a batch of 10,000, against XRay's patching of one function when
// clang's XRay runtime is installed, each program run `runs` times.
func liveBench(work, bin string, libs []byte, runs int) error {
	cflags, err := measureOut(filepath.Join(bin, "ftpatch"), "flags", "--cflags")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "live.c"), []byte(liveC), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "funcs.c"), []byte(liveFuncs()), 0o644); err != nil {
		return err
	}
	steps := [][]string{
		append(append([]string{"gcc", "-O2"}, strings.Fields(cflags)...), "-c", "live.c", "funcs.c"),
		{filepath.Join(bin, "recordmcount"), "live.o", "funcs.o"},
		append([]string{"gcc", "live.o", "funcs.o", "-pthread", "-o", "live"}, strings.Fields(string(libs))...),
		// A fixed-address build: 5-byte sites, whose disabled form differs
		// from the call in its first byte alone (one sync a change, where
		// a PIE's 6-byte sites take two).
		append(append([]string{"gcc", "-O2", "-fno-pie", "-o", "live-nopie.o"}, strings.Fields(cflags)...), "-c", "live.c"),
		append(append([]string{"gcc", "-O2", "-fno-pie", "-o", "funcs-nopie.o"}, strings.Fields(cflags)...), "-c", "funcs.c"),
		{filepath.Join(bin, "recordmcount"), "live-nopie.o", "funcs-nopie.o"},
		append([]string{"gcc", "-no-pie", "live-nopie.o", "funcs-nopie.o", "-pthread", "-o", "live-nopie"}, strings.Fields(string(libs))...),
	}
	if err := measure.Steps(work, steps...); err != nil {
		return err
	}
	xray := measure.Sh(work, "clang", "-O2", "-DXRAY", "-fxray-instrument", "-fxray-instruction-threshold=1", "live.c", "-pthread", "-o", "live-xray") == nil
	var toggles, toggles5, xtoggles, enables, disables []float64
	sites := 0
	for range runs {
		// The first enable opens the trace: into the work directory.
		os.RemoveAll(filepath.Join(work, "t-live"))
		out, err := measureOut("env", "FTRACE_OUT="+filepath.Join(work, "t-live"), filepath.Join(work, "live"))
		if err != nil {
			return err
		}
		m, b := toggleLine.FindStringSubmatch(out), batchLine.FindStringSubmatch(out)
		if m == nil || b == nil {
			return fmt.Errorf("live: unexpected output %q", out)
		}
		toggles = append(toggles, atof(m[1]))
		os.RemoveAll(filepath.Join(work, "t-live"))
		out5, err := measureOut("env", "FTRACE_OUT="+filepath.Join(work, "t-live"), filepath.Join(work, "live-nopie"))
		if err != nil {
			return err
		}
		if m := toggleLine.FindStringSubmatch(out5); m != nil {
			toggles5 = append(toggles5, atof(m[1]))
		}
		sites, _ = strconv.Atoi(b[1])
		enables = append(enables, atof(b[2]))
		disables = append(disables, atof(b[3]))
		if xray {
			out, err := measureOut(filepath.Join(work, "live-xray"))
			if err != nil {
				return err
			}
			if m := toggleLine.FindStringSubmatch(out); m != nil {
				xtoggles = append(xtoggles, atof(m[1]))
			}
		}
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	fmt.Printf("\nlive patching while 8 threads call the function (median of %d runs, each the median of 2,000 toggles)\n", runs)
	tg := med(toggles)
	verdict := "met"
	if tg > 5000 {
		verdict = "MISSED"
	}
	fmt.Printf("target: a toggle of one function (enable, then disable) at most 5 us: %.1f us: %s\n", tg/1000, verdict)
	if len(toggles5) > 0 {
		fmt.Printf("        the same, a fixed-address build (5-byte sites, one sync a change): %.1f us\n", med(toggles5)/1000)
	}
	if len(xtoggles) > 0 {
		fmt.Printf("        XRay's patch and unpatch of one function (no synchronisation of other threads): %.1f us\n", med(xtoggles)/1000)
	} else {
		fmt.Printf("        XRay: clang's XRay runtime not installed (scripts/deps.sh bench)\n")
	}
	e, d := med(enables), med(disables)
	verdict = "met"
	if e > 100 || d > 100 {
		verdict = "MISSED"
	}
	fmt.Printf("target: a batch of %d sites at most 100 ns a site: enabled at %.1f ns, disabled at %.1f ns a site: %s\n", sites, e, d, verdict)
	return nil
}

func atof(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

// measureOut runs argv and returns its stdout; its stderr goes into the
// error when it fails.
func measureOut(argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	return string(out), nil
}
