/*
 * nowrite PROG [ARG...]: runs PROG where no page can be made writable.
 *
 * A seccomp filter, inherited across execve, kills the process (SIGSYS)
 * at the first mprotect or pkey_mprotect that asks for PROT_WRITE, and at
 * the first mmap asking for both PROT_WRITE and PROT_EXEC. That is the
 * only way the runtime writes code (it makes the pages holding sites
 * writable around its writes), so a pre-patched program that runs to its
 * end under nowrite made no code page writable. The loader and libc of a
 * single-threaded program need neither call: nowrite kills the same
 * program when its runtime does patch (the test checks both).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The low 32 bits of argument n (little-endian): prot flags fit there. */
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: nowrite PROG [ARG...]\n");
		return 2;
	}
	struct sock_filter filter[] = {
		/* Another ABI's system call numbers mean other calls: refuse. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pkey_mprotect, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 5, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* mprotect(addr, len, prot): any PROT_WRITE dies. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_WRITE, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* mmap(addr, len, prot, ...): writable and executable dies. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof filter / sizeof filter[0], .filter = filter };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		fprintf(stderr, "nowrite: installing the seccomp filter: %s\n", strerror(errno));
		return 2;
	}
	execv(argv[1], argv + 1);
	fprintf(stderr, "nowrite: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
