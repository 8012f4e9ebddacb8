/*
 * Veneers for sites beyond bl's reach of the runtime.
 *
 * A bl reaches ±128 MiB. A program whose code spans more (a large .text,
 * or a section placed far from the rest) has sites that cannot call
 * ftrace_caller, ftrace_mcount_caller or ftrace_stub directly: each such
 * site calls a veneer within its reach instead, which goes on through
 * x16 (the intra-procedure-call register: a branch may change it, and
 * with BTI a `br x16` may land on the trampolines' `bti c`):
 *
 *   0   ldr  x16, .+8       (0x58000050)
 *   4   br   x16            (0xd61f0200)
 *   8   .quad target
 *
 * Veneers live in pages the runtime maps near the code, one page per
 * region of code that needs them: made for a module's three
 * trampolines at once (its ftrt_targets), written while the page is
 * private and writable, then made read-only and executable, and never
 * written again, so no thread ever runs code in a page being written.
 * They stay for the process's life: at most PAGES of them, wherever
 * code lies, never one per site or per load.
 *
 * sites.c's load-time pass calls this (through site.c), under its lock;
 * tramp.c and site.c see through a veneer (insn.h:
 * arm64_through_veneer), so a site that calls one is known for ours.
 * Calls raw system calls.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "core/ftrt.h"
#include "insn.h"
#include "sys.h"
#include "veneer.h"

#define PAGES 16     /* regions of far code served, at most */
#define PAGE 4096    /* a veneer page */
#define VENEER 16    /* bytes a veneer */
#define REACH (1l << 27)
#define MAX_TARGETS (PAGE / VENEER)

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static struct page {
	uintptr_t at; /* 0: not made */
	int n;        /* veneers in it */
} pages[PAGES];

/* Whether a bl at from reaches to. */
int ftrt_arm64_reaches(uintptr_t from, uintptr_t to)
{
	intptr_t d = (intptr_t)(to - from);
	return d >= -REACH && d < REACH;
}

/* A page within reach of from, mapped read-write, or 0: tried at
 * growing distances either side of from (MAP_FIXED_NOREPLACE never takes
 * a place in use; a kernel without it takes the address as a hint,
 * and a page it puts out of reach is given back). */
uintptr_t ftrt_arm64_map_near(uintptr_t from)
{
	for (uintptr_t d = 1ul << 20; d < (uintptr_t)REACH / 2; d <<= 1) {
		for (int side = 0; side < 2; side++) {
			uintptr_t hint = ((side ? from + d : from - d) & ~(uintptr_t)(PAGE - 1));
			if (side == 0 && from < d)
				continue;
			long m = sys(SYS_mmap, (long)hint, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (m < 0 && m > -4096)
				continue;
			if (ftrt_arm64_reaches(from, (uintptr_t)m) && ftrt_arm64_reaches(from, (uintptr_t)m + PAGE - VENEER))
				return (uintptr_t)m;
			sys(SYS_munmap, m, PAGE, 0, 0, 0, 0);
		}
	}
	return 0;
}

/* Write one veneer to target at v. */
static void put(uintptr_t v, uintptr_t target)
{
	uint32_t *w = (uint32_t *)v;
	w[0] = ARM64_LDR_X16_8;
	w[1] = ARM64_BR_X16;
	*(uint64_t *)(v + 8) = (uint64_t)target;
}

uintptr_t ftrt_arm64_veneer(uintptr_t from, uintptr_t target)
{
	/* One already made, in reach. */
	for (int i = 0; i < PAGES && pages[i].at; i++)
		for (int k = 0; k < pages[i].n; k++) {
			uintptr_t v = pages[i].at + (uintptr_t)k * VENEER;
			if (ftrt_arm64_reaches(from, v) && arm64_through_veneer(v) == target)
				return v;
		}
	int i = 0;
	while (i < PAGES && pages[i].at)
		i++;
	if (i == PAGES)
		return 0;
	uintptr_t at = ftrt_arm64_map_near(from);
	if (!at)
		return 0;
	/* This module's trampolines, all at once (the page is not written
	 * again), and target, should it be none of them. */
	int n = 0, has = 0;
	for (int t = 0; t < FTRT_T_N && n < MAX_TARGETS - 1; t++) {
		if (!ftrt_targets[t])
			continue;
		put(at + (uintptr_t)n++ * VENEER, ftrt_targets[t]);
		has |= ftrt_targets[t] == target;
	}
	if (!has)
		put(at + (uintptr_t)n++ * VENEER, target);
	__builtin___clear_cache((char *)at, (char *)at + PAGE);
	if (sys(SYS_mprotect, (long)at, PAGE, PROT_READ | PROT_EXEC, 0, 0, 0) != 0) {
		sys(SYS_munmap, (long)at, PAGE, 0, 0, 0, 0);
		return 0;
	}
	pages[i] = (struct page){ at, n };
	for (int k = 0; k < n; k++)
		if (arm64_through_veneer(at + (uintptr_t)k * VENEER) == target)
			return at + (uintptr_t)k * VENEER;
	return 0;
}

uint32_t ftrt_arm64_bl_to(uintptr_t at, uintptr_t target)
{
	uint32_t bl = arm64_bl(at, target);
	if (!bl) {
		uintptr_t v = ftrt_arm64_veneer(at, target);
		bl = v ? arm64_bl(at, v) : 0;
	}
	return bl;
}
