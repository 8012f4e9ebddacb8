/*
 * A multi-threaded program for ftpatch ctl to control: four threads call
 * alpha() (which calls beta()) and gamma() in a loop until main reads
 * end of file on its stdin; the first ITERS iterations of each make the
 * output, the same every run. stderr says how many calls were made:
 *
 *   made alpha N beta N gamma N
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define THREADS 4
#define ITERS 20000

static atomic_int done;
static atomic_long calls;
static volatile long sink;

NOINLINE long beta(long x) { return x * 3 + 1; }
NOINLINE long alpha(long x) { return beta(x) ^ 9; }
NOINLINE long gamma_(long x) { return x + 11; }

NOINLINE void *work(void *arg)
{
	long id = (long)arg, s = 0, k = 0;
	for (; k < ITERS || !atomic_load(&done); k++) {
		for (volatile int i = 0; i < 200; i++)
			;
		long v = alpha(k + id) + gamma_(k);
		if (k < ITERS)
			s += v;
		else
			sink += v;
	}
	atomic_fetch_add(&calls, k);
	return (void *)s;
}

int main(void)
{
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	char buf[64];
	while (read(0, buf, sizeof buf) > 0)
		;
	atomic_store(&done, 1);
	long total = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
	}
	printf("total %ld\n", total);
	long n = atomic_load(&calls);
	fprintf(stderr, "made alpha %ld beta %ld gamma %ld\n", n, n, n);
	return 4;
}
