/*
 * What ftpatch info says of a program: how it ended, its threads' names
 * and calls. It ends as its first argument says:
 *
 *   exit     exit(3)
 *   return   main returns 0
 *   _exit    _exit(6)
 *   kill     SIGKILL to itself
 *   segv     a store to address 0 (SIGSEGV)
 *
 * First main names itself "infomain" (prctl(PR_SET_NAME)) and starts two
 * threads that name themselves "worker-1" and "worker-2"
 * (pthread_setname_np); each calls work() WORK times, each call of which
 * calls leaf() twice, then jumper(), which calls deep(), which longjmps
 * out of both (two graphed calls unwound), then work() once more. Main
 * calls work() once and joins them. Then, with these words among the
 * other arguments:
 *
 *   open     a third thread, "sleeper", calls work() once and blocks in
 *            hold() until the program ends: sleeper() and hold() are
 *            still running then
 *   fork     main calls forked(), which forks a child that calls work()
 *            once and returns from forked() (its entry in the parent's
 *            stream, its return in the child's), then _exit(0)s; main
 *            waits for it
 *   many     main calls work() MANY times more, which fills its buffer
 *            twice: its stream is written before the end
 *
 * and ends as asked, printing "ended HOW" first.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attrs.h"

#define WORK 1000
#define MANY 200000

static volatile long sink;
static int *volatile nowhere; /* NULL */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static int sleeping;
static __thread jmp_buf back;

NOINLINE long leaf(long x) { return x * 3 + 1; }

NOINLINE void work(long x)
{
	sink += leaf(x) + leaf(x + 1);
}

NOINLINE void deep(void)
{
	longjmp(back, 1);
}

NOINLINE void jumper(void)
{
	deep();
	sink++;
}

NOINLINE void hold(void)
{
	pthread_mutex_lock(&held); /* main holds it: blocks until the end */
}

NOINLINE void *worker(void *arg)
{
	char name[16];
	snprintf(name, sizeof name, "worker-%ld", (long)arg + 1);
	pthread_setname_np(pthread_self(), name);
	for (long i = 0; i < WORK; i++)
		work(i + (long)arg);
	if (!setjmp(back))
		jumper();
	work(0);
	return NULL;
}

NOINLINE void *sleeper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "sleeper");
	work(1);
	__atomic_store_n(&sleeping, 1, __ATOMIC_RELEASE);
	hold();
	return NULL;
}

/* 0 in the child, which has called work() once; the child's pid in the
 * parent. */
NOINLINE pid_t forked(void)
{
	pid_t pid = fork();
	if (pid == 0)
		work(2);
	return pid;
}

NOTRACE static int has(int argc, char **argv, const char *word)
{
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], word) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "return";
	prctl(PR_SET_NAME, "infomain", 0, 0, 0);
	pthread_t t[3];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	work(1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (has(argc, argv, "open")) {
		pthread_mutex_lock(&held);
		pthread_create(&t[2], NULL, sleeper, NULL);
		while (!__atomic_load_n(&sleeping, __ATOMIC_ACQUIRE))
			usleep(1000);
		usleep(100000); /* the sleeper is blocked in hold() */
	}
	if (has(argc, argv, "fork")) {
		pid_t pid = forked();
		if (pid == 0)
			_exit(0);
		waitpid(pid, NULL, 0);
	}
	if (has(argc, argv, "many"))
		for (long i = 0; i < MANY; i++)
			work(i);
	printf("ended %s\n", how);
	fflush(stdout);
	if (strcmp(how, "exit") == 0)
		exit(3);
	if (strcmp(how, "_exit") == 0)
		_exit(6);
	if (strcmp(how, "kill") == 0)
		kill(getpid(), SIGKILL);
	if (strcmp(how, "segv") == 0)
		*nowhere = 1;
	return 0;
}
