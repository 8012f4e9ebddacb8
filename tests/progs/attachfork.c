/*
 * A process that forks while ftpatch record -p records it: a thread forks
 * a child every 100 ms until main reads end of file on its stdin; each
 * child calls alpha (which calls beta) in a loop for 300 ms, then exits
 * with status 0 through exit. The parent reaps them all and prints
 * "children ok" when every one exited 0, else how many did not; it
 * exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile int done;
static volatile long sink;
static int bad, made;

NOINLINE long beta(long x) { return x * 3 + 1; }
NOINLINE long alpha(long x) { return beta(x) ^ 9; }

static long ms_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000;
}

static void child(void)
{
	struct timespec a;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long k = 0; ms_since(&a) < 300; k++)
		sink += alpha(k);
	exit(0);
}

static void *forker(void *arg)
{
	(void)arg;
	while (!done) {
		pid_t p = fork();
		if (p == 0)
			child();
		if (p > 0)
			made++;
		struct timespec d = { 0, 100 * 1000000 };
		nanosleep(&d, NULL);
		int st;
		while ((p = waitpid(-1, &st, WNOHANG)) > 0)
			bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	int st;
	while (waitpid(-1, &st, 0) > 0)
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, forker, NULL);
	char buf[64];
	while (read(0, buf, sizeof buf) > 0)
		;
	done = 1;
	pthread_join(t, NULL);
	if (bad)
		printf("%d of the children failed\n", bad);
	else
		printf("children ok\n");
	fprintf(stderr, "forked %d\n", made);
	return 0;
}
