/*
 * Library calls that do not return normally (tests/libcall_test.go),
 * by the first argument:
 *
 *   jump    main sets a jump buffer, then qsort's comparator longjmps
 *           out of qsort on its third call
 *   thread  a thread's function calls pthread_exit from a nested call
 *   exit    exit(3) from a nested call
 *   vfork   vfork, then the child execs /bin/true and the parent waits
 *   _exit   _exit(4) from a nested call, after flushing what it printed
 *   abort   abort() from a nested call: killed by SIGABRT
 *   siglong raise's SIGUSR1 handler, entered inside raise, siglongjmps
 *           out of it and of the traced call that made it
 *   fork    fork: the child makes traced calls and library calls and
 *           exits; the parent waits, then makes its own
 *   exec    a forked child execvp's "true", another execve's /bin/true
 *   spawn   posix_spawn of /bin/true, posix_spawnp of "true"
 *   context makecontext, then swapcontext between main's stack and a
 *           context's three times, traced calls and library calls on
 *           both; the context ends with setcontext back to main's
 *   create  a thread whose start function makes a traced call and
 *           library calls
 *   alarm   SIGALRM arrives while sigsuspend waits; its handler makes a
 *           traced call and library calls
 *   dlopen PLUGIN  dlopen the plugin (progs/libcallplug.c), call its
 *           plug_work (found with dlsym), dlclose it; twice
 *
 * Each prints what it saw; the exit status is 0 but for exit's, _exit's
 * and abort's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

extern char **environ;

static jmp_buf back;
static int cmps;

__attribute__((noinline)) int cmp(const void *a, const void *b)
{
	if (++cmps == 3)
		longjmp(back, 7);
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) void leave_thread(void)
{
	pthread_exit((void *)5);
}

__attribute__((noinline)) void *thread_fn(void *arg)
{
	(void)arg;
	leave_thread();
	return NULL;
}

__attribute__((noinline)) void quit(int code)
{
	printf("quitting %d\n", code);
	fflush(stdout);
	exit(code);
}

__attribute__((noinline)) void quit_now(int code)
{
	printf("quitting now %d\n", code);
	fflush(stdout);
	_exit(code);
}

__attribute__((noinline)) void give_up(void)
{
	printf("aborting %d\n", SIGABRT);
	fflush(stdout);
	abort();
}

static sigjmp_buf sback;

__attribute__((noinline)) void on_usr1(int sig)
{
	if (getpid() > 0)
		siglongjmp(sback, sig);
}

__attribute__((noinline)) void raise_in(void)
{
	raise(SIGUSR1);
	printf("not reached\n");
}

/* A traced call that makes library calls: getpid and strlen of s. */
__attribute__((noinline)) size_t busy(const char *s)
{
	return strlen(s) + (getpid() > 0);
}

/* Waits for a child, saying how it ended. */
__attribute__((noinline)) void reap(pid_t pid, const char *what)
{
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		printf("%s: no child\n", what);
	else
		printf("%s: child exited %d\n", what, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

__attribute__((noinline)) void child_work(const char *s)
{
	printf("child: %zu\n", busy(s));
}

static ucontext_t uc_main, uc_co;
static char co_stack[64 * 1024];

__attribute__((noinline)) void co_fn(void)
{
	for (int i = 0; i < 3; i++) {
		printf("context: %zu\n", busy("context") + (size_t)i);
		swapcontext(&uc_co, &uc_main);
	}
	setcontext(&uc_main);
}

__attribute__((noinline)) void *start_fn(void *arg)
{
	printf("thread: %zu\n", busy(arg));
	return NULL;
}

static volatile sig_atomic_t alarms;

__attribute__((noinline)) void on_alrm(int sig)
{
	(void)sig;
	alarms += (int)busy("alarm");
}

__attribute__((noinline)) void wait_alarm(void)
{
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	sigprocmask(SIG_BLOCK, &block, &old);
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };
	setitimer(ITIMER_REAL, &it, NULL);
	sigdelset(&old, SIGALRM);
	sigsuspend(&old);
	printf("alarm: %d\n", (int)alarms);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	if (strcmp(how, "jump") == 0) {
		int v[6] = { 6, 5, 4, 3, 2, 1 };
		int r = setjmp(back);
		if (r == 0)
			qsort(v, 6, sizeof v[0], cmp);
		printf("jumped %d after %d comparisons\n", r, cmps);
	} else if (strcmp(how, "thread") == 0) {
		pthread_t t;
		void *ret = NULL;
		if (pthread_create(&t, NULL, thread_fn, NULL) != 0 || pthread_join(t, &ret) != 0)
			return 1;
		printf("thread left with %ld\n", (long)ret);
	} else if (strcmp(how, "exit") == 0) {
		quit(3);
	} else if (strcmp(how, "vfork") == 0) {
		pid_t pid = vfork();
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	} else if (strcmp(how, "_exit") == 0) {
		quit_now(4);
	} else if (strcmp(how, "abort") == 0) {
		give_up();
	} else if (strcmp(how, "siglong") == 0) {
		signal(SIGUSR1, on_usr1);
		int r = sigsetjmp(sback, 1);
		if (r == 0)
			raise_in();
		printf("back from signal %d\n", r);
	} else if (strcmp(how, "fork") == 0) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			child_work(how);
			exit(0);
		}
		reap(pid, how);
		printf("parent: %zu\n", busy(how));
	} else if (strcmp(how, "exec") == 0) {
		char *args[] = { "true", NULL };
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			execvp("true", args);
			_exit(127);
		}
		reap(pid, "execvp");
		pid = fork();
		if (pid == 0) {
			execve("/bin/true", args, environ);
			_exit(127);
		}
		reap(pid, "execve");
	} else if (strcmp(how, "spawn") == 0) {
		char *args[] = { "true", NULL };
		pid_t pid = -1;
		if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0)
			pid = -1;
		reap(pid, "posix_spawn");
		if (posix_spawnp(&pid, "true", NULL, NULL, args, environ) != 0)
			pid = -1;
		reap(pid, "posix_spawnp");
	} else if (strcmp(how, "context") == 0) {
		getcontext(&uc_co);
		uc_co.uc_stack.ss_sp = co_stack;
		uc_co.uc_stack.ss_size = sizeof co_stack;
		uc_co.uc_link = NULL;
		makecontext(&uc_co, co_fn, 0);
		for (int i = 0; i < 4; i++) {
			printf("main: %zu\n", busy("main") + (size_t)i);
			swapcontext(&uc_main, &uc_co);
		}
	} else if (strcmp(how, "create") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, start_fn, "thread") != 0 || pthread_join(t, NULL) != 0)
			return 1;
	} else if (strcmp(how, "alarm") == 0) {
		signal(SIGALRM, on_alrm);
		wait_alarm();
	} else if (strcmp(how, "dlopen") == 0 && argc > 2) {
		for (int i = 0; i < 2; i++) {
			void *h = dlopen(argv[2], RTLD_NOW);
			size_t (*work)(const char *) = h ? (size_t(*)(const char *))dlsym(h, "plug_work") : NULL;
			if (!work)
				return 1;
			printf("plugin: %zu\n", work(argv[2]));
			dlclose(h);
		}
	}
	return 0;
}
