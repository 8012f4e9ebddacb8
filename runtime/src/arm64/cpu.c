/*
 * arm64's identification of the CPU for the tracers' clock (clock.c):
 * whether its counter can be the clock. Calls nothing.
 */
#include "../tracer.h"

/*
 * The generic timer's counter (cntvct_el0) is the clock: the
 * architecture fixes its rate (cntfrq_el0) whatever the CPU's power
 * state, and Linux keeps time with it.
 */
int ftrt_tsc_trusted(void)
{
	return 1;
}
