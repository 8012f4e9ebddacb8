/*
 * arm64's identification of the CPU for the tracers' clock (clock.c,
 * meta.c): whether its counter can be the clock, and its rate. Calls
 * nothing.
 */
#include "arch/arch.h"

/*
 * The generic timer's counter (cntvct_el0) is the clock: the
 * architecture fixes its rate (cntfrq_el0) whatever the CPU's power
 * state, and Linux keeps time with it.
 */
int ftrt_tsc_trusted(void)
{
	return 1;
}

/* The counter's rate, which the firmware set in cntfrq_el0 (Linux
 * checks it at boot). */
uint64_t ftrt_tsc_hz(void)
{
	uint64_t hz;
	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(hz));
	return hz;
}
