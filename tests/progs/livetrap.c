/*
 * The program's own SIGTRAP while sites change under it: a controller
 * thread disables and enables busy() through ftrace.h's API without a
 * pause, while two threads that block every signal call it, and main,
 * calling it too, raises SIGTRAP and runs an int3 of its own, ROUNDS
 * times each, first with a handler installed before the runtime took
 * SIGTRAP (sigaction, SA_SIGINFO, SIGUSR1 in its mask), then with one
 * installed after (signal), then with the first again, now with
 * SA_ONSTACK; then a forked child with SIGTRAP's default action raises it
 * and dies of it. Every trap must reach the program's handler, once, with
 * the mask and on the stack it asked for (main has an alternate signal
 * stack), and the SA_SIGINFO handler itself calls busy() (which may meet
 * it being changed):
 *
 *   before: raised N int3 N, USR1 blocked 2N, on the alternate stack 0
 *   action: the program's
 *   after: raised N int3 N
 *   onstack: raised N int3 N, USR1 blocked 2N, on the alternate stack 2N
 *   child: killed by signal 5
 *
 * stderr says how many times busy was toggled meanwhile ("toggles N").
 *
 * Built with -DUNTRACED (no runtime), the API is stubbed: the output is
 * what every traced run must print.
 *
 * On arm64 the program's own breakpoint is `brk #0`, which leaves the
 * PC at itself: the SA_SIGINFO handler steps over it, and signal()'s
 * handler, which has no context to do so with, gets raises alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "api.h"

#define NOINLINE __attribute__((noinline))
#define ROUNDS 3000

static volatile long raised, int3s, raised2, int3s2, masked, on_alt;
static char alt[1 << 16];
static atomic_int done;
static atomic_long toggles;
static volatile long sink;

NOINLINE long busy(long x) { return x * 5 + 1; }

#if defined(__aarch64__)
#define BREAKPOINT() __asm__ volatile("brk #0")
#define OWN_TRAP TRAP_BRKPT /* si_code of a brk */
#else
#define BREAKPOINT() __asm__ volatile("int3")
#define OWN_TRAP SI_KERNEL /* si_code of an int3 */
#endif

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	char here;
	sigset_t now;
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	masked += sigismember(&now, SIGUSR1);
	on_alt += (uintptr_t)&here >= (uintptr_t)alt && (uintptr_t)&here < (uintptr_t)alt + sizeof alt;
	sink += busy((long)&here);
	if (si->si_code == OWN_TRAP) {
		int3s++;
#if defined(__aarch64__)
		((ucontext_t *)uc)->uc_mcontext.pc += 4; /* past the brk */
#endif
	} else {
		raised++;
	}
}

/* signal()'s handler has no siginfo: it tells an int3 by a flag main sets. */
static volatile int expect_int3;
static void on_trap2(int sig)
{
	(void)sig;
	if (expect_int3)
		int3s2++;
	else
		raised2++;
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
	while (!atomic_load(&done)) {
		check(ftrace_disable_functions("busy"), "disable busy");
		check(ftrace_enable_functions("busy"), "enable busy");
		atomic_fetch_add(&toggles, 1);
	}
	return NULL;
}

NOINLINE void *blocked(void *arg)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* SIGTRAP too: the runtime keeps it out */
	long s = (long)arg;
	while (!atomic_load(&done))
		s += busy(s);
	sink += s;
	return NULL;
}

static void rounds(int sa)
{
	for (int i = 0; i < ROUNDS; i++) {
		sink += busy(i);
		raise(SIGTRAP);
		sink += busy(i);
#if defined(__aarch64__)
		if (!sa)
			continue;
#endif
		if (!sa)
			expect_int3 = 1;
		BREAKPOINT();
		expect_int3 = 0;
	}
}

int main(void)
{
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt };
	sigaltstack(&ss, NULL);
	struct sigaction a;
	memset(&a, 0, sizeof a);
	a.sa_sigaction = on_trap;
	a.sa_flags = SA_SIGINFO;
	sigaddset(&a.sa_mask, SIGUSR1);
	sigaction(SIGTRAP, &a, NULL);

	pthread_t c, b[2];
	pthread_create(&c, NULL, control, NULL);
	for (long i = 0; i < 2; i++)
		pthread_create(&b[i], NULL, blocked, (void *)i);
	while (atomic_load(&toggles) < 10) /* the sites are changing */
		sched_yield();
	rounds(1);
	printf("before: raised %ld int3 %ld, USR1 blocked %ld, on the alternate stack %ld\n", raised, int3s, masked, on_alt);

	struct sigaction now;
	sigaction(SIGTRAP, NULL, &now);
	printf("action: %s\n", (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_trap ? "the program's" : "another");

	signal(SIGTRAP, on_trap2);
	rounds(0);
	printf("after: raised %ld int3 %ld\n", raised2, int3s2);

	raised = int3s = masked = on_alt = 0;
	a.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGTRAP, &a, NULL);
	rounds(1);
	printf("onstack: raised %ld int3 %ld, USR1 blocked %ld, on the alternate stack %ld\n", raised, int3s, masked, on_alt);

	long during = atomic_load(&toggles);
	atomic_store(&done, 1);
	pthread_join(c, NULL);
	fprintf(stderr, "toggles %ld\n", during);
	for (int i = 0; i < 2; i++)
		pthread_join(b[i], NULL);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit none = { 0, 0 };
		setrlimit(RLIMIT_CORE, &none); /* no core file in the test's directory */
		signal(SIGTRAP, SIG_DFL);
		sink += busy(1);
		raise(SIGTRAP);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		printf("child: killed by signal %d\n", WTERMSIG(st));
	else
		printf("child: exit %d\n", WEXITSTATUS(st));
	return 0;
}
