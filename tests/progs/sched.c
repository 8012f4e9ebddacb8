/*
 * Scheduler events (sched_test.go): naps() sleeps three times 10 ms in
 * nanosleep; with "threads", three threads made after the trace began
 * each sleep 10 ms in worker(); with "fork", a child forked does the
 * naps and the parent waits for it.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void naps(void)
{
	for (int i = 0; i < 3; i++) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
}

__attribute__((noinline)) void *worker(void *arg)
{
	struct timespec ts = { 0, 10000000 };
	nanosleep(&ts, NULL);
	return arg;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (mode[0] == 't') {
		pthread_t t[3];
		for (int i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, worker, NULL);
		for (int i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
	} else if (mode[0] == 'f') {
		pid_t pid = fork();
		if (pid == 0) {
			naps();
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
	} else {
		naps();
	}
	puts("slept");
	return 0;
}
