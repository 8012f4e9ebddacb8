/*
 * arm64's raw system calls (sys.h has what they are for): sys, and
 * sys_exit_group, which ends the process (exit.c). Calls nothing.
 */
#ifndef FTRT_ARM64_SYS_H
#define FTRT_ARM64_SYS_H

/* arm64's svc #0: the number in x8, the arguments in x0-x5; the result
 * in x0. Nothing else is clobbered. */
static inline long sys(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
	return x0;
}

/* End the process with status: the exit_group system call (94), which
 * does not return; exit (93) would end just this thread. */
__attribute__((noreturn)) static inline void sys_exit_group(int status)
{
	register long x8 __asm__("x8") = 94; /* SYS_exit_group */
	register long x0 __asm__("x0") = status;
	for (;;)
		__asm__ volatile("svc #0" : : "r"(x8), "r"(x0) : "memory");
}

#endif
