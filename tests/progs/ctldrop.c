/*
 * A daemon started as root with FTRACE_CTL=1 that drops its privileges,
 * then ends one way or another: no control socket may be left behind.
 *
 *   ctldrop exit | kill | fork
 *
 * Prints "ready", waits for a line on stdin, becomes uid and gid 65534,
 * then returns from main (exit), dies of SIGKILL (kill), or forks a
 * child that sleeps for a minute, prints "child PID" and returns (fork).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile long sink;

NOINLINE long work(long x) { return x + 1; }

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	sink += work(1);
	printf("ready\n");
	fflush(stdout);
	char go[16];
	if (!fgets(go, sizeof go, stdin))
		return 3;
	if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
		return 4;
	sink += work(2);
	if (strcmp(argv[1], "kill") == 0)
		raise(SIGKILL);
	if (strcmp(argv[1], "fork") == 0) {
		pid_t c = fork();
		if (c == 0) {
			sleep(60);
			_exit(0);
		}
		printf("child %d\n", (int)c);
	}
	return 0;
}
