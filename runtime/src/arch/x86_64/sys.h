/*
 * x86-64's raw system calls (sys.h has what they are for): sys, and
 * sys_exit_group, which ends the process (exit.c). Calls nothing.
 */
#ifndef FTRT_X86_64_SYS_H
#define FTRT_X86_64_SYS_H

/* x86-64's syscall: the number in rax, the arguments in rdi, rsi, rdx,
 * r10, r8, r9; the result in rax; rcx and r11 clobbered. */
static inline long sys(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* End the process with status: the exit_group system call (231), which
 * does not return; exit (60) would end just this thread. */
__attribute__((noreturn)) static inline void sys_exit_group(int status)
{
	for (;;)
		__asm__ volatile("syscall" : : "a"(231 /* SYS_exit_group */), "D"(status) : "rcx", "r11", "memory");
}

#endif
