/*
 * What the scheduler events (sched.c) say of themselves: why the kernel
 * refused them, in the metadata's words (sched_why), and the byte copies
 * the reader thread may use. Raw system calls: a forked child's handler
 * runs them; the reader thread (sched.c's reader_spawn) the copies and
 * ftrt_sched_why_add alone, which call nothing of the C library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>

#include "sched.h"
#include "tracer.h"

/*
 * Byte copies and lengths of the paths the reader thread runs, without
 * the C library: the reader is a bare thread (reader_spawn) that must
 * call nothing through the program's PLT (a slot library-call tracing
 * redirected, or one not bound yet, would run code that reads the
 * thread pointer, which the reader shares with the thread that made it).
 * Volatile, so the compiler does not make them memcpy or strlen calls
 * again.
 */
void ftrt_sched_copy(void *out, const void *in, size_t n)
{
	volatile char *o = out;
	const volatile char *i = in;
	while (n--)
		*o++ = *i++;
}

size_t ftrt_sched_length(const char *s)
{
	const volatile char *p = s;
	while (*p)
		p++;
	return (size_t)(p - s);
}

/* why += s, within its size. */
void ftrt_sched_why_add(const char *s)
{
	size_t n = ftrt_sched_length(ftrt_sched_why), k = ftrt_sched_length(s);
	if (k > sizeof ftrt_sched_why - 1 - n)
		k = sizeof ftrt_sched_why - 1 - n;
	ftrt_sched_copy(ftrt_sched_why + n, s, k);
	ftrt_sched_why[n + k] = 0;
}

static void why_num(uint64_t v)
{
	char num[24];
	*ftrt_utoa(num, v) = 0;
	ftrt_sched_why_add(num);
}

/* An errno's name, for sched_why. */
static const char *err_name(long err)
{
	static const struct {
		int e;
		const char *name;
	} names[] = { { EACCES, "EACCES" }, { EPERM, "EPERM" },   { ENOSYS, "ENOSYS" }, { EINVAL, "EINVAL" },
		      { ENOENT, "ENOENT" }, { ENODEV, "ENODEV" }, { EMFILE, "EMFILE" }, { ENFILE, "ENFILE" },
		      { ENOMEM, "ENOMEM" }, { E2BIG, "E2BIG" },   { EOPNOTSUPP, "EOPNOTSUPP" }, { EBUSY, "EBUSY" },
		      { EBADF, "EBADF" },   { ENOTTY, "ENOTTY" }, { EFAULT, "EFAULT" } };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].e == err)
			return names[i].name;
	return NULL;
}

/* /proc/sys/kernel/perf_event_paranoid, -99 when it cannot be read. */
static int paranoid(void)
{
	char buf[16];
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (sys_failed(fd))
		return -99;
	long n = sys(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	int v = 0, neg = 0, i = 0;
	if (n > 0 && buf[0] == '-')
		neg = i = 1;
	if (n <= i || buf[i] < '0' || buf[i] > '9')
		return -99;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + buf[i] - '0';
	return neg ? -v : v;
}

/* The kernel refused call with -err: no events; why says what, and what
 * to change. Raw calls only (a forked child's handler may get here). */
void ftrt_sched_refuse(const char *call, long err)
{
	ftrt_sched_state = SCHED_STATE_REFUSED;
	ftrt_sched_why[0] = 0;
	ftrt_sched_why_add(call);
	ftrt_sched_why_add(": ");
	const char *name = err_name(-err);
	if (name) {
		ftrt_sched_why_add(name);
	} else {
		ftrt_sched_why_add("errno ");
		why_num((uint64_t)-err);
	}
	if (err == -EACCES || err == -EPERM) {
		int p = paranoid();
		if (p == -99) {
			ftrt_sched_why_add(" (a seccomp filter, an LSM or a container refused it)");
		} else if (p > 2) {
			ftrt_sched_why_add(" (/proc/sys/kernel/perf_event_paranoid is ");
			why_num((uint64_t)p);
			ftrt_sched_why_add(": above 2 forbids it; 2 lets a process watch itself)");
		} else {
			ftrt_sched_why_add(" (/proc/sys/kernel/perf_event_paranoid is ");
			if (p < 0) {
				ftrt_sched_why_add("-");
				p = -p;
			}
			why_num((uint64_t)p);
			ftrt_sched_why_add(", which allows it: a seccomp filter, an LSM or a container refused it)");
		}
	} else if (err == -ENOSYS) {
		ftrt_sched_why_add(" (the kernel, or an emulator such as qemu-user, has no perf events)");
	} else if (err == -EINVAL) {
		ftrt_sched_why_add(" (a kernel older than 5.13: no inherit_thread or remove_on_exec)");
	} else if (err == -ENOMEM && strcmp(call, "mmap") == 0) {
		ftrt_sched_why_add(" (the user's perf_event_mlock_kb and RLIMIT_MEMLOCK are used up)");
	} else if (err == -EMFILE || err == -ENFILE) {
		ftrt_sched_why_add(" (no descriptor left)");
	}
}

