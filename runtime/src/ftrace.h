/*
 * ftrace.h: the ftpatch runtime's API, for a program linked with it
 * (cc ... $(ftpatch flags --libs)) that turns tracing of its own
 * functions on and off while it runs.
 *
 * Sites are enabled and disabled while every thread of the program goes
 * on running them: on x86-64 each changed site gets an int3 first, every
 * core is made to see it (membarrier), then the rest of the new
 * instruction, then its first byte, and a thread that meets a site in
 * between goes on as if it held the new instruction; the code is written
 * through /proc/self/mem, so it is never writable. A call under way when
 * its site changes is recorded whole (entry and exit) or not at all.
 *
 * Every function here may be called from any thread, at any time after
 * main has begun, but not from a signal handler (they take a lock, and
 * the filter functions allocate); the tracing_* functions excepted, which
 * are async-signal-safe. They return 0 or more on success, -1 with errno
 * set on failure, and ftrace_error() then says why.
 *
 * While this API is linked into a program, SIGTRAP is the runtime's
 * first: the program's own handler (installed before or after) still
 * receives every trap that is not a site being changed, and SIGTRAP is
 * kept out of the masks the program sets (sigprocmask, pthread_sigmask,
 * sigaction's sa_mask), as a thread that blocked it would be killed by
 * the trap of a site being changed.
 *
 * Globs are those of FTRACE_FILTER: a comma-separated list, each a shell
 * glob, `!glob` excluding; C++ functions match by symbol or, when a glob
 * has C++ punctuation, by demangled name. "" chooses every function.
 */
#ifndef FTPATCH_FTRACE_H
#define FTPATCH_FTRACE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Trace exactly the functions globs chooses (the others' sites are
 * disabled: an instruction that does nothing the program sees), or add
 * them to those traced (enable), or take them out (disable). Returns how
 * many sites changed. The first that enables a site in a process started
 * without FTRACE opens the trace (FTRACE_OUT, else ./ftrace.data) with
 * the tracer ftrace_set_tracer chose, by default function_graph. A
 * shared object loaded later gets the calls made before, in order (the
 * latest call choosing a function decides), when it is loaded.
 *
 * Errors: ENOSYS, the system allows no safe change of running code (no
 * membarrier; /proc/self/mem refused); ENOMEM; EACCES, the trace
 * directory cannot be made; ENOENT, no symbol table to find functions in.
 */
int ftrace_set_functions(const char *globs);
int ftrace_enable_functions(const char *globs);
int ftrace_disable_functions(const char *globs);

/* Which tracer records: "function" (one record a call), "function_graph"
 * (entries and exits, durations) or "nop" (the sites called, nothing
 * recorded). Calls under way keep the tracer they began with. EINVAL: no
 * such tracer; ENOTSUP: function_graph cannot follow this program's C++
 * exceptions (a static link). */
int ftrace_set_tracer(const char *name);
/* The tracer recording, or the one the first enable will start. */
const char *ftrace_current_tracer(void);

/* Pause recording, and resume it, without changing a site: enabled sites
 * still call the tracer, which records nothing while paused (a graphed
 * call that began before is still recorded whole). Cheap, and
 * async-signal-safe, as the kernel's functions of the same names. */
void tracing_off(void);
void tracing_on(void);
int tracing_is_on(void);

/* A snapshot of the flight recorder (FTRACE_BUFFER=ring:SIZE): what
 * every thread's ring holds now, written as a whole trace directory
 * (ftpatch replay reads it) into dir, or, dir NULL or "", into
 * snapshot-N inside the trace's directory; tracing goes on. The
 * directory made goes into made (size bytes), when given. ENOTSUP: the
 * trace is not a flight recorder's (it is written as it goes); ENOENT:
 * no trace is open; EACCES: the directory cannot be made. */
int ftrace_snapshot(const char *dir, char *made, size_t size);

/* How many sites are enabled now, in every module. */
long ftrace_enabled_sites(void);

/* Why the calling thread's last failed call failed. */
const char *ftrace_error(void);

#ifdef __cplusplus
}
#endif

#endif
