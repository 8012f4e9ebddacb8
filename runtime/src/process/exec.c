/*
 * The exec and spawn functions: a process's events survive its exec,
 * and a child it starts with an environment of its own is traced.
 *
 * A thread's records wait in its buffer until it fills, the thread
 * exits or the process ends (thread.c, end.c). exec ends none of those: it
 * replaces the process's memory, buffers and all. A forked child that
 * execs, as most do, lost every event it had between fork and exec; a
 * program that execs in place, everything since its last flush. So the
 * program's calls of the exec functions go through these wrappers,
 * which write the calling thread's buffer out (ftrt_trace_exec), then
 * call the C library's own function with the same arguments.
 *
 * A child is traced when its environment carries FTRACE*, as a child
 * that inherits its parent's does. One the program gives an environment
 * of its own (execve, execle, execvpe, fexecve, execveat, posix_spawn,
 * posix_spawnp) that holds no FTRACE* variable at all gets the settings
 * this process started with added to a copy of it (env.c), so it is
 * traced beside this process (into DIR.PID, its trace directory being in
 * use) as a forked-and-exec'd child is. FTRACE_INHERIT=0 in this
 * process's environment says not to; so does any FTRACE* variable in the
 * child's (the program chose its settings); a secure-execution process
 * passes nothing on. The copy is made on the caller's stack, as glibc's
 * execl makes its argv: exec is async-signal-safe and may be called in a
 * child of vfork, whose memory is its parent's (an mmap there would be
 * the parent's too, and stay after the exec). The copy's calls of the C
 * library (strncmp) are the runtime's, never the program's library
 * calls (tracers/libcall.c): ftrt_in_runtime is raised for them, and is
 * back as it was before the exec (a vfork child's thread-local memory
 * is its parent's).
 *
 * Wrapped at link time: ftpatch flags --libs passes --wrap=execve (and
 * the rest), so the program's references to execve bind to
 * __wrap_execve here, and this file's __real_execve to the C library's.
 * Nothing is reimplemented (execvp's search of PATH stays glibc's), and
 * it works alike in a static link. What it cannot see: a call from a
 * shared object (bound at run time, not wrapped), from the C library
 * itself (system and popen run their child inside libc), or in a program
 * linked without these flags (ftpatch enable's pre-patched files); those
 * events are lost, and those children's environments are theirs, as
 * before. A program that defines an exec function of its own keeps it
 * (the wrapper's __real_ reference binds to it), but for an execl form:
 * the wrapper calls the matching v form.
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
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/ftrt.h"

/*
 * env: the environment a child given envp gets, declared on the
 * caller's frame: envp itself, or a copy of it with the process's
 * FTRACE* settings added (env.c).
 */
#define CHILD_ENV(env, envp)                                   \
	ftrt_in_runtime++; /* strncmp's, not the program's */  \
	size_t env##_n = ftrt_child_env_size(envp);             \
	char *env##_copy[env##_n ? env##_n : 1];                \
	char *const *env = (envp);                              \
	if (env##_n) {                                          \
		ftrt_child_env_fill(env##_copy, envp);          \
		env = env##_copy;                               \
	}                                                       \
	ftrt_in_runtime--

int __real_execve(const char *path, char *const argv[], char *const envp[]);
int __real_execv(const char *path, char *const argv[]);
int __real_execvp(const char *file, char *const argv[]);
int __real_execvpe(const char *file, char *const argv[], char *const envp[]);
int __real_fexecve(int fd, char *const argv[], char *const envp[]);
/* glibc 2.34 and later: weak, so an older C library still links. */
int __real_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) __attribute__((weak));
int __real_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr,
		       char *const argv[], char *const envp[]);
int __real_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr,
			char *const argv[], char *const envp[]);

int __wrap_execve(const char *path, char *const argv[], char *const envp[])
{
	CHILD_ENV(env, envp);
	ftrt_trace_exec();
	return __real_execve(path, argv, env);
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
	CHILD_ENV(env, envp);
	ftrt_trace_exec();
	return __real_execvpe(file, argv, env);
}

int __wrap_fexecve(int fd, char *const argv[], char *const envp[])
{
	CHILD_ENV(env, envp);
	ftrt_trace_exec();
	return __real_fexecve(fd, argv, env);
}

int __wrap_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	CHILD_ENV(env, envp);
	ftrt_trace_exec();
	if (__real_execveat)
		return __real_execveat(dirfd, path, argv, env, flags);
	long r = syscall(SYS_execveat, dirfd, path, argv, env, flags);
	return (int)r;
}

/* posix_spawn: the parent goes on, and nothing of its trace is the
 * child's to write; only the child's environment is seen to. */
int __wrap_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr,
		       char *const argv[], char *const envp[])
{
	CHILD_ENV(env, envp);
	return __real_posix_spawn(pid, path, actions, attr, argv, env);
}

int __wrap_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr,
			char *const argv[], char *const envp[])
{
	CHILD_ENV(env, envp);
	return __real_posix_spawnp(pid, file, actions, attr, argv, env);
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

/* argv[0, argc] from arg and *ap: the arguments, then the null pointer.
 * By pointer: *ap must be left after them for execle's environment. (A
 * va_list passed by value is the caller's own on x86-64, an array, but a
 * copy on arm64, a struct, which the C standard allows: then execle read
 * its environment from the first argument.) */
static void fill_args(char **argv, long argc, const char *arg, va_list *ap)
{
	if (argc > 0)
		argv[0] = (char *)arg;
	for (long i = 1; i < argc; i++)
		argv[i] = va_arg(*ap, char *);
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
	fill_args(argv, argc, arg, &ap)

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
	CHILD_ENV(env, envp);
	ftrt_trace_exec();
	return __real_execve(path, argv, env);
}

#ifdef FTRT_PRELOAD
#include "tracers/entry.h"

/* Preloaded: the C library's exec and spawn functions are these
 * wrappers (tracers/entry.h), whichever module calls them. */
FTRT_INTERPOSE(execve);
FTRT_INTERPOSE(execv);
FTRT_INTERPOSE(execvp);
FTRT_INTERPOSE(execvpe);
FTRT_INTERPOSE(execl);
FTRT_INTERPOSE(execle);
FTRT_INTERPOSE(execlp);
FTRT_INTERPOSE(fexecve);
FTRT_INTERPOSE(execveat);
FTRT_INTERPOSE(posix_spawn);
FTRT_INTERPOSE(posix_spawnp);
FTRT_REAL(int, execve, (const char *path, char *const argv[], char *const envp[]), (path, argv, envp))
FTRT_REAL(int, execv, (const char *path, char *const argv[]), (path, argv))
FTRT_REAL(int, execvp, (const char *file, char *const argv[]), (file, argv))
FTRT_REAL(int, execvpe, (const char *file, char *const argv[], char *const envp[]), (file, argv, envp))
FTRT_REAL(int, fexecve, (int fd, char *const argv[], char *const envp[]), (fd, argv, envp))
FTRT_REAL(int, posix_spawn,
	  (pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr, char *const argv[],
	   char *const envp[]),
	  (pid, path, actions, attr, argv, envp))
FTRT_REAL(int, posix_spawnp,
	  (pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr, char *const argv[],
	   char *const envp[]),
	  (pid, file, actions, attr, argv, envp))

/* execveat: glibc 2.34 and later; the system call where the C library
 * has none. */
int __real_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	static void *cache;
	int (*real)(int, const char *, char *const[], char *const[], int) =
		(int (*)(int, const char *, char *const[], char *const[], int))ftrt_next("execveat", &cache);
	if (real)
		return real(dirfd, path, argv, envp, flags);
	return (int)syscall(SYS_execveat, dirfd, path, argv, envp, flags);
}
#endif
