/*
 * x86-64: the loader's debugger hook (arch/loader.h).
 *
 * glibc's _dl_debug_state is `ret`, after an endbr64 in a CET build,
 * then the padding up to the next function's 16-byte boundary:
 *
 *   [f3 0f 1e fa]       endbr64 (kept)
 *   c3                  ret                     becomes  e9 rel32  jmp page
 *   66 66 2e 0f 1f ...  NOPs up to the boundary
 *
 * The jump takes the ret and four bytes of the padding, which no thread
 * runs (the ret comes first), so a shape with fewer than four bytes of
 * padding, or anything but NOPs in it, is refused. It jumps to a page
 * mapped within rel32 reach of the loader:
 *
 *   +0  ff 25 02 00 00 00   jmp *8(%rip)   (the slot below)
 *   +6  cc cc               never run
 *   +8  slot                ftrt_loader_entry
 *
 * A jump: ftrt_loader_entry finds the stack as the loader's call left
 * it, its return address on top, and returns for the ret. The page is
 * written while private and writable, then made read-only and
 * executable, never written again.
 */
#include <cpuid.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/loader.h"
#include "arch/poke.h"

void (*ftrt_loader_call)(void);
/* ftrt_loader_entry's save area: the XSAVE area's size (CPUID 0xd's for
 * the enabled features, in 64-byte units rounded up), or 0 for fxsave's
 * 512 bytes (no XSAVE). Set here before the hook is made. */
uint32_t ftrt_loader_xsave __attribute__((visibility("hidden")));

#define PAGE 4096

/* The length of the padding NOP at p that ends by end (90, cc, or
 * 0f 1f /0 with any addressing behind 66 prefixes and one 2e); 0 for
 * anything else. */
static int pad(const unsigned char *p, const unsigned char *end)
{
	const unsigned char *q = p;
	if (*q == 0x90 || *q == 0xcc) /* nop, int3 */
		return 1;
	while (q < end && *q == 0x66) /* data16 */
		q++;
	if (q < end && *q == 0x2e) /* cs */
		q++;
	if (end - q < 3 || q[0] != 0x0f || q[1] != 0x1f || (q[2] >> 3 & 7) != 0)
		return 0;
	unsigned mod = q[2] >> 6, rm = q[2] & 7;
	q += 3;
	if (mod != 3 && rm == 4) /* a SIB byte */
		q += 1 + (mod == 0 && q < end && (*q & 7) == 5 ? 4 : 0);
	if (mod == 0 && rm == 5)
		q += 4;
	else if (mod == 1)
		q += 1;
	else if (mod == 2)
		q += 4;
	return q <= end ? (int)(q - p) : 0;
}

/* A page of the jump to ftrt_loader_entry within rel32 reach of a
 * (asked for above and below it, 64 MiB apart); 0 when none. */
static uintptr_t page_near(uintptr_t a)
{
	for (int k = 1; k < 30; k++) {
		int64_t step = (int64_t)(k / 2 + 1) * (64ll << 20);
		uintptr_t hint = ((k & 1) ? a + (uintptr_t)step : a - (uintptr_t)step) & ~(uintptr_t)(PAGE - 1);
		unsigned char *m = mmap((void *)hint, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			continue;
		int64_t d = (int64_t)((uintptr_t)m - a);
		if (d <= -(1ll << 31) + PAGE || d >= (1ll << 31) - PAGE) {
			munmap(m, PAGE);
			continue;
		}
		memset(m, 0xcc, PAGE); /* int3 */
		static const unsigned char jmp[6] = { 0xff, 0x25, 0x02, 0x00, 0x00, 0x00 }; /* jmp *2(%rip): the slot at +8 */
		memcpy(m, jmp, sizeof jmp);
		uintptr_t to = (uintptr_t)ftrt_loader_entry;
		memcpy(m + 8, &to, 8);
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
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	const unsigned char *p = (const unsigned char *)brk;
	if (memcmp(p, endbr64, 4) == 0)
		p += 4;
	const unsigned char *end = (const unsigned char *)(((uintptr_t)p + 16) & ~(uintptr_t)15);
	if (p[0] != 0xc3 || end - p < 5) {
		*why = "its function is not a ret alone";
		return -1;
	}
	for (const unsigned char *q = p + 1; q < end;) {
		int n = pad(q, end);
		if (!n) {
			*why = "its function is not followed by padding";
			return -1;
		}
		q += n;
	}
	unsigned int a, b, c, d;
	if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && __get_cpuid_count(0xd, 0, &a, &b, &c, &d) && b >= 576)
		ftrt_loader_xsave = (b + 63) & ~63u;
	uintptr_t page = page_near((uintptr_t)p);
	if (!page) {
		*why = "no page within reach of it";
		return -1;
	}
	unsigned char old[5], jmp[5] = { 0xe9 }; /* jmp rel32 */
	memcpy(old, p, 5);
	int32_t rel = (int32_t)(int64_t)(page - ((uintptr_t)p + 5));
	memcpy(jmp + 1, &rel, 4);
	/* Verify, then modify: the bytes as read above, and as written. */
	if (memcmp(p, old, 5) != 0 || ftrt_text_write((uintptr_t)p, jmp, 5) != 0) {
		*why = ftrt_text_why() ? ftrt_text_why() : "its code cannot be written";
		munmap((void *)page, PAGE);
		return -1;
	}
	if (memcmp(p, jmp, 5) != 0) {
		*why = "its code was not written as asked"; /* the page stays: something may jump there */
		return -1;
	}
	return 0;
}
