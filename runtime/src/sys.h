/*
 * Raw system calls for the runtime's writers: no errno (a failure comes
 * back as -errno), no lock, nothing of libc's, so they are safe in a
 * signal handler that interrupted the program, or libc, anywhere, and in
 * a child of vfork. The trace's files are written with these (trace.c,
 * dir.c).
 */
#ifndef FTRT_SYS_H
#define FTRT_SYS_H

#if !defined(__x86_64__)
#error "sys.h: the runtime is x86-64 only for now"
#endif

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

/* Whether a raw call's result is an error (-4095..-1). */
static inline int sys_failed(long r)
{
	return r < 0 && r > -4096;
}

#endif
