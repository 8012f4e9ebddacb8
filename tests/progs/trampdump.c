/*
 * Linked into test programs to show, from inside the process, what the
 * runtime wrote for function_graph: at exit, one line per site in the
 * table,
 *
 *     site ADDR LEN-INDEPENDENT-BYTES(8, hex)
 *
 * and, for a site that jumps (e9 rel32), the trampoline it reaches and
 * the two words its rip-relative call and jump read:
 *
 *     tramp ADDR BYTES(40, hex) ENTER-SLOT ENTER-VALUE LEAVE-SLOT LEAVE-VALUE
 *
 * with the run-time addresses of the runtime's two entry points and the
 * count of mappings both writable and executable:
 *
 *     hooks ENTER LEAVE
 *     wx N
 *
 * The test decodes the bytes with golang.org/x/arch; this file only
 * copies memory out (it knows where the two slots are from the layout
 * in entry.S, which the test checks against the decoded instructions).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wxmaps.h"

extern const uintptr_t __start___mcount_loc[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___mcount_loc[] __attribute__((weak, visibility("hidden")));
void ftrace_graph_enter(void);
void ftrace_graph_leave(void);

static void hex(FILE *f, const unsigned char *p, int n)
{
	for (int i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

static int32_t rel32(const unsigned char *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

__attribute__((destructor)) static void trampdump(void)
{
	FILE *f = stderr;
	for (const uintptr_t *e = __start___mcount_loc; e && e < __stop___mcount_loc; e++) {
		if (!*e)
			continue;
		const unsigned char *p = (const unsigned char *)*e;
		fprintf(f, "site %#lx ", (unsigned long)*e);
		hex(f, p, 8);
		fputc('\n', f);
		if (p[0] != 0xe9)
			continue;
		const unsigned char *t = p + 5 + rel32(p + 1);
		uintptr_t enter = (uintptr_t)(t + 13 + rel32(t + 9)), leave = (uintptr_t)(t + 30 + rel32(t + 26));
		fprintf(f, "tramp %#lx ", (unsigned long)(uintptr_t)t);
		hex(f, t, 40);
		fprintf(f, " %#lx %#lx %#lx %#lx\n", (unsigned long)enter, (unsigned long)*(const uintptr_t *)enter,
			(unsigned long)leave, (unsigned long)*(const uintptr_t *)leave);
	}
	fprintf(f, "hooks %#lx %#lx\n", (unsigned long)(uintptr_t)ftrace_graph_enter, (unsigned long)(uintptr_t)ftrace_graph_leave);
	long wx = wx_mappings();
	fprintf(f, "wx %ld\n", wx);
}
