/*
 * deny CALL PROG ARGS...: runs PROG with the system call CALL
 * (perf_event_open or socket) refused with EACCES by a seccomp filter,
 * as a container's or a sandbox's may, every other call allowed:
 * perf_event_open for the scheduler events refused (sched_test.go),
 * socket for a runtime that cannot make its control socket
 * (ctlattach_test.go).
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int nr = argc < 3 ? -1 : strcmp(argv[1], "perf_event_open") == 0 ? __NR_perf_event_open : strcmp(argv[1], "socket") == 0 ? __NR_socket : -1;
	if (nr < 0) {
		fprintf(stderr, "usage: deny perf_event_open|socket PROG ARGS...\n");
		return 127;
	}
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), /* A = the call's number */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),               /* the one refused? */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),                /* yes: EACCES */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                         /* no: run it */
	};
	struct sock_fprog prog = { sizeof code / sizeof code[0], code };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		perror("deny");
		return 127;
	}
	execv(argv[2], argv + 2);
	perror("deny: exec");
	return 127;
}
