/*
 * Arguments and return values in the trace (FTRACE_ARGS, FTRACE_RETVAL):
 * integers, a pointer, strings (one too long, one at a bad address, one
 * that ends just before an unreadable page), doubles, a char, and a
 * struct passed by value (in two registers); more integer arguments
 * than registers, with a struct in memory (x86-64) or by reference
 * (arm64), a long double and a float after them; long double and struct
 * return values; return values of each kind; and a context's first
 * function, at the top of a stack with no page above it, asked for
 * stack arguments it does not have there. The test (TestArgs) runs it
 * traced with every item asked for and compares `ftpatch replay` with
 * testdata/args-graph.golden.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "attrs.h"


static volatile long zero;

struct pair {
	long x, y;
};

struct trio {
	long x, y, z;
};

NOINLINE int parse(int n, const char *s) { return n + (int)strlen(s) + (int)zero; }
NOINLINE double scale(double a, double b, long k) { return a * b + (double)k + (double)zero; }
NOINLINE long sum_pair(struct pair p) { return p.x + p.y + zero; }
NOINLINE const char *name_of(int k) { return k ? "one" : "zero"; }
NOINLINE char first(const char *s) { return s[0 + zero]; }
NOINLINE void *where(void *p) { return (char *)p + zero; }
NOINLINE int check(const char *s) { return s != 0 && zero == 0; }
NOINLINE int outer(int n) { return parse(n, "inner") * 2 + (int)zero; }
NOINLINE double stacked(long a, long b, long c, long d, long e, long f, long g, long h, long i, struct trio t, long double x, int j, float k)
{
	return (double)(a + b + c + d + e + f + g + h + i + t.x + t.y + t.z + j + zero) + (double)x + k;
}
NOINLINE long double halve(long double x) { return x / 2 + zero; }
NOINLINE struct pair pair_of(long x) { return (struct pair){ x, -x - zero }; }

static int top_ran;
NOINLINE void at_top(void) { top_ran = 7 + (int)zero; }

/* at_top as a context's function, on a stack whose top page has an
 * unreadable one above it. */
static void run_at_top(void)
{
	static ucontext_t back, top;
	char *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + 2 * 4096, 4096, PROT_NONE) != 0 || getcontext(&top) != 0)
		return;
	top.uc_stack.ss_sp = m;
	top.uc_stack.ss_size = 2 * 4096;
	top.uc_link = &back;
	makecontext(&top, at_top, 0);
	swapcontext(&back, &top);
}

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
	total += (long)stacked(1, 2, 3, 4, 5, 6, 7, 8, 9, (struct trio){ 10, 20, 30 }, 2.5L, -11, 0.75f);
	total += (long)halve(5.0L);
	total += pair_of(6).y;
	run_at_top();
	total += top_ran;
	printf("total %ld\n", total);
	return 0;
}
