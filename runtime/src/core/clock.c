/*
 * The clock of every record (tracer.h's now()): the cycle counter
 * (arch.h) or CLOCK_MONOTONIC, as trace.c chose when the trace opened;
 * and the conversions other parts of the runtime need. Calls only the C
 * library's clock_gettime and the architecture's counter.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

#include "clock.h"

int (*ftrt_clock_gettime)(clockid_t, struct timespec *);

/* The definition after the program's (the C library's: the runtime is
 * in the program), before any GOT slot is redirected; the program's
 * own in a static link, which has none. */
void ftrt_clock_init(void)
{
	if (ftrt_clock_gettime)
		return;
	int (*f)(clockid_t, struct timespec *) = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	ftrt_clock_gettime = f ? f : clock_gettime;
}

/*
 * The clock of every record. rdtsc when the TSC ticks at a constant rate
 * whatever the CPU's power state and is what the kernel keeps time with:
 * the CPU says its TSC is invariant (CPUID 0x80000007, EDX bit 8), or
 * Linux chose it as its clocksource after checking it. Otherwise (or with
 * FTRACE_CLOCK=mono) CLOCK_MONOTONIC in ns, through the vDSO: slower, but
 * never wrong. The metadata names the clock.
 */
int ftrt_clock_mono;
uint64_t ftrt_tsc_start, ftrt_mono_start; /* the clock pair when the trace opened */

/* ns in rdtsc ticks, at a rate measured over 2 ms (only when a
 * threshold needs converting at start; the trace's own clock conversion
 * uses the whole run). Integer arithmetic: the runtime has no FP. */
uint64_t ftrt_ns_to_tsc(uint64_t ns)
{
	if (ftrt_clock_mono)
		return ns;
	uint64_t t0 = rdtsc(), m0 = mono_ns(), m1;
	while ((m1 = mono_ns()) - m0 < 2000000)
		;
	return (uint64_t)((unsigned __int128)ns * (rdtsc() - t0) / (m1 - m0));
}

uint64_t ftrt_now(void)
{
	return now();
}
