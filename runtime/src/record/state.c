/*
 * The state the files that record a trace share (tracer.h): the
 * thread's buffer, the list of every buffer, the counts the metadata
 * reports, and the flags the tracers' fast paths read. Definitions only:
 * this file calls nothing, so every tracer file may use it.
 */
#include <pthread.h>

#include "tracer.h"

unsigned ftrt_max_depth = SHADOW_MAX; /* FTRACE_DEPTH: calls deeper than this are not graphed */
uint64_t ftrt_thresh_tsc;             /* FTRACE_THRESH in rdtsc ticks: shorter leaf calls are not kept */

__thread struct tbuf *ftrt_tb __attribute__((tls_model("initial-exec"), visibility("hidden")));
__thread volatile int ftrt_thread_busy;

/*
 * Every live buffer of this process, guarded by ftrt_bufs_owner: the thread id
 * of the thread that holds the list, 0 when none does. A lock that names
 * its holder, rather than a pthread mutex, because the trace's end may
 * run in a signal handler (_exit) that interrupted this very thread while
 * it held the list: it can tell that case (the list is then as the
 * interrupted code left it, every link whole, and nobody else can change
 * it) from another thread holding it (wait, but not for ever).
 */
struct tbuf *ftrt_bufs;
_Atomic int ftrt_bufs_owner;
_Atomic uint64_t ftrt_dropped;
_Atomic uint64_t ftrt_overflow; /* calls not graphed: the thread's shadow stack overflowed */
_Atomic uint64_t ftrt_unwound;  /* graphed frames left without returning */
_Atomic uint64_t ftrt_stopped;  /* threads whose shadow stack overflowed */
_Atomic uint64_t ftrt_lost_bytes; /* records recorded but not written (a write failed, RLIMIT_FSIZE) */
_Atomic uint64_t ftrt_recorded_bytes; /* records flushed: written, or counted in lost_bytes */
_Atomic uint64_t ftrt_lost_threads; /* threads whose buffers the end could not write */
_Atomic int ftrt_nbufs;            /* buffers in ftrt_bufs */
int ftrt_trace_fd = -1;
int ftrt_end_detached;
int ftrt_creator_pid;  /* made the directory: writes meta */
int ftrt_trace_pid;    /* owns the buffers in ftrt_bufs: creator_pid, or a forked child's pid */
int ftrt_membarrier_state; /* MEMBARRIER_CMD_PRIVATE_EXPEDITED: 0 not registered yet, 1 registered, -1 refused */

/* The function tracer's fast path (entry.S) may run: the trace is open,
 * the tracer is function and the clock the TSC. */
__attribute__((visibility("hidden"))) int ftrt_fast_function;
/* The graph tracer's fast paths (ftrace_graph_enter and _leave) may run:
 * the trace is open, the tracer is function_graph, the clock the TSC and
 * no FTRACE_THRESH (whose bookkeeping is the C path's). */
__attribute__((visibility("hidden"))) int ftrt_fast_graph;
/*
 * The trace is ending (ftrt_trace_end): nothing more is recorded. Each
 * tracer path sets its thread's busy and then reads this (ended(), and
 * the same two steps in entry.S); the end sets this, makes every running
 * thread pass a full barrier (membarrier), then waits for each buffer's
 * busy to clear. Either a thread's read sees the end, and it backs off
 * without touching its buffer, or the end sees its busy and waits for the
 * record to be done: never both missed. The tracer pays a compiler
 * barrier and one load; the fences are all the end's.
 */
__attribute__((visibility("hidden"))) int ftrt_ending;

/* Recording is paused (ftrace.h's tracing_off): the C paths record
 * nothing, and the fast paths' flags are off (ftrt_trace_go). */
int ftrt_paused;
/* function_graph has been the tracer: graphed calls may be under way,
 * whatever the tracer is now, and the unwinder's hooks (walk.c) must
 * mind them. */
int ftrt_graph_used;
/* A graph user (fgraph.c) has been registered: calls it hooked may be
 * under way, which the unwinder's hooks must mind as the tracer's. */
int ftrt_graph_users;

/* Process-wide choices of the graph tracer made while it runs. */
struct ftrt_record_calls ftrt_record_up;

int ftrt_subtree;
const char *ftrt_subtree_funcs, *ftrt_subtree_notrace;

_Atomic unsigned ftrt_ctx_gen;
_Atomic uint64_t ftrt_ctx_made, ftrt_ctx_lost;

int ftrt_graph_slow; /* a context exists: every call takes the C path (stack_at) */
int ftrt_graph_off;  /* a context's stack is unknown: calls are recorded, not graphed */

void ftrt_graph_contexts(void)
{
	__atomic_store_n(&ftrt_graph_slow, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&ftrt_fast_graph, 0, __ATOMIC_RELAXED);
}

void ftrt_graph_ungraphed(void)
{
	__atomic_store_n(&ftrt_graph_off, 1, __ATOMIC_RELAXED);
}

int ftrt_tracing(void)
{
	return ftrt_trace_fd >= 0;
}
