/*
 * Changing arm64 sites while other threads run them (live.h): not yet.
 * A site there changes by one aligned store of one instruction (`nop`
 * and `bl` may be swapped under a running core), with the instruction
 * cache made to see it; the live API refuses until that is written and
 * tested, as qemu-user (which runs the arm64 tests) does not see code
 * written through /proc/self/mem.
 */
#include <errno.h>
#include <signal.h>

#include "../live.h"

const char *ftrt_arch_live_refused(void)
{
	return "sites cannot yet be changed while threads run on arm64 (set FTRACE and FTRACE_FILTER at start, or use ftpatch enable)";
}

int ftrt_arch_poke(struct ftrt_poke *p, size_t n)
{
	(void)p;
	return n ? -ENOSYS : 0;
}

void ftrt_arch_poke_after_fork(void)
{
}

int ftrt_arch_trap(const siginfo_t *si, void *uc)
{
	(void)si, (void)uc;
	return 0;
}

int ftrt_arch_live_state(uintptr_t ip, int *len)
{
	(void)ip, (void)len;
	return -1;
}

int ftrt_arch_live_call(uintptr_t ip, int len, int want, unsigned char *buf)
{
	(void)ip, (void)len, (void)want, (void)buf;
	return -1;
}
