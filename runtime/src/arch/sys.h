/*
 * Raw system calls for the runtime's writers: no errno (a failure comes
 * back as -errno), no lock, nothing of libc's, so they are safe in a
 * signal handler that interrupted the program, or libc, anywhere, and in
 * a child of vfork. The trace's files are written with these (stream.c, meta.c,
 * dir.c). The system call itself, sys(n, a, b, c, d, e, f), and
 * sys_exit_group are the architecture's (arch.h: arch/x86_64/sys.h).
 */
#ifndef FTRT_SYS_H
#define FTRT_SYS_H

#include <sys/syscall.h>

#include "arch.h" /* sys(): the architecture's system call */

/* Whether a raw call's result is an error (-4095..-1). */
static inline int sys_failed(long r)
{
	return r < 0 && r > -4096;
}

/*
 * Hold back the signals a handler could run for while the runtime writes
 * or holds a lock, into *old; sys_sigs_release gives the mask back. A
 * handler that interrupted a flush and never returned (siglongjmp) would
 * leave the write half done, to be begun again at the next record and
 * cut again by the next signal: with a timer's signal more often than a
 * 1.5 MiB write takes, for ever; one that interrupted the list's lock
 * holder would leave every other thread waiting on it. Signals a fault
 * raises (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS) are left: held
 * back, the kernel would end the process rather than deliver them. A
 * signal that comes meanwhile is delivered when the mask is given back.
 */
static inline void sys_sigs_hold(unsigned long *old)
{
#define FTRT_SIG(n) (1ul << ((n) - 1))
	unsigned long hold = ~(FTRT_SIG(4) | FTRT_SIG(5) | FTRT_SIG(7) | FTRT_SIG(8) | FTRT_SIG(11) | FTRT_SIG(31));
#undef FTRT_SIG
	if (sys(SYS_rt_sigprocmask, 0 /* SIG_BLOCK */, (long)&hold, (long)old, sizeof hold, 0, 0) != 0)
		*old = ~0ul; /* nothing held: nothing to give back */
}

static inline void sys_sigs_release(const unsigned long *old)
{
	if (*old != ~0ul)
		sys(SYS_rt_sigprocmask, 2 /* SIG_SETMASK */, (long)old, 0, sizeof *old, 0, 0);
}

#endif
