/*
 * The load-time pass's common site, recognised inline (sites.c's hot
 * loop), and how a site is written: on arm64 there is no inline path yet
 * (ftrt_quick_hook says no, and every site goes through
 * ftrt_arch_classify, site.c); the names are the ones every
 * architecture's quick.h gives (arch.h picks it).
 */
#ifndef FTRT_ARM64_QUICK_H
#define FTRT_ARM64_QUICK_H

#include <stdint.h>
#include <string.h>

#include "arch/site.h"
#include "insn.h"

/* The hooks a quick site calls (targets[] indexes): arm64 has one. */
#define FTRT_QUICK_ENTRY FTRT_T_MCOUNT
#define FTRT_QUICK_OTHER FTRT_T_MCOUNT

/* A quick site's length: one instruction. */
#define FTRT_QUICK_LEN 4

/* The longest site: 8 bytes, a patchable area's two instructions (`mov
 * x9, x30; bl ftrace_caller` enabled). A site that starts closer than
 * this to the one before may lie in what writing that one changed
 * (sites.c classifies it again). */
#define FTRT_SITE_MAX 8

/* The 8 bytes at p (ftrt_sites_walk in sites.c makes sure a site has them). */
static inline uint64_t ftrt_quick_load(uintptr_t p)
{
	uint64_t v;
	memcpy(&v, (const void *)p, sizeof v);
	return v;
}

static inline uintptr_t ftrt_quick_target(uintptr_t ip, uint64_t v)
{
	(void)v;
	return ip;
}

/* No site is quick on arm64: the general path takes them all. */
static inline int ftrt_quick_hook(uintptr_t ip, uint64_t v, uintptr_t entry, uintptr_t other)
{
	(void)ip, (void)v, (void)entry, (void)other;
	return 0;
}

static inline uint64_t ftrt_quick_nop(void)
{
	return ARM64_NOP;
}

static inline int ftrt_quick_call_insn(uintptr_t ip, uintptr_t target, uint64_t *insn)
{
	(void)ip, (void)target, (void)insn;
	return 0;
}

static inline int ftrt_quick_put(uintptr_t ip, uint64_t insn)
{
	(void)ip, (void)insn;
	return 0;
}

/* Whether the len-byte site at ip (4 or 8) holds the bytes b. */
static inline int ftrt_site_holds(const unsigned char *ip, const unsigned char *b, int len)
{
	return len == 8 ? __builtin_memcmp(ip, b, 8) == 0 : __builtin_memcmp(ip, b, 4) == 0;
}

/*
 * Write the len-byte instructions b (one or two, 4 or 8 bytes) over the
 * site at ip, then read them back: 1 if the site now holds them. Each
 * instruction is one aligned 32-bit store; then the data cache is
 * cleaned and the instruction cache invalidated for the range, so the
 * CPU fetches what was written (the load-time pass runs before any other
 * thread can run the site).
 */
static inline int ftrt_site_put(unsigned char *ip, const unsigned char *b, int len)
{
	uint32_t w[2];
	memcpy(w, b, (size_t)len);
	__atomic_store_n((uint32_t *)ip, w[0], __ATOMIC_RELAXED);
	if (len == 8)
		__atomic_store_n((uint32_t *)(ip + 4), w[1], __ATOMIC_RELAXED);
	__builtin___clear_cache((char *)ip, (char *)ip + len);
	return ftrt_site_holds(ip, b, len);
}

#endif
