/*
 * Linked into test programs to check, from inside the process, what the
 * runtime's load-time pass left: at exit, every site listed in the table
 * must hold a NOP (x86-64: P6 `0f 1f 44 00 xx` or `66 0f 1f 44 00 00`,
 * or a fallback: K8 `66 .. 90`, or a jump over padding; arm64: `nop`),
 * and no mapping may be
 * both writable and executable. Prints one
 * line to stderr for the test to read; changes nothing else.
 */
#include <stdio.h>
#include <string.h>

#include "wxmaps.h"

extern const unsigned long __start___mcount_loc[] __attribute__((weak, visibility("hidden")));
extern const unsigned long __stop___mcount_loc[] __attribute__((weak, visibility("hidden")));

#if defined(__aarch64__)
/* arm64: nop (hint #0), at a -pg site and as a patchable area's first
 * word alike. */
static int is_nop(const unsigned char *p)
{
	unsigned int w;
	memcpy(&w, p, 4);
	return w == 0xd503201fu;
}
#else
static int is_nop(const unsigned char *p)
{
	static const unsigned char nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }; /* P6 */
	static const unsigned char k8[5] = { 0x66, 0x66, 0x66, 0x66, 0x90 };         /* K8, 5 (or 6 with one more 66) */
	return (p[0] == 0x0f && p[1] == 0x1f && p[2] == 0x44 && p[3] == 0x00) || memcmp(p, nop6, 6) == 0 ||
	       memcmp(p, k8, 5) == 0 || memcmp(p + 1, k8, 5) == 0 ||
	       (p[0] == 0xeb && (p[1] == 3 || p[1] == 4) && p[2] == 0x90); /* jump over padding */
}
#endif

__attribute__((destructor)) static void sitecheck(void)
{
	long sites = 0, nops = 0, other = 0, wx = 0;
	for (const unsigned long *e = __start___mcount_loc; e && e < __stop___mcount_loc; e++) {
		if (!*e)
			continue;
		sites++;
		const unsigned char *p = (const unsigned char *)*e;
		if (is_nop(p))
			nops++;
		else {
			other++;
			fprintf(stderr, "sitecheck: site %p holds %02x %02x %02x %02x %02x %02x\n", (void *)p, p[0], p[1], p[2], p[3], p[4], p[5]);
		}
	}
	wx = wx_mappings();
	fprintf(stderr, "sitecheck: %ld sites, %ld nops, %ld other, %ld writable code mappings\n", sites, nops, other, wx);
}
