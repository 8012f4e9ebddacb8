/*
 * The program `ftpatch record` and `ftpatch live` run in the tests. Its
 * first argument says what it does:
 *
 *   env          print the FTRACE* variables it was given, and a sum
 *   exit N       exit with status N
 *   kill N       die by signal N (its default action restored first)
 *   signals      say "ready", then report each SIGINT and SIGUSR1 it
 *                receives and who sent it (the kernel, for a terminal's
 *                ^C, or a process), until a SIGTERM, when it prints the
 *                counts and exits 0
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const vars[] = {"FTRACE", "FTRACE_OUT", "FTRACE_FILTER", "FTRACE_DEPTH", "FTRACE_THRESH",
				   "FTRACE_GRAPH_FUNCS", "FTRACE_GRAPH_NOTRACE", "FTRACE_CLOCK"};

__attribute__((noinline)) int work(int n)
{
	return n <= 1 ? n : work(n - 1) + n;
}

/* Who sent the signal info describes. */
static const char *sender(const siginfo_t *info, char *buf, size_t n)
{
	if (info->si_code == SI_KERNEL)
		return "the kernel";
	snprintf(buf, n, "pid %d", (int)info->si_pid);
	return buf;
}

static int signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	int ints = 0, usr1s = 0;
	for (;;) {
		siginfo_t info;
		char buf[32];
		int sig = sigwaitinfo(&set, &info);
		if (sig == SIGINT)
			printf("SIGINT %d from %s\n", ++ints, sender(&info, buf, sizeof buf));
		else if (sig == SIGUSR1)
			printf("SIGUSR1 %d from %s\n", ++usr1s, sender(&info, buf, sizeof buf));
		else if (sig == SIGTERM) {
			printf("SIGTERM from %s: %d SIGINT, %d SIGUSR1\n", sender(&info, buf, sizeof buf), ints, usr1s);
			return 0;
		}
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "env";
	if (strcmp(mode, "exit") == 0 && argc > 2)
		return atoi(argv[2]);
	if (strcmp(mode, "kill") == 0 && argc > 2) {
		int sig = atoi(argv[2]);
		printf("dying by signal %d\n", sig);
		fflush(stdout);
		signal(sig, SIG_DFL);
		raise(sig);
		return 99;
	}
	if (strcmp(mode, "signals") == 0)
		return signals();
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		const char *v = getenv(vars[i]);
		printf("%s=%s\n", vars[i], v ? v : "(unset)");
	}
	printf("work=%d\n", work(10));
	return 0;
}
