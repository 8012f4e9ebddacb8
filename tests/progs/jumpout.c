/*
 * A signal handler that never returns: a timer sends the thread SIGALRM
 * at once and then every PERIOD_NS nanoseconds (50 us; qemu-user, which
 * runs the arm64 builds, falls over at that rate even untraced, and they
 * are built with a longer period), and its handler makes a traced call
 * and then siglongjmps back to the loop, which goes on where it was. A
 * handler that lands inside the tracer leaves it by that jump, so the
 * tracer must not stay taken for the rest of the run.
 *
 * stdout is the same every run. stderr gives the calls each function's
 * body began, and the jumps made, for a test to check the trace against:
 *
 *   made mid N leaf N hwork N jumps N
 *
 * A jump can cut a call after its entry was traced and before its body
 * counted it: each traced count lies between the made count and that
 * plus the jumps.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define N 400000
#ifndef PERIOD_NS
#define PERIOD_NS 50000
#endif

static sigjmp_buf env;
static volatile long i, mids, leaves, hworks, jumps;
static volatile long sink;

NOINLINE long leaf(long x)
{
	leaves++;
	return x * 3 + 1;
}

NOINLINE long mid(long x)
{
	mids++;
	return leaf(x) + leaf(x + 1);
}

NOINLINE long hwork(long x)
{
	hworks++;
	return x + 7;
}

NOINLINE void on_alarm(int sig)
{
	sink += hwork(sig);
	jumps++;
	siglongjmp(env, 1);
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGALRM;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) {
		perror("timer_create");
		return 2;
	}
	/* Every jump comes back here, and the loop goes on. The timer is
	 * armed only once the jump buffer is set, and its first signal comes
	 * at once: armed before, that signal would jump through an empty
	 * buffer, on every run rather than now and then. */
	if (sigsetjmp(env, 1) == 0) {
		struct itimerspec its = { { 0, PERIOD_NS }, { 0, 1 } };
		timer_settime(timer, 0, &its, NULL);
	}
	while (i < N) {
		sink += mid(i);
		i++;
	}
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, NULL); /* no jump back once done */
	timer_delete(timer);
	printf("done %ld\n", i);
	fprintf(stderr, "made mid %ld leaf %ld hwork %ld jumps %ld\n", mids, leaves, hworks, jumps);
	return 4;
}
