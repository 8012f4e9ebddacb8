/*
 * Many calls on four threads, for the reader's memory test: each thread
 * runs fib(12) ROUNDS times. Prints the sum and each function's calls
 * (counted here, where they run),
 * which the trace must agree with.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static volatile long sink;
static long nleaf, nmid, nfib;

#define COUNT(n) __atomic_fetch_add(&n, 1, __ATOMIC_RELAXED)

__attribute__((noipa)) long leaf(long x)
{
	COUNT(nleaf);
	sink += x;
	return x * 3;
}

__attribute__((noipa)) long mid(long x)
{
	COUNT(nmid);
	return leaf(x) + leaf(x + 1);
}

__attribute__((noipa)) long fib(int n)
{
	COUNT(nfib);
	return n < 2 ? mid(n) : fib(n - 1) + fib(n - 2);
}

__attribute__((noipa)) long work(long rounds)
{
	long s = 0;
	for (long i = 0; i < rounds; i++)
		s += fib(12);
	return s;
}

static void *thread(void *rounds)
{
	return (void *)work((long)rounds);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], 0, thread, (void *)rounds);
	long s = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		s += (long)r;
	}
	printf("%ld\nfib %ld\nmid %ld\nleaf %ld\nwork %d\n", s, nfib, nmid, nleaf, THREADS);
	return 0;
}
