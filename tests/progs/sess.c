/*
 * A process of a session (tests/session_test.go): names itself after
 * its first argument, TAG (prctl: its comm), logs "PID PPID TAG" to the
 * file $SESS_LOG in one write, calls work once (and leaf three times),
 * then by TAG:
 *
 *   spawn    posix_spawns this program as "spawned" and waits for it
 *   exec2    execs this program as "exec1", which execs it as "exec0"
 *   fork     forks a child that names itself "forked", logs as above,
 *            calls work and exits with status 9 (no exec)
 *
 * Prints nothing: a pipeline of it passes nothing on.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile int sink; /* so no call is folded away */

__attribute__((noinline)) int leaf(int x)
{
	sink = x;
	return sink * 3 + 1;
}

__attribute__((noinline)) int work(void)
{
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += leaf(i);
	return s;
}

/* Name the process tag and log "PID PPID TAG": 0, or -1. */
static int logself(const char *tag)
{
	prctl(PR_SET_NAME, tag, 0, 0, 0);
	const char *log = getenv("SESS_LOG");
	if (log) {
		char line[128];
		int n = snprintf(line, sizeof line, "%d %d %s\n", (int)getpid(), (int)getppid(), tag);
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd < 0 || write(fd, line, (size_t)n) != n)
			return -1;
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *tag = argc > 1 ? argv[1] : "none";
	if (logself(tag) != 0)
		return 3;
	if (work() != 12)
		return 4;
	/* This program by the path it was started by: under qemu-user, a
	 * script the host runs that runs it under qemu again. */
	char *self = argv[0];
	if (!strchr(self, '/'))
		return 5;
	if (strcmp(tag, "spawn") == 0) {
		char *args[] = { self, "spawned", NULL };
		pid_t pid;
		int st;
		if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0 || waitpid(pid, &st, 0) != pid || st != 0)
			return 6;
	} else if (strcmp(tag, "exec2") == 0) {
		execl(self, self, "exec1", (char *)NULL);
		return 7;
	} else if (strcmp(tag, "exec1") == 0) {
		execl(self, self, "exec0", (char *)NULL);
		return 7;
	} else if (strcmp(tag, "fork") == 0) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(logself("forked") == 0 && work() == 12 ? 9 : 1);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 9)
			return 8;
	}
	return 0;
}
