/*
 * The trace's clock against the program's own: main calls leaf 2,000
 * times, reading the TSC just before and just after each call, and
 * prints the pairs to stderr ("tsc BEFORE AFTER", in call order); every
 * 100th call comes after 50 us of untraced spinning, more than a short
 * record's delta holds. Then outer calls leaf ten times, each a
 * millisecond after the one before (spun: gap has no site): under
 * FTRACE_THRESH=100us every call of leaf is taken back, and outer, 10 ms
 * long, stays. stdout says how many calls leaf had.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "attrs.h"

#define PAIRS 2000

static volatile long sink;
static uint64_t before[PAIRS], after[PAIRS];

NOINLINE void leaf(void) { sink++; }

static inline uint64_t tsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* us microseconds of CLOCK_MONOTONIC, spun, with no traced call. */
NOTRACE static void gap(long us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < us * 1000);
}

NOINLINE void outer(void)
{
	for (int i = 0; i < 10; i++) {
		gap(1000);
		leaf();
	}
}

int main(void)
{
	for (int i = 0; i < PAIRS; i++) {
		if (i % 100 == 99)
			gap(50);
		before[i] = tsc();
		leaf();
		after[i] = tsc();
	}
	outer();
	for (int i = 0; i < PAIRS; i++)
		fprintf(stderr, "tsc %llu %llu\n", (unsigned long long)before[i], (unsigned long long)after[i]);
	printf("leaf called %ld times\n", sink);
	return 0;
}
