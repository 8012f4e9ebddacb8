/*
 * x86-64's library-call stubs (arch/libstub.h): the ordinary stub,
 * endbr64; mov $idx, %r11d; jmp *entry(%rip); the graph stub, a
 * per-site graph trampoline's layout entered from a GOT slot; and the
 * page's words they go through.
 */
#include <string.h>

#include "abi.h"
#include "arch/libstub.h"
#include "arch/site.h"

/* The graph stub is a graph trampoline from LG_LEA on: each of its
 * instructions where the trampoline's is, so that ftrace_graph_enter's
 * shared body finds the hook (TRAMP_HOOK - TRAMP_ENTERED past its
 * return address) and ftrace_graph_leave is reached from it. */
_Static_assert(LG_LEA == LG_ENDBR + 4 && LG_SKIP == LG_LEA + TRAMP_SKIP && LG_ISLAND == LG_SKIP + 12 && LG_PAD == LG_ISLAND + 6 &&
		       LG_SLOT >= LG_PAD && LG_SLOT % 8 == 0 && LG_FUNC == LG_SLOT + 8 && LG_FUNC + 8 == FTRT_LIBGRAPH_SIZE,
	       "arch/libstub.h's graph stub: endbr 4 bytes, a trampoline to TRAMP_SKIP, mov 6, jmp 6, jmp 6, then its words");
_Static_assert(FTRT_LIBSTUBS_OF(FTRT_LIBGRAPH_SIZE) * FTRT_LIBGRAPH_SIZE <= FTRT_LIBPAGE_ENTER, "graph stubs overlap the page's words");

/* rel32 from the end of an instruction at from to to. */
static void put_rel(unsigned char *p, uintptr_t to, uintptr_t end)
{
	int32_t rel = (int32_t)(to - end);
	memcpy(p, &rel, 4);
}

void ftrt_arch_libstub(unsigned char *at, size_t size, uint32_t idx)
{
	uintptr_t page = (uintptr_t)at & ~(uintptr_t)(FTRT_LIBSTUB_PAGE - 1);
	unsigned char b[FTRT_LIBSTUB_SIZE] = {
		0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
		0x41, 0xbb, 0, 0, 0, 0, /* mov $idx, %r11d */
		0xff, 0x25, 0, 0, 0, 0, /* jmp *rel(%rip): the page's last word */
	};
	memcpy(b + 6, &idx, 4);
	put_rel(b + 12, page + FTRT_LIBPAGE_ENTRY, (uintptr_t)at + FTRT_LIBSTUB_SIZE);
	memcpy(at, b, sizeof b);
	if (size > sizeof b)
		memset(at + sizeof b, 0xcc, size - sizeof b); /* int3 (a libc call: not for every stub) */
}

void ftrt_arch_libpage(unsigned char *page, uintptr_t entry)
{
	uintptr_t w[FTRT_LIBSTUB_WORDS] = { ftrt_arch_entries.libgraph_enter, ftrt_arch_entries.graph_leave, entry };
	memcpy(page + FTRT_LIBPAGE_ENTER, w, sizeof w);
}

int ftrt_arch_libgraph(unsigned char *at, uint32_t idx, uintptr_t slot, uintptr_t function)
{
	if (!ftrt_arch_entries.libgraph_enter || !ftrt_arch_entries.graph_leave)
		return -1;
	uintptr_t a = (uintptr_t)at, page = a & ~(uintptr_t)(FTRT_LIBSTUB_PAGE - 1);
	unsigned char *t = at + LG_LEA; /* the trampoline's part, TRAMP_* from here */
	uintptr_t ta = a + LG_LEA;
	memset(at, 0xcc, FTRT_LIBGRAPH_SIZE);
	/* +0  endbr64 */
	at[0] = 0xf3, at[1] = 0x0f, at[2] = 0x1e, at[3] = 0xfa;
	/* +4  mov slot(%rip), %r11 */
	t[TRAMP_LEA] = 0x4c, t[TRAMP_LEA + 1] = 0x8b, t[TRAMP_LEA + 2] = 0x1d;
	put_rel(t + TRAMP_LEA + 3, a + LG_SLOT, ta + TRAMP_CALL_ENTER);
	/* +11 call *enter(%rip) */
	t[TRAMP_CALL_ENTER] = 0xff, t[TRAMP_CALL_ENTER + 1] = 0x15;
	put_rel(t + TRAMP_CALL_ENTER + 2, page + FTRT_LIBPAGE_ENTER, ta + TRAMP_ENTERED);
	/* +17 je +34 */
	t[TRAMP_ENTERED] = 0x74, t[TRAMP_ENTERED + 1] = TRAMP_SKIP - TRAMP_DROP;
	/* +19 add $8, %rsp */
	t[TRAMP_DROP] = 0x48, t[TRAMP_DROP + 1] = 0x83, t[TRAMP_DROP + 2] = 0xc4, t[TRAMP_DROP + 3] = 0x08;
	/* +23 call +46 */
	t[TRAMP_CALL_BODY] = 0xe8;
	put_rel(t + TRAMP_CALL_BODY + 1, a + LG_ISLAND, ta + TRAMP_HOOK);
	/* +28 jmp *leave(%rip) */
	t[TRAMP_HOOK] = 0xff, t[TRAMP_HOOK + 1] = 0x25;
	put_rel(t + TRAMP_HOOK + 2, page + FTRT_LIBPAGE_LEAVE, ta + TRAMP_SKIP);
	/* +34 mov $idx, %r11d; +40 jmp *entry(%rip) */
	at[LG_SKIP] = 0x41, at[LG_SKIP + 1] = 0xbb;
	memcpy(at + LG_SKIP + 2, &idx, 4);
	at[LG_SKIP + 6] = 0xff, at[LG_SKIP + 7] = 0x25;
	put_rel(at + LG_SKIP + 8, page + FTRT_LIBPAGE_ENTRY, a + LG_ISLAND);
	/* +46 jmp *function(%rip) */
	at[LG_ISLAND] = 0xff, at[LG_ISLAND + 1] = 0x25;
	put_rel(at + LG_ISLAND + 2, a + LG_FUNC, a + LG_PAD);
	/* +52 int3 (above); +64, +72 the words */
	memcpy(at + LG_SLOT, &slot, 8);
	memcpy(at + LG_FUNC, &function, 8);
	return 0;
}
