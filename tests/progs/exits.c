/*
 * Ways a traced program ends other than exit, one per argument:
 *
 *   _exit    main makes calls, then _exit(5)
 *   quick_exit  main makes calls, then quick_exit(4)
 *   fork     a forked child makes calls and _exit(0)s; a vfork child
 *            _exit(0)s at once; posix_spawn of a missing file (its child
 *            _exits inside glibc); the parent makes calls around them and
 *            returns from main
 *   kill     main makes calls enough to fill buffers, then SIGKILLs itself
 *   signal   two threads make calls and block, two others call without
 *            end; main calls without end until a signal from one of them,
 *            whose handler calls _exit(7)
 *   exec     main makes calls, forks a child that makes calls, fails
 *            to exec a program that does not exist, makes calls again
 *            and execs this program (exec-child: makes calls, returns
 *            from main); main waits for it, makes calls again and
 *            returns. The child's calls before its exec are in its
 *            own image; the exec'd program is its next
 *   exec-self  main makes calls, then execs this program in its place
 *            (exec-child, by execle with the environment): its calls
 *            before the exec end that trace
 *   exec-thread  the same from a thread main starts and waits for: main's
 *            calls are in its buffer still, which the exec discards
 *   spawn    main makes calls, then starts this program (exec-child)
 *            five times, each with an environment of its own holding
 *            CHILD_TAG=<how> and no FTRACE* variable: by posix_spawn,
 *            posix_spawnp, and in a forked child by execve and execle;
 *            then by posix_spawn with FTRACE_FILTER=leaf in its own
 *            (tag "own"); exec-child prints its tag
 *   many     main makes 300,001 calls (work(100000)), then returns
 *   regain   main lowers its file size limit to 8 bytes, less than a
 *            stream's header, makes 300,001 calls (work(100000)), whose
 *            buffer's flushes find no room for the stream and lose them,
 *            raises the limit back, makes calls again (work(10)) and
 *            returns: the stream is made after records were lost
 *   rights   main makes calls (work(5)) and prints what they computed,
 *            then the rights it runs with, "euid E secure S" (AT_SECURE):
 *            the security tests' setuid program
 *
 * What is traced is known by construction: work(n) calls twice n times,
 * twice calls leaf twice. The signal handler and what it calls are not
 * instrumented, so they record nothing; it writes the counts it can see
 * to stderr (counts: main=N spin=N spin=N) for the test to compare.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attrs.h"

static volatile long sink;

NOINLINE int leaf(int x) { return x + 1; }
NOINLINE int twice(int x) { return leaf(x) + leaf(x + 1); }

NOINLINE void work(int n)
{
	for (int i = 0; i < n; i++)
		sink += twice(i);
}

static void by_exit(void)
{
	work(1000);
	printf("worked %ld\n", sink);
	fflush(stdout);
	_exit(5);
}

static void by_quick_exit(void)
{
	work(1000);
	printf("worked %ld\n", sink);
	fflush(stdout); /* quick_exit flushes no stream */
	quick_exit(4);
}

extern char **environ;

static void by_fork(void)
{
	work(10);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		work(1000);
		printf("child worked %ld\n", sink);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("child exit %d\n", WEXITSTATUS(st));
	/* A vfork child runs on this process's memory: its _exit must leave
	 * the parent's buffers alone. */
	pid = vfork();
	if (pid == 0)
		_exit(4);
	waitpid(pid, &st, 0);
	printf("vfork child exit %d\n", WEXITSTATUS(st));
	char *argv[] = { "/nonexistent/ftpatch-test", NULL };
	int err = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
	if (err == 0) {
		waitpid(pid, &st, 0);
		err = WEXITSTATUS(st);
	}
	printf("posix_spawn of a missing file: %s\n", err ? "failed" : "ran");
	work(20);
	printf("parent worked %ld\n", sink);
}

static void by_kill(void)
{
	work(200000);
	printf("worked %ld\n", sink);
	fflush(stdout);
	kill(getpid(), SIGKILL);
}

/* The signal case. */
enum { SPIN = 2, IDLE = 2 };
static pthread_t main_thread;
static volatile long main_calls, spin_calls[SPIN];
static pthread_barrier_t ready;
static int never[2]; /* a pipe nothing is written to: idle threads block on it */

NOTRACE static char *put_num(char *p, long v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*p++ = tmp[--n];
	return p;
}

NOTRACE static void on_signal(int sig)
{
	(void)sig;
	char buf[128], *p = buf;
	memcpy(p, "counts: main=", 13);
	p = put_num(p + 13, main_calls);
	for (int i = 0; i < SPIN; i++) {
		memcpy(p, " spin=", 6);
		p = put_num(p + 6, spin_calls[i]);
	}
	*p++ = '\n';
	write(2, buf, (size_t)(p - buf));
	write(1, "ended by _exit in a signal handler\n", 35);
	_exit(7);
}

NOINLINE void *idle(void *arg)
{
	(void)arg;
	work(100);
	pthread_barrier_wait(&ready);
	char c;
	read(never[0], &c, 1);
	return NULL;
}

NOINLINE void *spin(void *arg)
{
	long k = (long)arg;
	for (long i = 0;; i++) {
		sink += twice((int)i);
		spin_calls[k]++;
		if (k == 0 && i == 200000)
			pthread_kill(main_thread, SIGUSR1);
	}
	return NULL;
}

static void by_signal(void)
{
	printf("threads\n");
	fflush(stdout);
	main_thread = pthread_self();
	signal(SIGUSR1, on_signal);
	pipe(never);
	pthread_barrier_init(&ready, NULL, IDLE + 1);
	/* The signal is for main alone. */
	sigset_t usr1, old;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old);
	pthread_t t;
	for (long i = 0; i < IDLE; i++)
		pthread_create(&t, NULL, idle, (void *)i);
	pthread_barrier_wait(&ready);
	for (long i = 0; i < SPIN; i++)
		pthread_create(&t, NULL, spin, (void *)i);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (int i = 0;; i++) {
		sink += twice(i);
		main_calls++;
	}
}

static void by_exec(const char *self)
{
	work(3);
	pid_t pid = fork();
	if (pid == 0) {
		work(4);
		char *const missing[] = { "ftpatch-test-no-such-program", NULL };
		execvp(missing[0], missing);
		work(1);
		execl(self, self, "exec-child", (char *)NULL);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	work(2);
	printf("child exited %d; worked %ld\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1, sink);
}

static char *self_path;

/* The spawn case: one child started by how, with env, waited for. */
NOTRACE static void spawned(const char *how, char *const env[])
{
	char *argv[] = { self_path, "exec-child", NULL };
	pid_t pid = -1;
	int err = 0;
	fflush(stdout);
	if (strcmp(how, "posix_spawn") == 0 || strcmp(how, "own") == 0)
		err = posix_spawn(&pid, self_path, NULL, NULL, argv, env);
	else if (strcmp(how, "posix_spawnp") == 0)
		err = posix_spawnp(&pid, self_path, NULL, NULL, argv, env);
	else if ((pid = fork()) == 0) {
		if (strcmp(how, "execve") == 0)
			execve(self_path, argv, env);
		else
			execle(self_path, self_path, "exec-child", (char *)NULL, env);
		_exit(127);
	}
	int st = 0;
	if (err == 0 && pid > 0)
		waitpid(pid, &st, 0);
	printf("%s: %s, exit %d\n", how, err || pid < 0 ? "failed" : "ran", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

NOINLINE void *on_thread(void *arg)
{
	(void)arg;
	work(1);
	execle(self_path, self_path, "exec-child", (char *)NULL, environ);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	if (strcmp(how, "_exit") == 0)
		by_exit();
	else if (strcmp(how, "quick_exit") == 0)
		by_quick_exit();
	else if (strcmp(how, "fork") == 0)
		by_fork();
	else if (strcmp(how, "kill") == 0)
		by_kill();
	else if (strcmp(how, "signal") == 0)
		by_signal();
	else if (strcmp(how, "exec") == 0)
		by_exec(argv[0]);
	else if (strcmp(how, "exec-self") == 0) {
		work(1);
		execle(argv[0], argv[0], "exec-child", (char *)NULL, environ); /* FTRACE* go with it */
		return 127;
	} else if (strcmp(how, "exec-thread") == 0) {
		work(1);
		self_path = argv[0];
		pthread_t t;
		pthread_create(&t, NULL, on_thread, NULL);
		pthread_join(t, NULL);
		return 127;
	} else if (strcmp(how, "spawn") == 0) {
		work(2);
		self_path = argv[0];
		static const char *const hows[] = { "posix_spawn", "posix_spawnp", "execve", "execle" };
		for (size_t i = 0; i < sizeof hows / sizeof hows[0]; i++) {
			char tag[64];
			snprintf(tag, sizeof tag, "CHILD_TAG=%s", hows[i]);
			char *env[] = { tag, "LC_ALL=C", NULL };
			spawned(hows[i], env);
		}
		char *own[] = { "CHILD_TAG=own", "FTRACE_FILTER=leaf", NULL };
		spawned("own", own);
	} else if (strcmp(how, "rights") == 0) {
		work(5);
		printf("worked %ld\neuid %d secure %lu\n", sink, (int)geteuid(), getauxval(AT_SECURE));
	} else if (strcmp(how, "many") == 0) {
		work(100000);
		printf("worked %ld\n", sink);
	} else if (strcmp(how, "regain") == 0) {
		struct rlimit old, low;
		if (getrlimit(RLIMIT_FSIZE, &old) != 0)
			return 1;
		low = old;
		low.rlim_cur = 8;
		if (setrlimit(RLIMIT_FSIZE, &low) != 0)
			return 1;
		work(100000);
		if (setrlimit(RLIMIT_FSIZE, &old) != 0)
			return 1;
		work(10);
		printf("worked %ld\n", sink);
	} else if (strcmp(how, "exec-child") == 0) {
		const char *tag = getenv("CHILD_TAG");
		work(7);
		printf("child worked %ld%s%s\n", sink, tag ? " " : "", tag ? tag : "");
	} else {
		fprintf(stderr, "usage: exits _exit|quick_exit|fork|kill|signal|exec|exec-self|exec-thread|spawn|many|regain|rights\n");
		return 2;
	}
	return 0;
}
