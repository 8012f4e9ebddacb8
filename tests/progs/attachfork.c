/*
 * A process that forks while ftpatch record -p records it: for its first
 * 1.5 s a thread forks a child every 100 ms; each child calls alpha
 * (which calls beta) in a loop until its parent ends (the pipe's write
 * end, which only the parent keeps, closes), then exits with status 0
 * through exit. main reads stdin until end of file, then closes the
 * pipe and reaps every child: it prints "children ok" when every one
 * exited 0, else how many did not, and exits 0.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define CHILDREN 15

static volatile long sink;
static int pipefd[2];

NOINLINE long beta(long x) { return x * 3 + 1; }
NOINLINE long alpha(long x) { return beta(x) ^ 9; }

static void child(void)
{
	close(pipefd[1]);
	for (long k = 0;; k++) {
		sink += alpha(k);
		struct pollfd p = { pipefd[0], POLLIN, 0 };
		if ((k & 1023) == 0 && poll(&p, 1, 0) > 0)
			exit(0); /* end of file: the parent has closed its end */
	}
}

static void *forker(void *arg)
{
	(void)arg;
	for (int i = 0; i < CHILDREN; i++) {
		if (fork() == 0)
			child();
		struct timespec d = { 0, 100 * 1000000 };
		nanosleep(&d, NULL);
	}
	return NULL;
}

int main(void)
{
	if (pipe(pipefd))
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, forker, NULL);
	char buf[64];
	while (read(0, buf, sizeof buf) > 0)
		;
	pthread_join(t, NULL);
	close(pipefd[1]);
	int st, bad = 0, n = 0;
	while (wait(&st) > 0)
		n++, bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	if (bad)
		printf("%d of the children failed\n", bad);
	else
		printf("children ok\n");
	fprintf(stderr, "forked %d\n", n);
	return 0;
}
