/*
 * arm64's library-call stub (arch/libstub.h): bti c; movz/movk w17,
 * idx; ldr x16, entry; br x16, entry the page's last word. No graph
 * stub: a library call under function_graph takes the C entry, as a
 * site's call does on arm64.
 */
#include <string.h>

#include "arch/libstub.h"

void ftrt_arch_libstub(unsigned char *at, size_t size, uint32_t idx)
{
	uintptr_t page = (uintptr_t)at & ~(uintptr_t)(FTRT_LIBSTUB_PAGE - 1);
	uintptr_t ldr = (uintptr_t)at + 12; /* the ldr's own address */
	uint32_t imm19 = (uint32_t)(((page + FTRT_LIBPAGE_ENTRY) - ldr) >> 2) & 0x7ffff;
	uint32_t w[FTRT_LIBSTUB_SIZE / 4] = {
		0xd503245f,                            /* bti c */
		0x52800011 | ((idx & 0xffff) << 5),    /* movz w17, #lo */
		0x72a00011 | ((idx >> 16) << 5),       /* movk w17, #hi, lsl #16 */
		0x58000010 | (imm19 << 5),             /* ldr x16, entry */
		0xd61f0200,                            /* br x16 */
		0, 0, 0,                               /* udf #0: never run */
	};
	memcpy(at, w, sizeof w);
	if (size > sizeof w)
		memset(at + sizeof w, 0, size - sizeof w); /* udf #0 */
}

void ftrt_arch_libpage(unsigned char *page, uintptr_t entry)
{
	memcpy(page + FTRT_LIBPAGE_ENTRY, &entry, 8);
}

int ftrt_arch_libgraph(unsigned char *at, uint32_t idx, uintptr_t slot, uintptr_t function)
{
	(void)at, (void)idx, (void)slot, (void)function;
	return -1;
}
