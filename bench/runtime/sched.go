package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"ftpatch/internal/measure"
)

// schedCallsC makes 5,000,000 calls of a traced leaf on one thread: what
// a traced call costs with and without scheduler events.
const schedCallsC = `#include <stdio.h>
__attribute__((noinline)) int sleaf(int x) { __asm__ volatile(""); return x + 1; }
int main(void)
{
	int s = 0;
	for (int i = 0; i < 5000000; i++)
		s = sleaf(s);
	printf("%d\n", s);
	return 0;
}
`

// schedThreadsC starts 3,000 short threads, one after another, each
// making ten traced calls: what a thread's start and end cost.
const schedThreadsC = `#include <pthread.h>
#include <stdio.h>
__attribute__((noinline)) int twork(int x) { return x * 3 + 1; }
static void *body(void *a) { long s = 0; for (int i = 0; i < 10; i++) s += twork(i); return (void *)s; }
int main(void)
{
	long s = 0;
	for (int i = 0; i < 3000; i++) {
		pthread_t t;
		void *r;
		if (pthread_create(&t, NULL, body, NULL) != 0 || pthread_join(t, &r) != 0)
			return 1;
		s += (long)r;
	}
	printf("%ld\n", s);
	return 0;
}
`

// schedPingC passes a byte back and forth between two threads 20,000
// times through two pipes, each side blocking until the other answers,
// with a traced call at each turn: what a context switch costs.
const schedPingC = `#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int ab[2], ba[2];
__attribute__((noinline)) char turn(int in, int out) { char c; if (read(in, &c, 1) != 1 || write(out, &c, 1) != 1) return 0; return c; }
static void *pong(void *a) { for (int i = 0; i < 20000; i++) turn(ab[0], ba[1]); return a; }
int main(void)
{
	pthread_t t;
	if (pipe(ab) || pipe(ba) || pthread_create(&t, NULL, pong, NULL))
		return 1;
	char c = 'x';
	for (int i = 0; i < 20000; i++) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
	}
	pthread_join(t, NULL);
	printf("%c\n", c);
	return 0;
}
`

// schedBench measures scheduler events (FTRACE_SCHED=1): a traced
// call's cost with them and without (the runtime adds nothing to a
// call: the kernel writes the events), a thread's start and end (the
// copies of the per-CPU events the kernel makes and frees), and a context switch
// (the two records the kernel writes and the runtime reads), each case
// beside the same program traced without them, interleaved; and the
// target: 3,000 short threads pay at most 10% wall time for them.
func schedBench(work, bin string, libs []byte, runs int) error {
	for name, text := range map[string]string{"scalls.c": schedCallsC, "sthreads.c": schedThreadsC, "sping.c": schedPingC} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	lib := strings.Fields(string(libs))
	var steps [][]string
	for _, p := range []string{"scalls", "sthreads", "sping"} {
		steps = append(steps,
			[]string{"gcc", "-O2", "-pg", "-mfentry", "-c", p + ".c", "-o", p + ".o"},
			[]string{filepath.Join(bin, "recordmcount"), p + ".o"},
			append([]string{"gcc", p + ".o", "-pthread", "-o", p}, lib...))
	}
	if err := measure.Steps(work, steps...); err != nil {
		return err
	}
	abs := func(p string) string { return filepath.Join(work, p) }
	pair := func(prog, what string) (off, on *benchCase) {
		env := func(sched, out string) []string {
			return []string{"FTRACE=function_graph", "FTRACE_SCHED=" + sched, "FTRACE_OUT=" + abs(out)}
		}
		off = &benchCase{name: what + ", without", argv: []string{abs(prog)}, env: env("0", "t-"+prog+"-off"), outDir: abs("t-" + prog + "-off")}
		on = &benchCase{name: what + ", with", argv: []string{abs(prog)}, env: env("1", "t-"+prog+"-on"), outDir: abs("t-" + prog + "-on")}
		return off, on
	}
	callsOff, callsOn := pair("scalls", "5,000,000 traced calls")
	threadsOff, threadsOn := pair("sthreads", "3,000 short threads")
	pingOff, pingOn := pair("sping", "20,000 ping-pongs")
	plainThreads := &benchCase{name: "3,000 short threads, untraced", argv: []string{abs("sthreads")}}
	cases := []*benchCase{callsOff, callsOn, plainThreads, threadsOff, threadsOn, pingOff, pingOn}
	if err := interleave(cases, runs); err != nil {
		return err
	}
	// The switches the ping-pong's trace recorded, from its metadata.
	switches := uint64(0)
	if meta, err := findMeta(abs("t-sping-on")); err == nil {
		for _, line := range strings.Split(meta, "\n") {
			if v, ok := strings.CutPrefix(line, "sched_switches "); ok {
				switches, _ = strconv.ParseUint(v, 10, 64)
			}
		}
	}
	med := func(c *benchCase) float64 { return float64(measure.Median(c.walls).Nanoseconds()) }
	fmt.Printf("\nscheduler events (FTRACE_SCHED=1), function_graph, with and without; median of %d runs each, cases interleaved\n\n", runs)
	fmt.Printf("%-42s %10s %10s\n", "case", "median", "max RSS")
	for _, c := range cases {
		fmt.Printf("%-42s %8.1fms %8d KB\n", c.name, med(c)/1e6, c.rss)
	}
	fmt.Printf("\na traced call: %+.2f ns with scheduler events (nothing on the call's path: the kernel writes them)\n", (med(callsOn)-med(callsOff))/5e6)
	fmt.Printf("a thread's start and end: %+.2f us with scheduler events (the kernel's copies of the per-CPU events), against %.2f us a traced thread costs, %.2f us untraced\n",
		(med(threadsOn)-med(threadsOff))/3000/1e3, med(threadsOff)/3000/1e3, med(plainThreads)/3000/1e3)
	if switches > 0 {
		fmt.Printf("a context switch: %+.0f ns with scheduler events (%d switches recorded in the last run: the kernel's two records, the runtime's reading)\n",
			(med(pingOn)-med(pingOff))/float64(switches), switches)
	} else {
		fmt.Printf("a context switch: no switches recorded (the kernel refused scheduler events? see ftpatch info %s)\n", abs("t-sping-on"))
	}
	// The ratio run by run (the two ran one after the other in each
	// round): a machine whose speed drifts moves both.
	var ratios []float64
	for i := range min(len(threadsOn.walls), len(threadsOff.walls)) {
		ratios = append(ratios, float64(threadsOn.walls[i])/float64(threadsOff.walls[i]))
	}
	slices.Sort(ratios)
	ratio := ratios[len(ratios)/2]
	verdict := "met"
	if ratio > 1.10 {
		verdict = "MISSED"
	}
	fmt.Printf("\ntarget: 3,000 short threads at most +10%% wall time with scheduler events: %.3fx (the median of the %d runs' ratios, %.3f to %.3f): %s\n",
		ratio, len(ratios), ratios[0], ratios[len(ratios)-1], verdict)
	return nil
}

// findMeta reads the metadata of the trace at dir (a session's one
// process image, or a trace directory).
func findMeta(dir string) (string, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "meta")); err == nil {
		return string(b), nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if e.IsDir() && strings.Contains(e.Name(), "@") {
			b, err := os.ReadFile(filepath.Join(dir, e.Name(), "meta"))
			return string(b), err
		}
	}
	return "", fmt.Errorf("%s: no metadata", dir)
}
