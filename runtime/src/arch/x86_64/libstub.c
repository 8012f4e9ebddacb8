/*
 * x86-64's library-call stub (arch/libstub.h): endbr64; mov $idx,
 * %r11d; jmp *entry(%rip), entry the page's last word.
 */
#include <string.h>

#include "arch/libstub.h"

void ftrt_arch_libstub(unsigned char *at, uint32_t idx)
{
	uintptr_t page = (uintptr_t)at & ~(uintptr_t)(FTRT_LIBSTUB_PAGE - 1);
	/* The jmp's displacement: from the end of the stub (at + 16) to
	 * the page's last word. */
	int32_t rel = (int32_t)((page + FTRT_LIBSTUB_PAGE - 8) - ((uintptr_t)at + FTRT_LIBSTUB_SIZE));
	unsigned char b[FTRT_LIBSTUB_SIZE] = {
		0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
		0x41, 0xbb, 0, 0, 0, 0, /* mov $idx, %r11d */
		0xff, 0x25, 0, 0, 0, 0, /* jmp *rel(%rip) */
	};
	memcpy(b + 6, &idx, 4);
	memcpy(b + 12, &rel, 4);
	memcpy(at, b, sizeof b);
}
