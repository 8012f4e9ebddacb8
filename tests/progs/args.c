/*
 * Arguments and return values in the trace (FTRACE_ARGS, FTRACE_RETVAL):
 * integers, a pointer, strings (one too long, one at a bad address, one
 * that ends just before an unreadable page), doubles, a char, and a
 * struct passed by value (in two registers); return values of each
 * kind. The test (TestArgs) runs it traced with every item asked for
 * and compares `ftpatch replay` with testdata/args-replay.golden.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "attrs.h"


static volatile long zero;

struct pair {
	long x, y;
};

NOINLINE int parse(int n, const char *s) { return n + (int)strlen(s) + (int)zero; }
NOINLINE double scale(double a, double b, long k) { return a * b + (double)k + (double)zero; }
NOINLINE long sum_pair(struct pair p) { return p.x + p.y + zero; }
NOINLINE const char *name_of(int k) { return k ? "one" : "zero"; }
NOINLINE char first(const char *s) { return s[0 + zero]; }
NOINLINE void *where(void *p) { return (char *)p + zero; }
NOINLINE int check(const char *s) { return s != 0 && zero == 0; }
NOINLINE int outer(int n) { return parse(n, "inner") * 2 + (int)zero; }

int main(void)
{
	long total = 0;
	total += parse(3, "abc");
	total += parse(1, "a string far longer than the ninety-six bytes the runtime keeps of any string it records, so it is cut short at ninety-six");
	total += check((const char *)16); /* a bad pointer, which check never reads */
	total += (long)scale(1.5, 4.0, 2);
	total += sum_pair((struct pair){ 7, 35 });
	total += (long)strlen(name_of(1));
	total += first("xyz");
	total += outer(4);
	/* A string that ends at the end of a page, an unreadable page after. */
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED) {
		mprotect(m + 4096, 4096, PROT_NONE);
		memcpy(m + 4096 - 4, "end", 4);
		total += parse(5, m + 4096 - 4);
	}
	total += where((void *)0x1000) != 0;
	printf("total %ld\n", total);
	return 0;
}
