/*
 * The edge cases of tracing, in one deterministic program: longjmp out of
 * graphed frames, a signal handler that calls traced functions, threads,
 * fork, recursion deeper than the runtime's shadow stack (1024), float,
 * double, long double, struct and four-double (arm64: vector register)
 * returns, varargs, and exit() called deep
 * in the graph. Prints what it computed; exits with status 3 from deep
 * inside a call chain.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static jmp_buf env;
static volatile sig_atomic_t handled;

NOINLINE int leaf(int x) { return x + 1; }

NOINLINE void jumper(int depth)
{
	if (depth == 0)
		longjmp(env, 7);
	jumper(depth - 1);
	leaf(depth); /* never reached */
}

NOINLINE int deep(int n) { return n == 0 ? leaf(0) : deep(n - 1) + 1; }

NOINLINE float fsq(float x) { return x * x; }
NOINLINE double dsq(double x) { return x * x; }
NOINLINE long double ldsq(long double x) { return x * x; }

struct big { long a, b, c, d; };
NOINLINE struct big mkbig(long x) { struct big b = { x, x + 1, x + 2, x + 3 }; return b; }
/* Four doubles: on arm64 a homogeneous aggregate, returned in d0-d3
 * (the vector registers return_to_handler must keep). */
struct quad { double a, b, c, d; };
NOINLINE struct quad mkquad(double x) { struct quad q = { x, x * 2, x * 3, x * 4 }; return q; }

NOINLINE long vsum(int n, ...)
{
	va_list ap;
	long s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, long);
	va_end(ap);
	return s;
}

NOINLINE void *deeper(void *arg)
{
	(void)arg;
	return (void *)(long)deep(3000);
}

NOINLINE void on_signal(int sig) { handled = leaf(sig); }

NOINLINE void *worker(void *arg)
{
	long k = (long)arg;
	return (void *)(long)(leaf((int)k) + deep(10));
}

/* pthread_exit deep in a call chain: glibc unwinds the thread's stack
 * (a forced unwind) through the graphed frames. */
NOINLINE void quit_deep(int n)
{
	if (n == 0)
		pthread_exit((void *)99);
	quit_deep(n - 1);
	leaf(n); /* never reached */
}

NOINLINE void *quitter(void *arg)
{
	(void)arg;
	quit_deep(4);
	return NULL;
}

NOINLINE void finish(int depth)
{
	if (depth == 0) {
		fflush(stdout);
		exit(3);
	}
	finish(depth - 1);
}

int main(void)
{
	int r = setjmp(env);
	if (r == 0)
		jumper(5);
	printf("longjmp %d\n", r);

	/* Deeper than the shadow stack, on a thread of its own: that thread
	 * stops graphing, the others go on. */
	pthread_t dt;
	void *dres;
	pthread_create(&dt, NULL, deeper, NULL);
	pthread_join(dt, &dres);
	printf("deep %ld\n", (long)dres);
	printf("float %.2f double %.2f long double %.2Lf\n", fsq(1.5f), dsq(2.5), ldsq(3.5L));
	struct big b = mkbig(10);
	printf("struct %ld %ld %ld %ld\n", b.a, b.b, b.c, b.d);
	struct quad h = mkquad(1.25);
	printf("quad %.2f %.2f %.2f %.2f\n", h.a, h.b, h.c, h.d);
	printf("varargs %ld\n", vsum(4, 1L, 2L, 3L, 4L));

	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	printf("signal %d\n", (int)handled);

	enum { NTHREADS = 8 };
	pthread_t t[NTHREADS];
	void *res[NTHREADS];
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	long sum = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], &res[i]);
		sum += (long)res[i];
	}
	printf("threads %ld\n", sum);

	pthread_t q;
	void *qres;
	pthread_create(&q, NULL, quitter, NULL);
	pthread_join(q, &qres);
	printf("pthread_exit %ld\n", (long)qres);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		printf("child %d\n", deep(5));
		fflush(stdout);
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("parent sees child exit %d\n", WEXITSTATUS(st));
	finish(4);
	return 0;
}
