/*
 * A program that dies of a fatal signal after many traced calls, for the
 * flight recorder (FTRACE_BUFFER=ring:SIZE): a second thread calls
 * spin() in a loop meanwhile; main calls leaf() CHURN times (argv[2],
 * default 400,000: more than a ring of 1 MiB holds), then
 * dying() -> last_words(), which dies as argv[1] says: "abort" (SIGABRT
 * by abort), "segv" (a store to address 0), or "exit" (exit(3): no
 * death, the rings written at exit).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static volatile long sink, sink2;
static atomic_int spinning;

NOINLINE long leaf(long x) { return x * 3 + 1; }

NOINLINE long spin(long x) { return x ^ 5; }

NOINLINE long churn(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += leaf(i);
	return s;
}

NOINLINE void *spinner(void *arg)
{
	long s = (long)arg;
	for (;;) {
		s += spin(s);
		sink2 = s; /* kept, so the calls are made */
		atomic_store_explicit(&spinning, 1, memory_order_relaxed);
	}
	return NULL;
}

NOINLINE void last_words(const char *how)
{
	if (strcmp(how, "abort") == 0)
		abort();
	if (strcmp(how, "exit") == 0)
		exit(3);
	*(volatile int *)(sink & 16) = 1; /* address 0: main cleared sink's bit 4 */
}

NOINLINE void dying(const char *how)
{
	sink += leaf(7);
	last_words(how);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "segv";
	pthread_t t;
	pthread_create(&t, NULL, spinner, NULL);
	sink = churn(argc > 2 ? atol(argv[2]) : 400000) & ~16L;
	while (!atomic_load(&spinning))
		;
	printf("about to %s\n", how);
	fflush(stdout);
	dying(how);
	return 0;
}
