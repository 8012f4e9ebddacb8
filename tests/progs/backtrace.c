/*
 * backtrace through traced frames: main calls outer, outer middle,
 * middle inner, which walks the stack with backtrace and prints the
 * function of each frame, by its dynamic symbol, up to main. Untraced
 * and under either tracer the output is the same: function_graph's
 * hooks in the frames' return slots must not show, nor stop the walk.
 * Then the calls return as they would (the printed sum) and a second
 * walk, from deeper, sees the same.
 *
 * Build (tests/backtrace_test.go): cc -O2 [instrumentation] -c
 * backtrace.c; recordmcount; link with -rdynamic (the names) and the
 * runtime's flags.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <string.h>

#include "attrs.h"

NOINLINE void walk(const char *label)
{
	void *frames[64];
	int n = backtrace(frames, 64);
	printf("%s:", label);
	for (int i = 0; i < n; i++) {
		Dl_info info;
		const char *name = dladdr(frames[i], &info) && info.dli_sname ? info.dli_sname : "?";
		printf(" %s", name);
		if (strcmp(name, "main") == 0)
			break;
	}
	printf("\n");
}

NOINLINE int inner(int x)
{
	walk("inner");
	return x * 3;
}

NOINLINE int middle(int x)
{
	return inner(x + 1) + 2;
}

NOINLINE int outer(int x)
{
	return middle(x + 1) * 2;
}

NOINLINE int deeper(int n)
{
	if (n == 0) {
		walk("deeper");
		return 1;
	}
	volatile int below = deeper(n - 1); /* no accumulator: the recursion stays */
	return below + n;
}

int main(void)
{
	int r = outer(1);
	r += outer(2);
	r += deeper(3);
	printf("sum %d\n", r);
	return 0;
}
