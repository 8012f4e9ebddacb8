/*
 * maxrss FILE COMMAND [ARG...]: runs COMMAND and writes its peak
 * resident set size, in kB, to FILE; exits as COMMAND did (128 plus the
 * signal that killed it).
 *
 * What the tests measure a command's memory with. The rusage Go hands
 * back for a child is no good for it: Go starts a child by vfork, and
 * Linux counts into the peak of a process that execs the peak of the
 * memory it had before (here, the test process's own, gigabytes once
 * other tests have read big traces in it). A child forked from this
 * small program starts from this program's memory instead.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: maxrss FILE COMMAND [ARG...]\n");
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("maxrss: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) != pid) {
		perror("maxrss: wait4");
		return 2;
	}
	FILE *f = fopen(argv[1], "w");
	if (!f || fprintf(f, "%ld\n", ru.ru_maxrss) < 0 || fclose(f) != 0) {
		perror(argv[1]);
		return 2;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
