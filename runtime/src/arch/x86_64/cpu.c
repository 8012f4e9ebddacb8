/*
 * x86-64's identification of the CPU for the tracers' clock: whether its
 * time stamp counter can be the clock (clock.c), and its rate (meta.c).
 * Calls only the C library's open, read and close.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"


/*
 * Whether rdtsc ticks at a constant rate whatever the CPU's power state
 * and is what the kernel keeps time with: the CPU says its TSC is
 * invariant (CPUID 0x80000007, EDX bit 8), or Linux chose it as its
 * clocksource after checking it.
 */
/* x86-64 gives the TSC's rate nowhere a process can read it (CPUID's
 * leaf 0x15 is often absent or zero): the reader takes it from the run. */
uint64_t ftrt_tsc_hz(void)
{
	return 0;
}

int ftrt_tsc_trusted(void)
{
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000007 && __get_cpuid(0x80000007, &a, &b, &c, &d) &&
	    (d & (1u << 8)))
		return 1;
	char cs[16] = "";
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		long n = read(fd, cs, sizeof cs - 1);
		close(fd);
		cs[n > 0 ? n : 0] = 0;
	}
	return strcmp(cs, "tsc\n") == 0;
}
