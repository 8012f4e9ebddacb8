/*
 * What the live API writes into the sites, shown from inside the
 * process: after each step, one line per site in the table,
 *
 *     STEP ADDR BYTES(8, hex)
 *
 * and the count of mappings both writable and executable ("wx STEP N");
 * first, f1's run-time address ("f1 ADDR": the test's load bias).
 * The steps: start (as the load-time pass left the sites), function
 * (ftrace_set_tracer("function"): function_graph's jumps to per-site
 * trampolines moved to the caller), off (every function disabled), on
 * (every function enabled again). The test decodes the bytes with
 * golang.org/x/arch.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ftrace.h>

#include "wxmaps.h"

extern const uintptr_t __start___mcount_loc[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___mcount_loc[] __attribute__((weak, visibility("hidden")));

__attribute__((noinline)) int f1(int x) { return x + 1; }
__attribute__((noinline)) int f2(int x) { return f1(x) * 2; }

static void dump(const char *step)
{
	for (const uintptr_t *e = __start___mcount_loc; e && e < __stop___mcount_loc; e++) {
		if (!*e)
			continue;
		const unsigned char *p = (const unsigned char *)*e;
		printf("%s %#lx ", step, (unsigned long)*e);
		for (int i = 0; i < 8; i++)
			printf("%02x", p[i]);
		printf("\n");
	}
	printf("wx %s %ld\n", step, wx_mappings());
}

static void must(int r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", what, ftrace_error());
		exit(3);
	}
}

int main(void)
{
	int s = f2(1);
	printf("f1 %#lx\n", (unsigned long)(uintptr_t)f1);
	dump("start");
	must(ftrace_set_tracer("function"), "tracer function");
	s += f2(2);
	dump("function");
	must(ftrace_disable_functions("*"), "disable *");
	s += f2(3);
	dump("off");
	must(ftrace_enable_functions("*"), "enable *");
	s += f2(4);
	dump("on");
	return s == 4 + 6 + 8 + 10 ? 0 : 1;
}
