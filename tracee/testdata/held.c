/*
 * A process for tracee's tests to hold, call into and release: eight
 * threads, two blocked in system calls (read on a pipe, nanosleeps of
 * 200 ms one after another), one
 * keeping values in vector registers across a spin, five calling a
 * function in a loop. Each checks that what it was doing went on as if
 * no one had come: the read returns the bytes written, never EINTR; the
 * sleep sleeps its whole time; the registers keep their values.
 *
 * It prints "ready VECTOR READER SLEEPER" (those threads' ids, on which
 * the test makes its calls), then waits for a line on stdin; then it ends its
 * threads and prints what each found, the SIGUSR1s it took and the
 * calls of probe made in it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile long probes;
static volatile int usr1;
static int pipefd[2];
static const char *results[8];
static volatile long reader_tid, sleeper_tid;
/* Threads that have begun: a thread starts with every signal blocked
 * (pthread_create's) until its start routine runs. */
static int begun;

/* What the test calls: counts, and returns a + strlen(s) (whose vector
 * code clobbers the caller's xmm registers, which the call must put
 * back). */
__attribute__((noinline)) long probe(long a, const char *s)
{
	probes++;
#ifdef __x86_64__
	/* As a function of the program may: the call must put them back. */
	__asm__ volatile("pxor %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9\n\tpxor %%xmm15, %%xmm15" ::: "xmm8", "xmm9", "xmm15");
#endif
	return a + (long)strlen(s);
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static void *reader(void *arg)
{
	(void)arg;
	reader_tid = syscall(SYS_gettid);
	__atomic_fetch_add(&begun, 1, __ATOMIC_RELEASE);
	char buf[16];
	ssize_t n = read(pipefd[0], buf, sizeof buf);
	results[0] = n == 6 && memcmp(buf, "hello\n", 6) == 0 ? "read ok" : n < 0 && errno == EINTR ? "read EINTR" : "read wrong";
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	sleeper_tid = syscall(SYS_gettid);
	/* A handler's return ends a nanosleep with EINTR, SA_RESTART or
	 * not: the SIGUSR1s are for the other threads. */
	sigset_t usr1set;
	sigemptyset(&usr1set);
	sigaddset(&usr1set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1set, NULL);
	__atomic_fetch_add(&begun, 1, __ATOMIC_RELEASE);
	int bad = 0;
	while (!stop) {
		struct timespec a, b, d = { 0, 200 * 1000000 };
		clock_gettime(CLOCK_MONOTONIC, &a);
		int r = nanosleep(&d, NULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
		bad += r != 0 || ms < 200;
	}
	results[1] = bad ? "sleep EINTR or short" : "sleep ok";
	return NULL;
}

#ifdef __x86_64__
/* xmm8-15 loaded with a pattern, spun on, checked each turn. */
static void *vectors(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&begun, __ATOMIC_ACQUIRE) < 7)
		usleep(1000);
	printf("ready %ld %ld %ld\n", (long)syscall(SYS_gettid), reader_tid, sleeper_tid);
	fflush(stdout);
	int bad = 0;
	static const unsigned long pat[2] = { 0x0123456789abcdefUL, 0xfedcba9876543210UL };
	__asm__ volatile("movdqu %0, %%xmm8\n\tmovdqa %%xmm8, %%xmm9\n\tmovdqa %%xmm8, %%xmm15" ::"m"(pat) : "xmm8", "xmm9", "xmm15");
	while (!stop) {
		unsigned long got[2], got15[2];
		__asm__ volatile("movdqu %%xmm9, %0\n\tmovdqu %%xmm15, %1" : "=m"(got), "=m"(got15));
		if (memcmp(got, pat, 16) || memcmp(got15, pat, 16))
			bad++;
	}
	results[2] = bad ? "vectors clobbered" : "vectors ok";
	return NULL;
}
#else
static void *vectors(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&begun, __ATOMIC_ACQUIRE) < 7)
		usleep(1000);
	printf("ready %ld %ld %ld\n", (long)syscall(SYS_gettid), reader_tid, sleeper_tid);
	fflush(stdout);
	while (!stop)
		;
	results[2] = "vectors ok";
	return NULL;
}
#endif

__attribute__((noinline)) static long work(long x)
{
	return x * 2654435761u % 1000003;
}

static void *worker(void *arg)
{
	long i = (long)arg, s = 0, n = 0;
	__atomic_fetch_add(&begun, 1, __ATOMIC_RELEASE);
	while (!stop)
		s += work(s + n++);
	results[i] = n > 0 && s != -1 ? "work ok" : "work wrong";
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	sigaction(SIGUSR1, &sa, NULL);
	if (pipe(pipefd))
		return 1;
	pthread_t t[8];
	pthread_create(&t[0], NULL, reader, NULL);
	pthread_create(&t[1], NULL, sleeper, NULL);
	for (long i = 3; i < 8; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	pthread_create(&t[2], NULL, vectors, NULL);
	char line[64];
	if (!fgets(line, sizeof line, stdin))
		return 1;
	if (write(pipefd[1], "hello\n", 6) != 6)
		return 1;
	stop = 1;
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 8; i++)
		printf("%s\n", results[i]);
	printf("usr1 %d\nprobes %ld\n", usr1, probes);
	return 0;
}
