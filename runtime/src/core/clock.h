/*
 * The clock of every record (clock.c): the cycle counter (arch.h's
 * rdtsc) or CLOCK_MONOTONIC, as the trace's opening chose
 * (record/trace.c sets ftrt_clock_mono), read inline by every tracer.
 */
#ifndef FTRT_CLOCK_H
#define FTRT_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "arch/arch.h"

#ifndef HIDDEN
#define HIDDEN __attribute__((visibility("hidden")))
#endif

/* The clock (clock.c). */
extern int ftrt_clock_mono HIDDEN;
extern uint64_t ftrt_tsc_start HIDDEN, ftrt_mono_start HIDDEN;

/* The C library's clock_gettime, found at start (ftrt_clock_init): the
 * runtime's own reading of the clock never goes through the program's
 * GOT slot, which library-call tracing redirects. NULL before then. */
extern int (*ftrt_clock_gettime)(clockid_t, struct timespec *) HIDDEN;
void ftrt_clock_init(void) HIDDEN;

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	if (__builtin_expect(ftrt_clock_gettime != NULL, 1))
		ftrt_clock_gettime(CLOCK_MONOTONIC, &ts);
	else
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t now(void)
{
	if (__builtin_expect(ftrt_clock_mono, 0))
		return mono_ns();
	return rdtsc();
}

/* ns in counter ticks (for FTRACE_THRESH), and the clock now for the
 * parts that do not inline it. */
uint64_t ftrt_ns_to_tsc(uint64_t ns);
uint64_t ftrt_now(void);

#endif
