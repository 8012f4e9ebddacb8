/*
 * Library calls that do not return normally (tests/libcall_test.go),
 * by the first argument:
 *
 *   jump    main sets a jump buffer, then qsort's comparator longjmps
 *           out of qsort on its third call
 *   thread  a thread's function calls pthread_exit from a nested call
 *   exit    exit(3) from a nested call
 *   vfork   vfork, then the child execs /bin/true and the parent waits
 *
 * Each prints what it saw; the exit status is 0 but for exit's.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
	}
	return 0;
}
