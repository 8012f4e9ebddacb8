/*
 * arm64: the loader's debugger hook (arch/loader.h).
 *
 * glibc's _dl_debug_state is `ret`, after a `bti c` in a build with
 * branch protection (kept):
 *
 *   [d503245f]   bti c
 *   d65f03c0     ret                becomes  b page   (0x14000000 | imm26)
 *
 * One instruction for one: nothing else of the loader changes. The `b`
 * reaches ±128 MiB, so it goes to a page mapped within reach of the
 * loader:
 *
 *   +0  58000050   ldr x16, #8      (the slot below)
 *   +4  d61f0200   br  x16          (ftrt_loader_entry starts with bti c)
 *   +8  slot       ftrt_loader_entry
 *
 * x16 (IP0) is the one register changed on the way: a call may change
 * it anyway (a veneer's, a PLT entry's scratch register), so no caller
 * keeps a value in it across one. The page is written while private and
 * writable, then made read-only and executable, never written again.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/loader.h"
#include "arch/poke.h"

void (*ftrt_loader_call)(void);

#define PAGE 4096
#define REACH (128ll << 20)

static const uint32_t ret = 0xd65f03c0, bti_c = 0xd503245f;

/* A page of the jump to ftrt_loader_entry within a b's reach of a
 * (asked for above and below it, 8 MiB apart); 0 when none. */
static uintptr_t page_near(uintptr_t a)
{
	for (int k = 1; k < 24; k++) {
		int64_t step = (int64_t)(k / 2 + 1) * (8ll << 20);
		uintptr_t hint = ((k & 1) ? a + (uintptr_t)step : a - (uintptr_t)step) & ~(uintptr_t)(PAGE - 1);
		uint32_t *m = mmap((void *)hint, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			continue;
		int64_t d = (int64_t)((uintptr_t)m - a);
		if (d <= -REACH + PAGE || d >= REACH - PAGE) {
			munmap(m, PAGE);
			continue;
		}
		memset(m, 0, PAGE); /* udf #0 */
		m[0] = 0x58000050; /* ldr x16, #8 */
		m[1] = 0xd61f0200; /* br x16 */
		uintptr_t to = (uintptr_t)ftrt_loader_entry;
		memcpy(m + 2, &to, 8);
		__builtin___clear_cache((char *)m, (char *)m + 16);
		if (mprotect(m, PAGE, PROT_READ | PROT_EXEC) != 0) {
			munmap(m, PAGE);
			return 0;
		}
		return (uintptr_t)m;
	}
	return 0;
}

int ftrt_arch_loader_hook(uintptr_t brk, const char **why)
{
	const uint32_t *p = (const uint32_t *)brk;
	if (*p == bti_c)
		p++;
	if (*p != ret) {
		*why = "its function is not a ret alone";
		return -1;
	}
	uintptr_t page = page_near((uintptr_t)p);
	if (!page) {
		*why = "no page within reach of it";
		return -1;
	}
	int64_t off = (int64_t)(page - (uintptr_t)p) / 4;
	uint32_t b = 0x14000000u | ((uint32_t)off & 0x03ffffffu); /* b page */
	/* Verify, then modify: the instruction as read above, and as
	 * written. */
	if (*p != ret || ftrt_text_write((uintptr_t)p, &b, 4) != 0) {
		*why = ftrt_text_why() ? ftrt_text_why() : "its code cannot be written";
		munmap((void *)page, PAGE);
		return -1;
	}
	__builtin___clear_cache((char *)p, (char *)p + 4);
	if (*p != b) {
		*why = "its code was not written as asked"; /* the page stays: something may branch there */
		return -1;
	}
	return 0;
}
