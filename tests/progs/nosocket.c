/*
 * nosocket PROG ARGS...: runs PROG with socket() refused (EACCES) by a
 * seccomp filter, as a sandbox's may, every other system call allowed:
 * a process ftpatch ctl attaches to whose runtime cannot make its
 * control socket (ctlattach_test.go).
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), /* A = the call's number */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 1),              /* socket? */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),                /* yes: EACCES */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                         /* no: run it */
	};
	struct sock_fprog prog = { sizeof code / sizeof code[0], code };
	if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		perror("nosocket");
		return 127;
	}
	execv(argv[1], argv + 1);
	perror("nosocket: exec");
	return 127;
}
