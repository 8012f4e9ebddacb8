/*
 * Calls the functions of oddarm64.S and prints what they return; at exit
 * prints, for the test to read, the 16 bytes around each site of the
 * table (8 before it: a literal's slot, or padding; 8 from it), and how
 * many mappings are writable and executable:
 *
 *     site ADDR HEX(16 bytes from ADDR - 8)
 *     wx N
 *
 * Built without instrumentation: oddarm64.S's table lists every site.
 */
#include <stdint.h>
#include <stdio.h>

#include "wxmaps.h"

extern const uintptr_t __start___mcount_loc[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___mcount_loc[] __attribute__((weak, visibility("hidden")));

int odd_nop(void), odd_call(void), odd_area(void), odd_literal(void), odd_skew(void), odd_half(void), odd_other(void),
	odd_mov(void);

__attribute__((destructor)) static void dump(void)
{
	for (const uintptr_t *e = __start___mcount_loc; e && e < __stop___mcount_loc; e++) {
		const unsigned char *p = (const unsigned char *)*e - 8;
		fprintf(stderr, "site %#lx ", (unsigned long)*e);
		for (int i = 0; i < 16; i++)
			fprintf(stderr, "%02x", p[i]);
		fprintf(stderr, "\n");
	}
	long wx = wx_mappings();
	fprintf(stderr, "wx %ld\n", wx);
}

int main(void)
{
	printf("%d %d %d %d %d %d %d %d\n", odd_nop(), odd_call(), odd_area(), odd_literal(), odd_skew(), odd_half(), odd_other(),
	       odd_mov());
	return 0;
}
