/*
 * The exec functions: a process's events survive its exec.
 *
 * A thread's records wait in its buffer until it fills, the thread
 * exits or the process ends (trace.c). exec ends none of those: it
 * replaces the process's memory, buffers and all. A forked child that
 * execs, as most do, lost every event it had between fork and exec; a
 * program that execs in place, everything since its last flush. So the
 * program's calls of the exec functions go through these wrappers,
 * which write the calling thread's buffer out (ftrt_trace_exec), then
 * call the C library's own function with the same arguments.
 *
 * Wrapped at link time: ftpatch flags --libs passes --wrap=execve (and
 * the rest), so the program's references to execve bind to
 * __wrap_execve here, and this file's __real_execve to the C library's.
 * Nothing is reimplemented (execvp's search of PATH stays glibc's), and
 * it works alike in a static link. What it cannot see: a call from a
 * shared object (bound at run time, not wrapped), from the C library
 * itself (system, popen, posix_spawn run their child inside libc), or
 * in a program linked without these flags (ftpatch enable's pre-patched
 * files); those events are lost as before. A program that defines an exec
 * function of its own keeps it (the wrapper's __real_ reference binds to
 * it), but for an execl form: the wrapper calls the matching v form.
 *
 * An exec that fails returns, and the program goes on traced: writing
 * the buffer out ends nothing. The exec functions are async-signal-safe
 * and may be called in a child of vfork, so ftrt_trace_exec is too, and
 * does nothing in a process that shares its parent's memory (see
 * exit.c). The execl forms build their argv on the stack as glibc's own
 * do, and call the matching v form.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ftrt.h"

int __real_execve(const char *path, char *const argv[], char *const envp[]);
int __real_execv(const char *path, char *const argv[]);
int __real_execvp(const char *file, char *const argv[]);
int __real_execvpe(const char *file, char *const argv[], char *const envp[]);
int __real_fexecve(int fd, char *const argv[], char *const envp[]);
/* glibc 2.34 and later: weak, so an older C library still links. */
int __real_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) __attribute__((weak));

int __wrap_execve(const char *path, char *const argv[], char *const envp[])
{
	ftrt_trace_exec();
	return __real_execve(path, argv, envp);
}

int __wrap_execv(const char *path, char *const argv[])
{
	ftrt_trace_exec();
	return __real_execv(path, argv);
}

int __wrap_execvp(const char *file, char *const argv[])
{
	ftrt_trace_exec();
	return __real_execvp(file, argv);
}

int __wrap_execvpe(const char *file, char *const argv[], char *const envp[])
{
	ftrt_trace_exec();
	return __real_execvpe(file, argv, envp);
}

int __wrap_fexecve(int fd, char *const argv[], char *const envp[])
{
	ftrt_trace_exec();
	return __real_fexecve(fd, argv, envp);
}

int __wrap_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	ftrt_trace_exec();
	if (__real_execveat)
		return __real_execveat(dirfd, path, argv, envp, flags);
	long r = syscall(SYS_execveat, dirfd, path, argv, envp, flags);
	return (int)r;
}

/*
 * The arguments after arg, up to the null pointer, counted (argc, with
 * arg itself) as glibc's execl does: E2BIG past INT_MAX. -1 then.
 */
static long count_args(const char *arg, va_list ap)
{
	long argc = 1;
	if (!arg)
		return 0;
	while (va_arg(ap, const char *)) {
		if (++argc == INT_MAX) {
			errno = E2BIG;
			return -1;
		}
	}
	return argc;
}

/* argv[0, argc] from arg and ap: the arguments, then the null pointer. */
static void fill_args(char **argv, long argc, const char *arg, va_list ap)
{
	if (argc > 0)
		argv[0] = (char *)arg;
	for (long i = 1; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	argv[argc] = NULL;
}

/*
 * In an execl form: char *argv[] on its frame, from arg and the arguments
 * after it, and argc; ap is left at their null pointer (execle's
 * environment follows it). Returns -1 (E2BIG) past INT_MAX arguments.
 */
#define ARGV_FROM(arg, ap)                    \
	va_start(ap, arg);                    \
	long argc = count_args(arg, ap);      \
	va_end(ap);                           \
	if (argc < 0)                         \
		return -1;                    \
	char *argv[argc + 1];                 \
	va_start(ap, arg);                    \
	fill_args(argv, argc, arg, ap)

int __wrap_execl(const char *path, const char *arg, ...)
{
	va_list ap;
	ARGV_FROM(arg, ap);
	va_end(ap);
	ftrt_trace_exec();
	return __real_execv(path, argv);
}

int __wrap_execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	ARGV_FROM(arg, ap);
	va_end(ap);
	ftrt_trace_exec();
	return __real_execvp(file, argv);
}

/* execle: the environment follows the arguments' null pointer. */
int __wrap_execle(const char *path, const char *arg, ...)
{
	va_list ap;
	ARGV_FROM(arg, ap);
	if (argc > 0)
		(void)va_arg(ap, char *); /* the null pointer that ends them */
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	ftrt_trace_exec();
	return __real_execve(path, argv, envp);
}
