/*
 * x86-64's part of the tracers' clock (tracer.h includes it through
 * arch.h): the cycle counter every record's time is read from, and the
 * pause a spin-wait makes. Calls nothing.
 */
#ifndef FTRT_X86_64_CPU_H
#define FTRT_X86_64_CPU_H

#include <stdint.h>

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* A spin-wait's step: tells the CPU this is a wait loop (no memory-order
 * mis-speculation when it ends, and the sibling hyperthread runs). */
static inline void cpu_relax(void)
{
	__builtin_ia32_pause();
}

#endif
