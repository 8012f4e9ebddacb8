/*
 * The architecture's part of the tracers (tracer.h): one folder per
 * architecture, whose cpu.h gives rdtsc (the cycle counter) and
 * cpu_relax (a spin-wait's step), and whose cpu.c says whether the
 * counter can be the clock (ftrt_tsc_trusted).
 */
#ifndef FTRT_ARCH_H
#define FTRT_ARCH_H

#if defined(__x86_64__)
#include "x86_64/cpu.h"
#else
#error "ftrt: no runtime port to this architecture"
#endif

#endif
