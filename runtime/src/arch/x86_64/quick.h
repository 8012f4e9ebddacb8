/*
 * The load-time pass's common site, recognised inline (sites.c's hot
 * loop): a 5-byte `call rel32` (e8) to one of the module's two hooks,
 * which is what nearly every site of a freshly linked program holds, and
 * the 5 bytes that replace it: the NOP, or a `call rel32` of the tracer.
 * Everything else goes through ftrt_arch_classify (site.c), which knows
 * every shape; these must agree with it and with ftrt_arch_nop(5)
 * (runtime_test.go checks the NOP). Each architecture's folder has a
 * quick.h with these names (arch.h picks it).
 */
#ifndef FTRT_X86_64_QUICK_H
#define FTRT_X86_64_QUICK_H

#include <stdint.h>
#include <string.h>

#include "arch/site.h"

/* The 8 bytes at p (ftrt_sites_walk in sites.c makes sure a site has them). */
static inline uint64_t ftrt_quick_load(uintptr_t p)
{
	uint64_t v;
	memcpy(&v, (const void *)p, sizeof v);
	return v;
}

/* Where a 5-byte `call rel32` (e8) whose 8 bytes are v, at ip, goes:
 * rel32 is relative to the call's end. */
static inline uintptr_t ftrt_quick_target(uintptr_t ip, uint64_t v)
{
	return ip + 5 + (uintptr_t)(intptr_t)(int32_t)(v >> 8);
}

/* Whether v, the 8 bytes at ip, start with `call fentry` or `call
 * mcount`. */
static inline int ftrt_quick_call(uintptr_t ip, uint64_t v, uintptr_t fentry, uintptr_t mcount)
{
	uintptr_t target = ftrt_quick_target(ip, v);
	return (v & 0xff) == 0xe8 && (target == fentry || target == mcount);
}

/* Whether the 5-byte call whose 8 bytes are v is followed by pop %r10
 * (41 5a): perhaps a nested function's chain site, which the general path
 * tells apart (ftrt_arch_chain). */
static inline int ftrt_quick_pops_r10(uint64_t v)
{
	return (v >> 40 & 0xffff) == 0x5a41;
}

/* The two hooks a quick site calls, by their index in targets[]: the
 * entry hook (a site calling it is at a function's entry) and the other. */
#define FTRT_QUICK_ENTRY FTRT_T_FENTRY
#define FTRT_QUICK_OTHER FTRT_T_MCOUNT

/* The quick site's length: a 5-byte call, or the 5-byte NOP. */
#define FTRT_QUICK_LEN 5

/* The longest site: 6 bytes (`ff 15 disp32`, `67 e8 rel32`, the 6-byte
 * NOP). A site that starts closer than this to the one before may lie in
 * what writing that one changed (sites.c classifies it again). */
#define FTRT_SITE_MAX 6

/* Whether v, the 8 bytes at ip, hold the quick site: a 5-byte call of
 * fentry or mcount that is not a nested function's chain site (which
 * pops %r10 after it: the general path tells those apart). */
static inline int ftrt_quick_hook(uintptr_t ip, uint64_t v, uintptr_t fentry, uintptr_t mcount)
{
	return ftrt_quick_call(ip, v, fentry, mcount) && !ftrt_quick_pops_r10(v);
}

/* The 5-byte NOP the quick site becomes (ftrt_arch_nop(5)), as an
 * integer, little-endian. */
static inline uint64_t ftrt_quick_nop(void)
{
	uint64_t v = 0;
	memcpy(&v, ftrt_arch_nop(FTRT_QUICK_LEN), FTRT_QUICK_LEN);
	return v;
}

/* The 5-byte `call rel32` (e8) at ip of target, as an integer,
 * little-endian, into *insn; 0 when target is out of rel32's reach (or
 * 0: no trampoline to call directly), for the general path. */
static inline int ftrt_quick_call_insn(uintptr_t ip, uintptr_t target, uint64_t *insn)
{
	int64_t rel = (int64_t)(target - (ip + FTRT_QUICK_LEN));
	if (!target || rel != (int32_t)rel)
		return 0;
	*insn = 0xe8 | (uint64_t)(uint32_t)(int32_t)rel << 8; /* e8 rel32: call rel32 */
	return 1;
}

/* Write the 5-byte instruction insn (its bytes as an integer,
 * little-endian) at ip, then read it back: 1 if the site now holds it. */
static inline int ftrt_quick_put(uintptr_t ip, uint64_t insn)
{
	uint32_t lo = (uint32_t)insn;
	unsigned char hi = (unsigned char)(insn >> 32);
	memcpy((void *)ip, &lo, 4);
	memcpy((void *)(ip + 4), &hi, 1);
	__asm__ volatile("" ::: "memory");
	/* Read back what was written, as it was written: one load spanning
	 * both stores could not take its bytes from them and would wait for
	 * both to reach the cache. */
	uint32_t lo2;
	unsigned char hi2;
	memcpy(&lo2, (const void *)ip, 4);
	memcpy(&hi2, (const void *)(ip + 4), 1);
	return lo2 == lo && hi2 == hi;
}

/* Whether the len-byte site at ip (5 or 6) holds the bytes b. Constant
 * sizes, so the check compiles to a few compares (a libc call per site
 * costs more than the pass's budget). */
static inline int ftrt_site_holds(const unsigned char *ip, const unsigned char *b, int len)
{
	return len == 6 ? __builtin_memcmp(ip, b, 6) == 0 : __builtin_memcmp(ip, b, 5) == 0;
}

/* Write the len-byte instruction b (5 or 6 bytes) over the site at ip,
 * then read it back: 1 if the site now holds it. */
static inline int ftrt_site_put(unsigned char *ip, const unsigned char *b, int len)
{
	if (len == 6)
		__builtin_memcpy(ip, b, 6);
	else
		__builtin_memcpy(ip, b, 5);
	__asm__ volatile("" ::: "memory"); /* read back what was written */
	return ftrt_site_holds(ip, b, len);
}

#endif
