/*
 * Signal handlers that make traced calls, at every instruction of the
 * tracer: eight threads call traced functions in a loop while each gets
 * SIGPROF from a timer of its own (every 50 us: 20 kHz),
 * whose handler makes traced calls too. The handler may nest (SA_NODEFER)
 * and, on half the threads, runs on an alternate signal stack placed
 * above the thread's own stack (SA_ONSTACK). Meanwhile threads are
 * created and exit, and threads fork children that make traced calls and
 * end by exit or _exit.
 *
 * stdout is the same every run: what the loops computed. stderr says how
 * many calls the loops made of each function (the same every run) and
 * how many the handlers made (which varies):
 *
 *   made main 1 work 8 short_lived N child N mid N leaf N
 *   handler on_prof N hwork N hleaf N
 *
 * so a test can check a trace's counts: the loops' functions exactly,
 * the handlers' as made less what the trace says it dropped.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

#define THREADS 8
#define ITERS 12000    /* loop iterations per thread */
#ifndef FORK_EVERY
#define FORK_EVERY 4000 /* a fork per this many iterations (more than ITERS: none) */
#endif
#define SPAWN_EVERY 3000 /* a short-lived thread per this many */
#ifndef PERIOD_NS
#define PERIOD_NS 50000 /* SIGPROF's period, per thread */
#endif
#ifndef STACK
#define STACK (256 * 1024) /* each thread's: nested handlers run there on the threads without an alternate stack */
#endif
#ifndef ALTSTACK
#define ALTSTACK (64 * 1024) /* nested handlers' frames: qemu's arm64 ones are larger, and need more */
#endif

static atomic_long hwork_calls, hleaf_calls;

NOINLINE long leaf(long x) { return x * 3 + 1; }

NOINLINE long mid(long x)
{
	long s = leaf(x) + leaf(x + 1);
	for (volatile int i = 0; i < 300; i++) /* time for a signal to land anywhere */
		s ^= i;
	return s;
}

NOINLINE long hleaf(long x) { return x + 7; }

NOINLINE long hwork(long x) { return hleaf(x) + hleaf(x ^ 1); }

/* Each loop thread's SIGPROF timer, and the handlers' nesting on it. */
static __thread timer_t timer;
static __thread volatile sig_atomic_t timing, depth;

/* arm: the next SIGPROF PERIOD_NS (50 us) from now, once. Inlined, as
 * armed is, at every optimisation level: the handler's calls are only
 * those its comment counts. */
static inline __attribute__((always_inline)) void arm(void)
{
	struct itimerspec its = { { 0, 0 }, { 0, PERIOD_NS } };
	if (timing)
		timer_settime(timer, 0, &its, NULL);
}

/* armed: whether a SIGPROF of the timer is still to come. */
static inline __attribute__((always_inline)) int armed(void)
{
	struct itimerspec its;
	return timing && timer_gettime(timer, &its) == 0 && (its.it_value.tv_sec || its.it_value.tv_nsec);
}

/* The handler's calls, counted as made: hwork once, hleaf twice.
 *
 * The timer is one-shot, armed again by each handler as it starts, so
 * the next signal can land anywhere in it, down to MAX_NEST handlers
 * deep, and by the outermost as it ends if none is to come. A periodic
 * timer let the kernel stack a frame per period on a thread kept off
 * its CPU, each at the handler's first instruction, until the 64 KB
 * alternate stack overflowed (SIGSEGV, untraced too). Here every signal
 * follows an arm counted in depth, so a thread holds at most MAX_NEST
 * handlers' frames. */
#define MAX_NEST 8
NOINLINE void on_prof(int sig)
{
	static __thread volatile long sink;
	if (++depth < MAX_NEST)
		arm();
	sink += hwork(sig);
	atomic_fetch_add(&hwork_calls, 1);
	atomic_fetch_add(&hleaf_calls, 2);
	if (depth == 1 && !armed())
		arm();
	depth--;
}

NOINLINE void *short_lived(void *arg)
{
	long s = 0;
	for (long i = 0; i < 50; i++)
		s += mid(i + (long)arg);
	return (void *)s;
}

/* A child of fork: traced calls, then an end of its own. */
NOINLINE int child(long seed, int how)
{
	long s = 0;
	for (long i = 0; i < 100; i++)
		s += mid(seed + i);
	int code = (int)(s & 0x3f);
	if (how)
		_exit(code);
	exit(code);
}

struct worker {
	int id;
	long sum;
	void *alt; /* alternate signal stack, above the thread's stack */
};

NOINLINE void *work(void *arg)
{
	struct worker *w = arg;
	if (w->alt) {
		stack_t ss = { .ss_sp = w->alt, .ss_size = ALTSTACK };
		if (sigaltstack(&ss, NULL) != 0) {
			perror("sigaltstack");
			exit(2);
		}
	}
	/* SIGPROF to this thread every PERIOD_NS (50 us), from a one-shot
	 * timer the handler arms again (on_prof): on CLOCK_MONOTONIC, since
	 * one on the thread's CPU time fires only at the scheduler's tick. */
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGPROF;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) {
		perror("timer_create");
		exit(2);
	}
	timing = 1;
	arm();
	long s = 0;
	for (long i = 0; i < ITERS; i++) {
		s += mid(i * THREADS + w->id);
		if (i % SPAWN_EVERY == SPAWN_EVERY - 1) {
			pthread_t t;
			void *r;
			pthread_create(&t, NULL, short_lived, (void *)i);
			pthread_join(t, &r);
			s += (long)r;
		}
		if (i % FORK_EVERY == FORK_EVERY - 1) {
			pid_t pid = fork();
			if (pid == 0)
				child(i + w->id, (int)(i / FORK_EVERY) & 1);
			int st;
			while (waitpid(pid, &st, 0) < 0)
				;
			s += WIFEXITED(st) ? WEXITSTATUS(st) : -1000;
		}
	}
	timing = 0; /* a handler still to run arms nothing */
	timer_delete(timer);
	w->sum = s;
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART | SA_NODEFER | SA_ONSTACK;
	sigaction(SIGPROF, &sa, NULL);

	/* Each thread's stack and, for the odd ones, its alternate signal
	 * stack just above it: a handler's frames then lie above every frame
	 * of the code it interrupted. */
	struct worker w[THREADS];
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		char *m = mmap(NULL, STACK + ALTSTACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstack(&a, m, STACK);
		w[i] = (struct worker){ .id = i, .alt = (i & 1) ? m + STACK : NULL };
		pthread_create(&t[i], &a, work, &w[i]);
		pthread_attr_destroy(&a);
	}
	/* Nothing printed until every thread is done: a child forked with
	 * output in the buffer would print it again at its exit. */
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	long total = 0;
	for (int i = 0; i < THREADS; i++) {
		printf("thread %d: %ld\n", i, w[i].sum);
		total += w[i].sum;
	}
	printf("total %ld\n", total);
	/* The loops' calls, children's included, from the constants. */
	long spawns = THREADS * (ITERS / SPAWN_EVERY), forks = THREADS * (ITERS / FORK_EVERY);
	long mids = (long)THREADS * ITERS + spawns * 50 + forks * 100;
	fprintf(stderr, "made main 1 work %d short_lived %ld child %ld mid %ld leaf %ld\n", THREADS, spawns, forks, mids,
		2 * mids);
	fprintf(stderr, "handler on_prof %ld hwork %ld hleaf %ld\n", atomic_load(&hwork_calls), atomic_load(&hwork_calls),
		atomic_load(&hleaf_calls));
	return 5;
}
