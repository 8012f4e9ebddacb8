/*
 * x86-64: what the preloaded runtime (runtime.SharedLibName) gives a
 * module that no stub describes (site.h: ftrt_arch_targets_near,
 * ftrt_arch_area_site).
 *
 * An enabled site calls a trampoline with `e8 rel32` (or `67 e8`), which
 * reaches ±2 GiB: the runtime linked into a program is in it, but a
 * preloaded one lies wherever the loader put it, often far from the
 * program (a fixed-address program at 0x400000, the shared objects near
 * the top of the address space). So each module is given the module
 * stub's jumps (module/x86_64/entry.S), made here in a page mapped within
 * reach of its code:
 *
 *   +0   ff 25 rel32 cc cc     jmp *slot0(%rip): ftrace_caller5
 *   +8   ff 25 rel32 cc cc     jmp *slot1(%rip): ftrace_caller6
 *        ...                   one per trampoline, FTRT_T_FIRST_TRAMP..FTRT_T_STUB
 *   +64  slot0 .. slot6        the runtime's trampolines' addresses
 *
 * A jump, not a call: the trampoline finds the stack exactly as the site
 * left it, every register untouched, as it does behind a stub's jump.
 * The page is written while private and writable, then made read-only
 * and executable, and never written again; pages are kept for the
 * process's life and shared by every module within their reach (at most
 * PAGES), never one per load.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/site.h"
#include "near.h"

#define PAGES 16
#define PAGE 4096
#define JUMP 8       /* bytes a jump, padded */
#define SLOTS 64     /* where the slots begin */
#define NJUMPS (FTRT_T_STUB - FTRT_T_FIRST_TRAMP + 1)
_Static_assert(NJUMPS * JUMP <= SLOTS && SLOTS + NJUMPS * 8 <= PAGE, "the jumps and their slots fit a page");

static uintptr_t pages[PAGES];

/* Whether every jump of the page at p is within rel32 reach of code at
 * a (a module's code may span some MiB past it: leave a margin). */
static int reaches(uintptr_t p, uintptr_t a)
{
	int64_t d = (int64_t)(p - a);
	return d > -(1ll << 31) + (256ll << 20) && d < (1ll << 31) - (256ll << 20);
}

/* A new page of jumps near a: asked for above and below it, 64 MiB
 * apart, until the kernel grants one in reach. 0 when none. */
static uintptr_t page_new(uintptr_t a, const uintptr_t runtime[FTRT_T_N])
{
	for (int k = 1; k < 30; k++) {
		int64_t step = (int64_t)(k / 2 + 1) * (64ll << 20);
		uintptr_t hint = ((k & 1) ? a + (uintptr_t)step : a - (uintptr_t)step) & ~(uintptr_t)(PAGE - 1);
		unsigned char *m = mmap((void *)hint, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			continue;
		if (!reaches((uintptr_t)m, a)) {
			munmap(m, PAGE);
			continue;
		}
		memset(m, 0xcc, SLOTS); /* int3 between the jumps, never run */
		for (int i = 0; i < NJUMPS; i++) {
			unsigned char *j = m + i * JUMP;
			uintptr_t slot = (uintptr_t)m + SLOTS + (uintptr_t)i * 8;
			int32_t rel = (int32_t)(int64_t)(slot - ((uintptr_t)j + 6));
			j[0] = 0xff, j[1] = 0x25; /* jmp *rel32(%rip) */
			memcpy(j + 2, &rel, 4);
			memcpy(m + SLOTS + i * 8, &runtime[FTRT_T_FIRST_TRAMP + i], 8);
		}
		if (mprotect(m, PAGE, PROT_READ | PROT_EXEC) != 0) {
			munmap(m, PAGE);
			return 0;
		}
		return (uintptr_t)m;
	}
	return 0;
}

int ftrt_arch_targets_near(uintptr_t near, const uintptr_t runtime[FTRT_T_N], uintptr_t targets[FTRT_T_N])
{
	uintptr_t p = 0;
	for (int i = 0; i < PAGES && pages[i] && !p; i++)
		if (reaches(pages[i], near))
			p = pages[i];
	if (!p) {
		int i = 0;
		while (i < PAGES && pages[i])
			i++;
		if (i == PAGES || !(p = page_new(near, runtime)))
			return -1;
		pages[i] = p;
	}
	targets[FTRT_T_FENTRY] = runtime[FTRT_T_FENTRY];
	targets[FTRT_T_MCOUNT] = runtime[FTRT_T_MCOUNT];
	for (int i = 0; i < NJUMPS; i++)
		targets[FTRT_T_FIRST_TRAMP + i] = p + (uintptr_t)i * JUMP;
	return 0;
}

/* An x86-64 area is the site: its NOPs at the function's entry (after
 * endbr64, which gcc puts before them). */
uintptr_t ftrt_arch_area_site(uintptr_t area)
{
	return area;
}

/*
 * What the PLT entry at t jumps to: the word in its GOT slot, for a
 * site whose call goes through the PLT (a program linked without the
 * runtime, its hook the preloaded runtime's: the loader binds the slot
 * to it, and the load-time pass binds a lazy one first, patch.c). The
 * entry's shapes: `ff 25 disp32` (jmp *slot(%rip): .plt, .plt.got),
 * behind endbr64 and a bnd prefix where the linker put them (.plt.sec).
 * 0 when t is no PLT entry inside the segment being walked, whose bytes
 * alone are read.
 */
uintptr_t ftrt_x86_plt_target(uintptr_t t)
{
	if (t < ftrt_walk_seg_lo || t >= ftrt_walk_seg_hi || ftrt_walk_seg_hi - t < 16)
		return 0;
	const unsigned char *p = (const unsigned char *)t;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) /* endbr64 */
		p += 4;
	if (*p == 0xf2) /* bnd */
		p++;
	if (p[0] != 0xff || p[1] != 0x25)
		return 0;
	int32_t d;
	memcpy(&d, p + 2, 4);
	return *(const uintptr_t *)((uintptr_t)p + 6 + (uintptr_t)(intptr_t)d);
}
