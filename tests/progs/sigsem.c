/*
 * A program's own handlers of the signals the flight recorder watches
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT), each scenario as argv[1]
 * says; it prints what its handlers saw (the mask they ran with, the
 * stack they ran on, what sigaction reads back) and ends as the
 * scenario does. Traced under FTRACE_BUFFER=ring:SIZE it must print the
 * same and end the same (TestSignalSemantics):
 *
 *   nodefer    SA_NODEFER, left by longjmp: every one of 5 faults recovers
 *   defer      no SA_NODEFER, left by longjmp (the mask not restored):
 *              SIGSEGV stays blocked, and the next fault kills
 *   siglongjmp no SA_NODEFER, left by siglongjmp: 5 faults recover
 *   resethand  SA_RESETHAND: the action reads back as the default in the
 *              handler, which returns: the fault again kills
 *   altstack   with an alternate stack, handlers without SA_ONSTACK run
 *              on the thread's stack, with it on the alternate one
 *   mask       sa_mask blocks what it names in the handler, which
 *              unblocks one of them (sigprocmask) and takes it there
 *   siginfo    SA_SIGINFO: the fault's address and code
 *   restart    SA_RESETHAND with and without SA_RESTART: a read that
 *              SIGBUS interrupts is restarted, or fails with EINTR
 *   early      handlers set before main (a .preinit_array entry of the
 *              program's, and a constructor) read back and run
 *   later      a handler, then SIG_IGN (a sent SIGSEGV ignored), then
 *              SIG_DFL: the fault kills
 *   chain      a handler that puts the default back and raises: killed
 *   abort      a SIGABRT handler that returns: abort kills
 *   fpe        SIGFPE and SIGILL handlers, recovering
 *
 * The scenarios' calls of work() and crash() are traced.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attrs.h"

static int *volatile bad;       /* address 0: a store to it faults */
static volatile long sink;
static sigjmp_buf env;
static volatile int hits;

NOINLINE long work(long x) { return x * 7 + sink; }
NOINLINE void crash(int v) { *bad = v + (int)work(v); }

static int blocked(int sig)
{
	sigset_t cur;
	sigprocmask(SIG_SETMASK, NULL, &cur);
	return sigismember(&cur, sig);
}

static void on(int sig, void (*h)(int), int flags, const sigset_t *mask)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = flags;
	if (mask)
		sa.sa_mask = *mask;
	else
		sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0)
		perror("sigaction");
}

/* What sigaction reads back of sig: its handler's name, flags, mask. */
static void show(const char *what, int sig, void (*mine)(int))
{
	struct sigaction sa;
	sigaction(sig, NULL, &sa);
	const char *h = sa.sa_handler == SIG_DFL ? "default" : sa.sa_handler == SIG_IGN ? "ignore" : sa.sa_handler == mine ? "mine" : "other";
	printf("%s: %s flags", what, h);
	static const struct {
		int flag;
		const char *name;
	} fl[] = { { SA_NODEFER, "NODEFER" }, { SA_RESETHAND, "RESETHAND" }, { SA_ONSTACK, "ONSTACK" },
		   { SA_RESTART, "RESTART" }, { SA_SIGINFO, "SIGINFO" } };
	for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++)
		if (sa.sa_flags & fl[i].flag)
			printf(" %s", fl[i].name);
	printf(" mask USR1 %d USR2 %d\n", sigismember(&sa.sa_mask, SIGUSR1), sigismember(&sa.sa_mask, SIGUSR2));
}

static void jump_out(int sig)
{
	(void)sig;
	hits++;
	longjmp(*(jmp_buf *)&env, 1); /* glibc's longjmp restores no mask setjmp did not save */
}

static void sigjump_out(int sig)
{
	(void)sig;
	hits++;
	siglongjmp(env, 1);
}

/* Fault n times, each recovered by a jump out of the handler (the mask
 * saved or not); the faults recovered. */
static int faults(int n, int savemask)
{
	hits = 0;
	for (int i = 0; i < n; i++)
		if (sigsetjmp(env, savemask) == 0)
			crash(i);
	return hits;
}

static int nodefer(void)
{
	on(SIGSEGV, jump_out, SA_NODEFER, NULL);
	show("action", SIGSEGV, jump_out);
	int n = faults(5, 0);
	printf("recovered %d, SIGSEGV blocked %d\n", n, blocked(SIGSEGV));
	return 0;
}

static int defer(void)
{
	on(SIGSEGV, jump_out, 0, NULL);
	int n = faults(1, 0);
	printf("recovered %d, SIGSEGV blocked %d\n", n, blocked(SIGSEGV));
	fflush(stdout);
	faults(1, 0); /* blocked: the kernel kills */
	printf("survived a blocked fault\n");
	return 0;
}

static int sigjump(void)
{
	on(SIGSEGV, sigjump_out, 0, NULL);
	int n = faults(5, 1);
	printf("recovered %d, SIGSEGV blocked %d\n", n, blocked(SIGSEGV));
	return 0;
}

static void reset_seen(int sig)
{
	struct sigaction sa;
	sigaction(sig, NULL, &sa);
	printf("handler: SIGSEGV blocked %d, action now %s\n", blocked(SIGSEGV), sa.sa_handler == SIG_DFL ? "default" : "not default");
	fflush(stdout);
}

static int resethand(void)
{
	on(SIGSEGV, reset_seen, SA_RESETHAND, NULL);
	show("action", SIGSEGV, reset_seen);
	fflush(stdout);
	crash(1); /* the handler returns, the store faults again: killed */
	printf("survived\n");
	return 0;
}

static char *alt;
static volatile int on_alt;

static void where(int sig)
{
	char here;
	(void)sig;
	on_alt = (uintptr_t)&here >= (uintptr_t)alt && (uintptr_t)&here < (uintptr_t)alt + SIGSTKSZ * 4;
	siglongjmp(env, 1);
}

static int altstack(void)
{
	alt = malloc(SIGSTKSZ * 4);
	stack_t ss = { .ss_sp = alt, .ss_size = SIGSTKSZ * 4 };
	if (!alt || sigaltstack(&ss, NULL) != 0)
		return 1;
	static const int flags[] = { 0, SA_ONSTACK, SA_NODEFER, SA_ONSTACK | SA_NODEFER };
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		on(SIGSEGV, where, flags[i], NULL);
		on_alt = -1;
		faults(1, 1);
		printf("ONSTACK %d NODEFER %d: on the alternate stack %d\n", !!(flags[i] & SA_ONSTACK), !!(flags[i] & SA_NODEFER), on_alt);
	}
	return 0;
}

static volatile int usr2;
static void on_usr2(int sig) { (void)sig; usr2++; }

static void masked(int sig)
{
	(void)sig;
	printf("in the handler: USR1 %d USR2 %d SEGV %d\n", blocked(SIGUSR1), blocked(SIGUSR2), blocked(SIGSEGV));
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	raise(SIGUSR2); /* held: blocked */
	printf("USR2 taken while blocked %d\n", usr2);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	printf("USR2 taken once unblocked %d\n", usr2);
	siglongjmp(env, 1);
}

static int mask(void)
{
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigaddset(&m, SIGUSR2);
	on(SIGUSR2, on_usr2, 0, NULL);
	on(SIGSEGV, masked, 0, &m);
	show("action", SIGSEGV, masked);
	faults(1, 1);
	printf("after: USR1 %d USR2 %d SEGV %d\n", blocked(SIGUSR1), blocked(SIGUSR2), blocked(SIGSEGV));
	return 0;
}

static void infos(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	printf("signal %d code %d address %p\n", sig, si->si_code, si->si_addr);
	siglongjmp(env, 1);
}

static int siginfo(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = infos;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	bad = (int *)(uintptr_t)0x10;
	faults(1, 1);
	return 0;
}

static int fds[2];
static pid_t main_tid;

static void interrupted(int sig) { (void)sig; hits++; }

/* Wait until main sleeps (in its read), then send it SIGBUS, then,
 * later, give its read a byte. */
static void *interrupter(void *arg)
{
	(void)arg;
	char path[64], st[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)main_tid);
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(st, 1, sizeof st - 1, f) : 0;
		if (f)
			fclose(f);
		st[n] = 0;
		char *p = strrchr(st, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			break;
		usleep(1000);
	}
	syscall(SYS_tgkill, getpid(), main_tid, SIGBUS);
	usleep(100000);
	if (write(fds[1], "x", 1) != 1)
		perror("write");
	return NULL;
}

static int restart(void)
{
	main_tid = (pid_t)syscall(SYS_gettid);
	static const int flags[] = { SA_RESETHAND, SA_RESETHAND | SA_RESTART };
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		char c;
		pthread_t t;
		if (pipe(fds) != 0)
			return 1;
		on(SIGBUS, interrupted, flags[i], NULL);
		hits = 0;
		pthread_create(&t, NULL, interrupter, NULL);
		ssize_t n = read(fds[0], &c, 1);
		int e = errno;
		pthread_join(t, NULL);
		printf("RESTART %d: read %zd%s, handler ran %d\n", !!(flags[i] & SA_RESTART), n, n < 0 && e == EINTR ? " (EINTR)" : "", hits);
		close(fds[0]);
		close(fds[1]);
	}
	return 0;
}

static void early_segv(int sig) { jump_out(sig); }
static void early_bus(int sig) { sigjump_out(sig); }

/* Before the runtime's load-time pass: the program's own .preinit_array
 * entries run first. */
static void preinit(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc > 1 && strcmp(argv[1], "early") == 0)
		on(SIGSEGV, early_segv, SA_NODEFER, NULL);
}
__attribute__((used, section(".preinit_array"))) static void (*preinit_entry)(int, char **, char **) = preinit;

__attribute__((constructor)) static void ctor(void)
{
	on(SIGBUS, early_bus, SA_ONSTACK, NULL);
}

static int early(void)
{
	show("SIGSEGV, set before the runtime", SIGSEGV, early_segv);
	show("SIGBUS, set by a constructor", SIGBUS, early_bus);
	printf("recovered %d\n", faults(3, 0));
	hits = 0;
	for (int i = 0; i < 3; i++)
		if (sigsetjmp(env, 1) == 0)
			raise(SIGBUS);
	printf("SIGBUS taken %d\n", hits);
	return 0;
}

static int later(void)
{
	on(SIGSEGV, sigjump_out, 0, NULL);
	printf("recovered %d\n", faults(2, 1));
	printf("was %s\n", signal(SIGSEGV, SIG_IGN) == sigjump_out ? "mine" : "not mine");
	show("ignored", SIGSEGV, sigjump_out);
	raise(SIGSEGV);
	printf("a sent SIGSEGV ignored\n");
	printf("was %s\n", signal(SIGSEGV, SIG_DFL) == SIG_IGN ? "ignored" : "not ignored");
	show("default", SIGSEGV, sigjump_out);
	fflush(stdout);
	crash(2);
	printf("survived\n");
	return 0;
}

static struct sigaction before;

static void chained(int sig)
{
	printf("handler, then the action before it: %s\n", before.sa_handler == SIG_DFL ? "default" : "other");
	fflush(stdout);
	sigaction(sig, &before, NULL);
	raise(sig);
}

static int chain(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = chained;
	sigaction(SIGSEGV, &sa, &before);
	crash(3);
	printf("survived\n");
	return 0;
}

static void aborting(int sig)
{
	printf("SIGABRT handler, returning (blocked %d)\n", blocked(sig));
	fflush(stdout);
}

static int aborts(void)
{
	on(SIGABRT, aborting, 0, NULL);
	sink = work(3);
	abort();
}

static volatile int zero;

#if defined(__aarch64__)
#define UNDEFINED() __asm__ volatile("udf #0")
#else
#define UNDEFINED() __asm__ volatile("ud2")
#endif

static void fpe(int sig)
{
	printf("signal %d\n", sig);
	siglongjmp(env, 1);
}

static int fpes(void)
{
	on(SIGFPE, fpe, SA_NODEFER, NULL);
	on(SIGILL, fpe, SA_RESETHAND, NULL);
	for (int i = 0; i < 2; i++)
		if (sigsetjmp(env, 1) == 0)
			sink = 10 / zero;
	if (sigsetjmp(env, 1) == 0)
		UNDEFINED();
	show("SIGILL after its handler", SIGILL, fpe);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(void);
	} modes[] = {
		{ "nodefer", nodefer }, { "defer", defer },   { "siglongjmp", sigjump }, { "resethand", resethand },
		{ "altstack", altstack }, { "mask", mask },     { "siginfo", siginfo },    { "restart", restart },
		{ "early", early },     { "later", later },   { "chain", chain },        { "abort", aborts },
		{ "fpe", fpes },
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	sink = work(1);
	for (size_t i = 0; argc > 1 && i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(argv[1], modes[i].name) == 0)
			return modes[i].run();
	fprintf(stderr, "usage: sigsem MODE\n");
	return 2;
}
