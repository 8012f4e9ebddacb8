/*
 * The subtree filters (FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE): calls
 * made inside and outside chosen functions, and every way a call leaves
 * one. Function names say what a test expects when the program runs
 * under
 *
 *   FTRACE_GRAPH_FUNCS='c_*,!c_never'   FTRACE_GRAPH_NOTRACE='q_*'
 *
 *   c_*   chosen: recorded, with everything they call but what a q_*
 *         function calls (c_never is excluded from the choice: recorded
 *         only when called inside another c_* call)
 *   q_*   notrace: never recorded, nor anything they call, c_* included
 *   w_*   called only inside c_* calls (outside q_* ones): all recorded
 *   h_*   signal handlers and what they call: recorded when the signal
 *         came inside a c_* call (and outside q_* ones)
 *   o_*   called outside every c_* call, or inside a q_* call: never
 *         recorded
 *
 * In order: a chosen function called at three depths of unchosen calls;
 * recursion of a chosen function, directly and through an unchosen one;
 * a chosen function called inside another; notrace functions inside and
 * outside chosen ones, and a chosen one inside a notrace one; longjmp out
 * of a chosen call, and out of a notrace call inside a chosen one, the
 * calls it left seen at the next call, and at the return of the function
 * it went back to; signal handlers making traced calls inside a chosen
 * call (on the thread's stack and on an alternate one), outside, inside a
 * notrace call, and calling a chosen function themselves; a thread inside
 * a chosen call while another makes unchosen calls; a thread that ends
 * (pthread_exit) inside a notrace call inside a chosen one; last, a
 * coroutine (makecontext) that yields inside a chosen call while the main
 * stack makes unchosen calls, and is resumed. Prints what it computed;
 * exits with status 5.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "attrs.h"

static volatile long sink;
static jmp_buf jb;

NOINLINE long w_leaf(long x)
{
	sink += x;
	return x * 3 + 1;
}

NOINLINE long w_mid(long x)
{
	long r = w_leaf(x);
	sink += r;
	return r + 1;
}

NOINLINE long o_leaf(long x)
{
	sink += x;
	return x * 5 + 2;
}

/* Chosen, reached at every depth below. */
NOINLINE long c_at(long x)
{
	long r = w_mid(x);
	sink += r;
	return r;
}

NOINLINE long o_a(long x)
{
	long r = o_leaf(x) + c_at(x) + o_leaf(x + 1);
	sink += r;
	return r;
}

NOINLINE long o_b(long x)
{
	long r = o_a(x) + o_leaf(x);
	sink += r;
	return r;
}

/* Recursion: a chosen function calling itself, and through w_mut. */
NOINLINE long c_rec(long n)
{
	long r = n > 0 ? c_rec(n - 1) + 1 : w_leaf(n);
	sink += r;
	return r;
}

NOINLINE long c_mut(long n);

NOINLINE long w_mut(long n)
{
	long r = c_mut(n - 1) + 1;
	sink += r;
	return r;
}

NOINLINE long c_mut(long n)
{
	long r = n > 0 ? w_mut(n) : w_leaf(n);
	sink += r;
	return r;
}

/* A chosen function called inside another: still inside once it returns. */
NOINLINE long c_inner(long x)
{
	long r = w_leaf(x);
	sink += r;
	return r;
}

NOINLINE long c_outer(long x)
{
	long r = c_inner(x) + w_leaf(x + 1);
	sink += r;
	return r;
}

/* Excluded from the choice (!c_never). */
NOINLINE long c_never(long x)
{
	long r = x > 0 ? w_leaf(x) : o_leaf(x);
	sink += r;
	return r;
}

/* Notrace: nothing under it is recorded, chosen functions included. */
NOINLINE long q_quiet(long x)
{
	long r = o_leaf(x) + c_inner(x);
	sink += r;
	return r;
}

NOINLINE long c_sel(long x)
{
	long r = q_quiet(x) + w_leaf(x) + c_never(x);
	sink += r;
	return r;
}

/* Left by longjmp: a chosen call, and a notrace call inside a chosen one. */
NOINLINE void w_deep(long x)
{
	sink += x;
	longjmp(jb, 1);
}

NOINLINE void c_jump(long x)
{
	w_leaf(x);
	w_deep(x);
	sink += x;
}

NOINLINE void q_jump(long x)
{
	o_leaf(x);
	longjmp(jb, 2);
}

NOINLINE long c_host(long x)
{
	long r = 0;
	if (setjmp(jb) == 0)
		q_jump(x);
	else
		r = w_leaf(x); /* inside again, out of the notrace call */
	sink += r;
	return r;
}

/* The same, returning with no call after the jump: the return finds the
 * calls the jump left above it. */
NOINLINE void c_host2(long x)
{
	if (setjmp(jb) == 0)
		q_jump(x);
	sink += x;
}

NOINLINE void c_again(long x)
{
	if (setjmp(jb) == 0)
		c_jump(x);
	sink += x;
}

/* Signals. */
static volatile long handled;

NOINLINE long h_work(long x)
{
	sink += x;
	return x + 7;
}

NOINLINE void h_on_sig(int sig)
{
	handled += h_work(sig);
}

NOINLINE void h_on_chosen(int sig)
{
	handled += c_at(sig);
}

NOINLINE long c_sig(long x)
{
	raise(SIGUSR1); /* on the thread's stack */
	raise(SIGUSR2); /* on the alternate stack */
	long r = w_leaf(x);
	sink += r;
	return r;
}

NOINLINE long q_sig(long x)
{
	raise(SIGUSR1);
	return o_leaf(x);
}

/* Threads: one inside a chosen call while the other calls o_leaf. */
static pthread_barrier_t inside, done;

NOINLINE long c_thread(long x)
{
	long r = w_leaf(x);
	pthread_barrier_wait(&inside);
	pthread_barrier_wait(&done);
	r += w_leaf(x + 1);
	sink += r;
	return r;
}

NOINLINE void *o_start_chosen(void *arg)
{
	(void)arg;
	sink += c_thread(40);
	return NULL;
}

NOINLINE void *o_start_other(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&inside);
	sink += o_leaf(41) + o_leaf(42);
	pthread_barrier_wait(&done);
	return NULL;
}

/* A thread that ends inside a notrace call inside a chosen one: both
 * are left open, the notrace one never recorded. */
NOINLINE void q_exit(long x)
{
	o_leaf(x);
	pthread_exit(NULL);
}

NOINLINE void c_exit(long x)
{
	w_leaf(x);
	q_exit(x);
}

NOINLINE void *o_start_exit(void *arg)
{
	(void)arg;
	c_exit(43);
	return NULL;
}

/* A coroutine that yields inside a chosen call. */
static ucontext_t uc_main, uc_co;
static char co_stack[64 * 1024];

NOINLINE long c_co(long x)
{
	long r = w_leaf(x);
	swapcontext(&uc_co, &uc_main);
	r += w_leaf(x + 1);
	sink += r;
	return r;
}

NOINLINE void o_co(void)
{
	sink += o_leaf(50) + c_co(51) + o_leaf(52);
}

int main(void)
{
	long total = 0;

	/* A chosen function at depths 1, 2 and 3 of unchosen calls. */
	total += c_at(1) + o_a(2) + o_b(3) + o_leaf(4);

	/* Recursion. */
	total += c_rec(3) + c_mut(2) + o_leaf(5);

	/* Nested chosen calls; notrace; the excluded one outside. */
	total += c_outer(6) + c_sel(7) + q_quiet(8) + c_never(9) + o_leaf(10);

	/* longjmp out of a chosen call, then calls outside. */
	if (setjmp(jb) == 0)
		c_jump(11);
	total += o_leaf(12) + c_host(13) + o_leaf(14);
	c_host2(17);
	c_again(18);
	total += o_leaf(19) + c_at(20);

	/* Signal handlers. */
	stack_t ss = { .ss_sp = malloc(64 * 1024), .ss_size = 64 * 1024 };
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h_on_sig;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	total += c_sig(15);
	raise(SIGUSR1); /* outside */
	total += q_sig(16);
	sa.sa_handler = h_on_chosen;
	sa.sa_flags = 0;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1); /* a handler calling a chosen function, outside */

	/* Threads. */
	pthread_t a, b;
	pthread_barrier_init(&inside, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	pthread_create(&a, NULL, o_start_chosen, NULL);
	pthread_create(&b, NULL, o_start_other, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_create(&a, NULL, o_start_exit, NULL);
	pthread_join(a, NULL);

	/* The coroutine: it yields inside c_co, the main stack calls
	 * outside, then resumes it. */
	getcontext(&uc_co);
	uc_co.uc_stack.ss_sp = co_stack;
	uc_co.uc_stack.ss_size = sizeof co_stack;
	uc_co.uc_link = &uc_main;
	makecontext(&uc_co, o_co, 0);
	swapcontext(&uc_main, &uc_co);
	total += o_leaf(60) + c_at(61);
	swapcontext(&uc_main, &uc_co);
	total += o_leaf(62);

	printf("total %ld handled %ld sink %ld\n", total, handled, sink);
	return 5;
}
