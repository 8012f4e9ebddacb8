/*
 * A process for ftpatch record -p to attach to, as the attach issue
 * describes one: eight threads, six calling traced functions (alpha,
 * which calls beta, and gamma_) in a loop, one blocked in read on a
 * pipe, one sleeping 250 ms at a time in nanosleep (inside nap, a traced
 * function: a traced call is under way nearly always); the main thread reads
 * stdin until end of file. Each checks that what it did went on as if no
 * one had come: the read returns the bytes written to the pipe at the
 * end, never EINTR; each sleep lasts its whole time. A real-time signal
 * (SIGRTMIN, which queues: none is merged with another) is counted.
 *
 * The output is the same on every run given the same signals: the sum of
 * each worker's first ITERS results, what the reader and the sleeper
 * found, and the signals taken. It exits with status 3. stderr says how
 * many calls were made in all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define WORKERS 6
#define ITERS 20000

static volatile int done;
static volatile int rt;
static int pipefd[2];
static long sums[WORKERS], made[WORKERS];
static const char *read_said = "read not done", *sleep_said = "sleep not done";
static volatile long sink;

NOINLINE long beta(long x) { return x * 3 + 1; }
NOINLINE long alpha(long x) { return beta(x) ^ 9; }
NOINLINE long gamma_(long x) { return x + 11; }

/* One sleep, whole: 0, or 1 if it ended early or with an error. */
NOINLINE int nap(void)
{
	struct timespec a, b, d = { 0, 250 * 1000000 };
	clock_gettime(CLOCK_MONOTONIC, &a);
	int r = nanosleep(&d, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	long us = (b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
	return r != 0 || us < 250000;
}

static void on_rt(int sig)
{
	(void)sig;
	rt++;
}

static void *worker(void *arg)
{
	long id = (long)arg, s = 0, k = 0;
	for (; k < ITERS || !done; k++) {
		for (volatile int i = 0; i < 200; i++)
			;
		long v = alpha(k + id) + gamma_(k);
		if (k < ITERS)
			s += v;
		else
			sink += v;
	}
	sums[id] = s;
	made[id] = k;
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	char buf[16];
	ssize_t n = read(pipefd[0], buf, sizeof buf);
	read_said = n == 4 && memcmp(buf, "end\n", 4) == 0 ? "read ok" : n < 0 && errno == EINTR ? "read EINTR" : "read wrong";
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	/* A handler's return ends a nanosleep with EINTR, SA_RESTART or
	 * not: the signals are for the other threads. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	int bad = 0;
	while (!done)
		bad += nap();
	sleep_said = bad ? "sleep EINTR or short" : "sleep ok";
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_rt, .sa_flags = SA_RESTART };
	sigaction(SIGRTMIN, &sa, NULL);
	if (pipe(pipefd))
		return 1;
	pthread_t t[WORKERS + 2];
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	pthread_create(&t[WORKERS], NULL, reader, NULL);
	pthread_create(&t[WORKERS + 1], NULL, sleeper, NULL);
	char buf[64];
	while (read(0, buf, sizeof buf) > 0)
		;
	done = 1;
	if (write(pipefd[1], "end\n", 4) != 4)
		return 1;
	long total = 0, calls = 0;
	for (int i = 0; i < WORKERS + 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < WORKERS; i++)
		total += sums[i], calls += made[i];
	printf("total %ld\n%s\n%s\nrt %d\n", total, read_said, sleep_said, rt);
	fprintf(stderr, "made alpha %ld beta %ld gamma %ld\n", calls, calls, calls);
	return 3;
}
