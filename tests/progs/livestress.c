/*
 * Sites changed while threads run them: eight threads call traced
 * functions in a loop (steady, mid, leaf) while each gets SIGPROF from a
 * timer of its own every PERIOD_NS (50 us: 20 kHz), whose handler makes
 * traced calls (hwork, hleaf, and hflip, whose site changes too, met by
 * handlers that block every other signal: the runtime keeps SIGTRAP out
 * of their mask); meanwhile a controller thread disables and enables mid,
 * leaf and hflip through ftrace.h's API TOGGLES times each way, by name,
 * by a glob list and by the whole filter in turn. The workers
 * go on until the controller is done; their first ITERS iterations make
 * the output, the same every run.
 *
 * stderr says how many calls were made of each function (they vary with
 * how long the toggling took):
 *
 *   made steady N mid N leaf N             (mid's and leaf's with the children's)
 *   handler on_prof N hwork N hleaf N
 *   flipped hflip N
 *   toggles N
 *
 * so a test can check the trace: steady's calls all there (its site never
 * changes), mid's, leaf's and hflip's at most as made, the handlers'
 * others as made less what the trace dropped, every graphed call whole.
 *
 * Worker 0 forks a child now and then, whose exit status goes into the
 * output: 99 if a site of the child holds an int3 the parent's batch
 * left, 98 if the API failed in it.
 *
 * Built with -DUNTRACED (no runtime), the API is stubbed: the output is
 * what every traced run must print.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api.h"

#define NOINLINE __attribute__((noinline))

#define THREADS 8
#define ITERS 20000
#ifndef TOGGLES
#define TOGGLES 10000
#endif
#ifndef FORK_EVERY
#define FORK_EVERY 1000 /* worker 0 forks a child per this many iterations */
#endif
#ifndef PERIOD_NS
#define PERIOD_NS 50000
#endif

static atomic_long hwork_calls, hleaf_calls, hflip_calls, steady_calls, mid_calls;
static volatile long sink; /* the iterations past ITERS: kept, so their calls are made */
static atomic_int done;

NOINLINE long leaf(long x) { return x * 3 + 1; }

NOINLINE long mid(long x)
{
	long s = leaf(x) + leaf(x + 1);
	for (volatile int i = 0; i < 50; i++)
		s ^= i;
	return s;
}

NOINLINE long steady(long x) { return x ^ 0x55; }

NOINLINE long hleaf(long x) { return x + 7; }

NOINLINE long hwork(long x) { return hleaf(x) + hleaf(x ^ 1); }

NOINLINE long hflip(long x) { return x - 3; }

NOINLINE void on_prof(int sig)
{
	static __thread volatile long sink;
	int e = errno;
	sink += hwork(sig) + hflip(sig);
	atomic_fetch_add(&hwork_calls, 1);
	atomic_fetch_add(&hleaf_calls, 2);
	atomic_fetch_add(&hflip_calls, 1);
	errno = e;
}

/* A child of fork, made while sites change: no site of its may hold an
 * int3 (the runtime finishes the batch the parent was applying), and the
 * API works in it (the lock a parent's thread held is the child's to
 * take). Its exit status is what it computed, or 99 for an int3 seen,
 * 98 for a failed call of the API. */
NOINLINE void child(long seed)
{
#if defined(__x86_64__) /* arm64 changes a site by one word, with no breakpoint */
	const unsigned char *fns[] = { (const unsigned char *)mid, (const unsigned char *)leaf, (const unsigned char *)hflip };
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 8; k++)
			if (fns[i][k] == 0xcc)
				_exit(99);
#endif
	if (ftrace_disable_functions("hflip") < 0)
		_exit(98);
	long s = 0;
	for (long i = 0; i < 100; i++)
		s += mid(seed + i);
	_exit((int)(s & 0x3f));
}

NOINLINE void *work(void *arg)
{
	long id = (long)arg, s = 0, extra = 0, k = 0;
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGPROF;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) {
		perror("timer_create");
		exit(2);
	}
	struct itimerspec its = { { 0, PERIOD_NS }, { 0, PERIOD_NS } };
	timer_settime(timer, 0, &its, NULL);
	for (; k < ITERS || !atomic_load(&done); k++) {
		for (volatile int i = 0; i < 400; i++) /* time for a signal to land anywhere */
			;
		long v = mid(k * THREADS + id) + steady(k);
		if (id == 0 && k < ITERS && k % FORK_EVERY == FORK_EVERY - 1) {
			pid_t pid = fork();
			if (pid == 0)
				child(k);
			int st;
			while (waitpid(pid, &st, 0) < 0)
				;
			v += WIFEXITED(st) ? WEXITSTATUS(st) : -1000;
			atomic_fetch_add(&mid_calls, 100); /* the child's */
		}
		if (k < ITERS)
			s += v;
		else
			extra += v;
	}
	timer_delete(timer);
	atomic_fetch_add(&mid_calls, k);
	atomic_fetch_add(&steady_calls, k);
	sink += extra;
	return (void *)s;
}

static void check(int r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "%s: %s (%s)\n", what, strerror(errno), ftrace_error());
		exit(3);
	}
}

NOINLINE void *control(void *arg)
{
	(void)arg;
	for (int k = 0; k < TOGGLES; k++) {
		switch (k % 3) {
		case 0:
			check(ftrace_disable_functions("mid"), "disable mid");
			check(ftrace_enable_functions("mid"), "enable mid");
			break;
		case 1:
			check(ftrace_disable_functions("mid,leaf,hflip"), "disable mid,leaf,hflip");
			check(ftrace_enable_functions("le*,mi?,hfl*"), "enable le*,mi?,hfl*");
			break;
		default:
			check(ftrace_set_functions("!mid,!leaf,!hflip"), "set !mid,!leaf,!hflip");
			check(ftrace_set_functions(""), "set everything");
		}
	}
	atomic_store(&done, 1);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART | SA_NODEFER;
	sigfillset(&sa.sa_mask); /* SIGTRAP too: the runtime keeps it out */
	sigdelset(&sa.sa_mask, SIGPROF);
	sigaction(SIGPROF, &sa, NULL);

	pthread_t t[THREADS], c;
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	pthread_create(&c, NULL, control, NULL);
	long total = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		printf("thread %d: %ld\n", i, (long)r);
		total += (long)r;
	}
	pthread_join(c, NULL);
	printf("total %ld\n", total);
	long mids = atomic_load(&mid_calls);
	fprintf(stderr, "made steady %ld mid %ld leaf %ld\n", atomic_load(&steady_calls), mids, 2 * mids);
	fprintf(stderr, "handler on_prof %ld hwork %ld hleaf %ld\n", atomic_load(&hwork_calls), atomic_load(&hwork_calls),
		atomic_load(&hleaf_calls));
	fprintf(stderr, "flipped hflip %ld\n", atomic_load(&hflip_calls));
	fprintf(stderr, "toggles %d\n", TOGGLES);
	return 7;
}
