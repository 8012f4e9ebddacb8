/*
 * Times a thread spends off the CPU inside known calls, for
 * tests/offcpu_test.go:
 *
 *   offcpu sleep    nap3() sleeps 3 x 10 ms (nanosleep)
 *   offcpu pipe     wait_pipe() blocks on a pipe another thread fills
 *                   after 20 ms
 *   offcpu preempt  spin() spins on one CPU while a sibling of higher
 *                   priority (SCHED_FIFO where permitted, else a nice
 *                   difference) takes the CPU 5 times for about 3 ms;
 *                   prints which it used
 *   offcpu wait     nap3(), then wait_input() reads its standard input to
 *                   its end (a snapshot of the flight recorder is taken
 *                   meanwhile), then nap3() again
 *   offcpu pingpong two threads pass a byte back and forth 50,000 times
 *                   through two pipes, each waiting for the other in
 *                   turn(): switches by the hundred thousand, on every
 *                   CPU at once
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };
	while (nanosleep(&ts, &ts) != 0)
		;
}

__attribute__((noinline)) void nap3(void)
{
	for (int i = 0; i < 3; i++)
		nap_ms(10);
}

static int fds[2];

static void *filler(void *arg)
{
	(void)arg;
	nap_ms(20);
	if (write(fds[1], "x", 1) != 1)
		_exit(3);
	return NULL;
}

__attribute__((noinline)) char wait_pipe(void)
{
	char c = 0;
	if (read(fds[0], &c, 1) != 1)
		_exit(4);
	return c;
}

static volatile int stop;

static long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The sibling: wakes five times and holds the CPU about 3 ms each. */
static void *hog(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++) {
		nap_ms(10);
		long end = now_us() + 3000;
		while (now_us() < end)
			for (volatile int k = 0; k < 1000; k++)
				;
	}
	stop = 1;
	return NULL;
}

__attribute__((noinline)) void spin(void)
{
	while (!stop)
		;
}

/* Both threads on the first CPU this process may use. */
static void one_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set)) {
			CPU_ZERO(&set);
			CPU_SET(c, &set);
			sched_setaffinity(0, sizeof set, &set);
			return;
		}
}

static int preempt(void)
{
	one_cpu();
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&at, SCHED_FIFO);
	struct sched_param sp = { .sched_priority = 1 };
	pthread_attr_setschedparam(&at, &sp);
	pthread_t t;
	const char *how = "fifo";
	if (pthread_create(&t, &at, hog, NULL) != 0) {
		/* Not permitted: this thread at the lowest priority instead. */
		how = "nice";
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
		if (pthread_create(&t, NULL, hog, NULL) != 0)
			return 5;
	}
	spin();
	pthread_join(t, NULL);
	printf("preempt %s\n", how);
	return 0;
}

__attribute__((noinline)) void wait_input(void)
{
	char buf[64];
	while (read(0, buf, sizeof buf) > 0)
		;
}

static int ab[2], ba[2];

__attribute__((noinline)) char turn(int in, int out)
{
	char c = 0;
	if (read(in, &c, 1) != 1 || write(out, &c, 1) != 1)
		_exit(7);
	return c;
}

static void *pong(void *arg)
{
	for (int i = 0; i < 50000; i++)
		turn(ab[0], ba[1]);
	return arg;
}

static int pingpong(void)
{
	pthread_t t;
	if (pipe(ab) || pipe(ba) || pthread_create(&t, NULL, pong, NULL))
		return 8;
	char c = 'x';
	for (int i = 0; i < 50000; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 9;
	pthread_join(t, NULL);
	printf("pingpong %c\n", c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "sleep")) {
		nap3();
		printf("slept\n");
		return 0;
	}
	if (!strcmp(argv[1], "pipe")) {
		pthread_t t;
		if (pipe(fds) != 0 || pthread_create(&t, NULL, filler, NULL) != 0)
			return 6;
		char c = wait_pipe();
		pthread_join(t, NULL);
		printf("read %c\n", c);
		return 0;
	}
	if (!strcmp(argv[1], "preempt"))
		return preempt();
	if (!strcmp(argv[1], "pingpong"))
		return pingpong();
	if (!strcmp(argv[1], "wait")) {
		nap3();
		wait_input();
		nap3();
		printf("waited\n");
		return 0;
	}
	return 2;
}
