/*
 * A daemon that closes the descriptors it inherited, as daemons do, and
 * serves clients on TCP: the runtime's own descriptors must stay out of
 * its way.
 *
 *   ctldaemon LAST
 *
 * Refuses itself process_vm_readv (EPERM, as qemu-user does: the
 * runtime then reads a string argument through a pipe of its own), calls
 * work() WORK times (a traced thread's buffer fills more than once),
 * prints "ready" and waits for a line on stdin; then closes every
 * descriptor from 3 to LAST ("max": to the RLIMIT_NOFILE soft limit),
 * listens on 127.0.0.1 (descriptor 3) at a port of the kernel's
 * choosing, prints "port N" and answers each client's line with "echo
 * LINE" (handle(), answer(LINE)), until a client sends "quit". It prints
 * "served N" and exits 0. SIGPIPE keeps its default: a write of the
 * runtime's to one of its clients' descriptors could kill it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define WORK 300000

static volatile long sink;
static char reply[300];

NOINLINE long work(long x) { return x * 7 + 3; }

/* The answer to line, in reply: its length. */
NOINLINE int answer(const char *line)
{
	return snprintf(reply, sizeof reply, "echo %s\n", line);
}

/* One client: its line answered; 1 when it asked to quit. */
NOINLINE int handle(int c)
{
	char line[256];
	ssize_t n = read(c, line, sizeof line - 1);
	if (n <= 0)
		return 0;
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	write(c, reply, (size_t)answer(line));
	return strcmp(line, "quit") == 0;
}

/* process_vm_readv refused in every thread (the runtime's too). */
static int refuse_vm_read(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog p = { sizeof f / sizeof f[0], f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &p);
}

int main(int argc, char **argv)
{
	if (argc != 2 || refuse_vm_read() != 0)
		return 2;
	for (long i = 0; i < WORK; i++)
		sink += work(i);
	printf("ready\n");
	fflush(stdout);
	char go[16];
	if (!fgets(go, sizeof go, stdin))
		return 3;
	long last = strcmp(argv[1], "max") == 0 ? -1 : atol(argv[1]);
	if (last < 0) {
		struct rlimit r;
		getrlimit(RLIMIT_NOFILE, &r);
		last = (long)r.rlim_cur - 1;
	}
	for (long fd = 3; fd <= last; fd++)
		close((int)fd);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) != 0)
		return 4;
	printf("port %d\n", ntohs(a.sin_port));
	fflush(stdout);
	int served = 0, quit = 0;
	while (!quit) {
		int c = accept(s, NULL, NULL);
		if (c < 0)
			return 5;
		quit = handle(c);
		served++;
		close(c);
	}
	printf("served %d\n", served);
	return 0;
}
