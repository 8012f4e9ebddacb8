/*
 * arm64's part of the tracers' clock (tracer.h includes it through
 * arch.h): the counter every record's time is read from, and the pause a
 * spin-wait makes. Calls nothing.
 */
#ifndef FTRT_ARM64_CPU_H
#define FTRT_ARM64_CPU_H

#include <stdint.h>

/* The generic timer's virtual count (cntvct_el0), which ticks at the
 * constant rate cntfrq_el0 gives in every power state; named as
 * x86-64's cycle counter, which plays its part. The isb keeps the read
 * from being taken early, before the instructions that come before it. */
static inline uint64_t rdtsc(void)
{
	uint64_t v;
	__asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

/* A spin-wait's step: yield, a hint that this is a wait loop. */
static inline void cpu_relax(void)
{
	__asm__ volatile("yield" ::: "memory");
}

#endif
