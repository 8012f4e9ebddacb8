/*
 * A process of a session (tests/session_test.go): names itself after
 * its first argument, TAG (prctl: its comm), logs "PID PPID TAG" to the
 * file $SESS_LOG in one write, calls work once (and leaf three times),
 * then by TAG:
 *
 *   spawn    posix_spawns this program as "spawned" and waits for it
 *   exec2    execs this program as "exec1", which execs it as "exec0"
 *   fork     forks a child that calls work and exits (no exec)
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

int main(int argc, char **argv)
{
	const char *tag = argc > 1 ? argv[1] : "none";
	prctl(PR_SET_NAME, tag, 0, 0, 0);
	const char *log = getenv("SESS_LOG");
	if (log) {
		char line[128];
		int n = snprintf(line, sizeof line, "%d %d %s\n", (int)getpid(), (int)getppid(), tag);
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd < 0 || write(fd, line, (size_t)n) != n)
			return 3;
		close(fd);
	}
	if (work() != 12)
		return 4;
	char self[4096];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	if (k <= 0)
		return 5;
	self[k] = 0;
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
			_exit(work() == 12 ? 0 : 1);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || st != 0)
			return 8;
	}
	return 0;
}
