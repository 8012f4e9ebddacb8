/*
 * _exit and _Exit: the trace survives a program that ends without exit.
 *
 * The trace's buffers are flushed, and its final metadata written, at
 * exit, after its last exit function (lifetime.c). _exit runs none: a program
 * that ends with _exit, a forked child that does (as a child should, so
 * as not to flush its parent's stdio twice), a signal handler that ends
 * the program with it: each lost every event still in its buffers (up
 * to 1.5 MiB a thread) and, in the process that made the trace, left it
 * no final metadata. So the runtime defines them: they end the trace as
 * exit does (ftrt_trace_end), its metadata saying the status (exit_code),
 * then end the process with the exit_group system call, as the C
 * library's do.
 *
 * Weak, so a program's own _exit wins with no link error (and then the
 * events are lost as before), as would libc.a's in a static link that
 * pulled it in. The link flags (ftpatch flags --libs) name _exit
 * undefined, which pulls this file out of the archive (first: in a
 * static link too, libc's is then left out), and export both, so a
 * shared object's call binds here too.
 *
 * Whom they serve: calls from the program and from shared objects, which
 * go through the symbol. Not the C library's own: glibc calls its hidden
 * alias directly. Checked on Debian's glibc 2.36 (objdump -d libc.so.6):
 * abort, the code that calls main, __run_exit_handlers (exit's end) and
 * __spawni_child (posix_spawn's child, and so system's) all `call` _exit
 * at its own address, and libc.so.6 has no PLT slot for it. So exit()
 * does not come here after its atexit handlers. In a static link it does
 * (libc.a calls _exit by name, and gets this one: seen with gcc -static),
 * and so do posix_spawn's children; the end then runs twice, which writes
 * no record twice (ftrt_trace_end), and in a child it does nothing.
 *
 * Children that share memory: a child of vfork (or of posix_spawn, or
 * clone with CLONE_VM) runs on its parent's memory, its parent's thread
 * buffer in its TLS, until it calls exec or _exit. Flushing or closing
 * anything there would take the parent's buffers from under it. Such a
 * child has a pid of its own but was never made the buffers' owner
 * (after_fork_child runs for fork only), and ftrt_trace_end does nothing
 * then: the child just exits.
 *
 * Async-signal-safe, as _exit must be (it is called from signal handlers
 * and between fork and exec): ftrt_trace_end makes raw system calls and
 * waits on no lock longer than a bounded time.
 */
#include "arch/sys.h"
#include "core/ftrt.h"

__attribute__((weak, noreturn)) void _exit(int status)
{
	ftrt_trace_status(status);
	ftrt_trace_end();
	sys_exit_group(status);
}

/* C99's name for the same. */
extern __typeof__(_exit) _Exit __attribute__((weak, alias("_exit")));
