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
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "arch/site.h"
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

/* A page mapped read-write at hint, fixed (only if no mapping is
 * there: MAP_FIXED_NOREPLACE; a kernel without it takes the address as
 * a hint) or as a hint alone (the kernel, or an emulator, may put it
 * elsewhere); kept when within reach of from, else given back. 0: none. */
static uintptr_t map_at(uintptr_t from, uintptr_t hint, int fixed)
{
	long m = sys(SYS_mmap, (long)hint, PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | (fixed ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (m < 0 && m > -4096)
		return 0;
	if (ftrt_arm64_reaches(from, (uintptr_t)m) && ftrt_arm64_reaches(from, (uintptr_t)m + PAGE - VENEER))
		return (uintptr_t)m;
	sys(SYS_munmap, m, PAGE, 0, 0, 0, 0);
	return 0;
}

/* The value of the hex digits at *p, *p moved past them. */
static uintptr_t hex(const char **p, const char *end)
{
	uintptr_t v = 0;
	for (; *p < end; (*p)++) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			break;
		v = v << 4 | (uintptr_t)d;
	}
	return v;
}

/* A page in a gap between the process's mappings within reach of from,
 * at the gap's edge nearest it, from /proc/self/maps (read a line at a
 * time, the lines in address order); 0 when no gap in reach can be
 * taken. */
static uintptr_t map_in_gap(uintptr_t from)
{
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0 && fd > -4096)
		return 0;
	char buf[512];
	size_t have = 0;
	uintptr_t prev = 0, got = 0;
	int eof = 0, rest = 0; /* rest: in a line whose start was read */
	while (!got) {
		char *nl = memchr(buf, '\n', have);
		if (!nl && have < sizeof buf && !eof) {
			long n = sys(SYS_read, fd, (long)(buf + have), (long)(sizeof buf - have), 0, 0, 0);
			if (n == -EINTR)
				continue;
			if (n <= 0)
				eof = 1;
			else
				have += (size_t)n;
			continue;
		}
		if (!nl && !have)
			break;
		const char *end = nl ? nl : buf + have, *q = buf;
		if (!rest) {
			/* "lo-hi perms ...": the gap [prev, lo) before it, and its page
			 * nearest from. */
			uintptr_t lo = hex(&q, end);
			uintptr_t hi = q < end && *q == '-' ? (q++, hex(&q, end)) : 0;
			if (hi > lo) {
				uintptr_t at = from < prev ? prev : from >= lo - PAGE ? lo - PAGE : from & ~(uintptr_t)(PAGE - 1);
				if (lo >= prev + PAGE && ftrt_arm64_reaches(from, at) && ftrt_arm64_reaches(from, at + PAGE - VENEER))
					got = map_at(from, at, 1);
				prev = hi;
			}
		}
		/* A line longer than buf (a long path) is passed over to its end. */
		rest = !nl;
		size_t used = nl ? (size_t)(nl + 1 - buf) : have;
		have -= used;
		memmove(buf, buf + used, have);
	}
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	return got;
}

/* A page within reach of from, mapped read-write, or 0. Places either
 * side of from are asked for at 1, 2, 4 and 8 MiB, then every 8 MiB to
 * the edge of reach, each taken only if free; then the gaps between the
 * process's mappings (a place in reach may lie between those steps);
 * then the same places as hints alone. The hints matter where the space
 * around the code is held by mappings the process cannot see: under
 * qemu-user the emulator's own now and then fill every place around a
 * shared object, and a hint is put in the nearest free space instead. */
uintptr_t ftrt_arm64_map_near(uintptr_t from)
{
	for (int fixed = 1; fixed >= 0; fixed--) {
		for (uintptr_t d = 1ul << 20; d < (uintptr_t)REACH; d += d < (8ul << 20) ? d : 8ul << 20)
			for (int side = 0; side < 2; side++) {
				if (side == 0 && from < d)
					continue;
				uintptr_t m = map_at(from, (side ? from + d : from - d) & ~(uintptr_t)(PAGE - 1), fixed);
				if (m)
					return m;
			}
		uintptr_t m = fixed ? map_in_gap(from) : 0;
		if (m)
			return m;
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
	/* And the runtime's entries of prologue sites, which no module's
	 * targets hold. */
	uintptr_t more[2] = { ftrt_arch_entries.prologue_caller, ftrt_arch_entries.prologue_stub };
	for (int k = 0; k < 2; k++)
		if (more[k]) {
			put(at + (uintptr_t)n++ * VENEER, more[k]);
			has |= more[k] == target;
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
