/*
 * The trace's end (from exit, quick_exit, _exit, or a signal handler
 * that calls one of them): the handshake that stops every thread's
 * tracer, the flush of every buffer, the final metadata; and, before an
 * exec, the flush of the calling thread's buffer. Calls thread.c (the
 * list of buffers), stream.c, meta.c, registry.c (to hold the modules
 * still) and raw system calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"
#include <linux/membarrier.h>

/* The status the process ends with (ftrt_trace_status), -1 while not
 * known. */
int ftrt_exit_code = -1;

void ftrt_trace_status(int status)
{
	if ((int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) == ftrt_trace_pid)
		ftrt_exit_code = status & 0xff;
}

/*
 * Every thread of the process now running passes a full barrier: its
 * next read of ftrt_ending sees 1, or the busy it set before that read is
 * seen here. (A thread not running passed one when it was switched out.)
 * The process registers for the expedited membarrier on first use, not
 * at the trace's start: registering waits on every CPU (0.1 ms here),
 * which a run that never has a second thread's buffer to flush need not
 * pay. Without membarrier (a kernel before 4.14, or a seccomp filter),
 * the same wait in time: a store waits in a CPU's store buffer for
 * nanoseconds, not 100 microseconds.
 */
static void barrier_all(void)
{
	if (ftrt_membarrier_state == 0)
		ftrt_membarrier_state = sys(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0, 0, 0, 0) == 0 ? 1 : -1;
	if (ftrt_membarrier_state < 0 || sys(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0, 0, 0, 0) != 0)
		ftrt_nap();
}

/* Whether another thread's buffer is the end's to flush: once
 * ftrt_ending is seen everywhere, wait (until the deadline) for the
 * record or flush its thread is making to be done; from then on that
 * thread leaves its buffer alone. 0 when it stayed busy: skipped. */
static int settled(struct tbuf *b, uint64_t deadline)
{
	for (int i = 0; b->busy; i++) {
		if (mono_ns() > deadline)
			return 0;
		if (i < 1000)
			cpu_relax(); /* a record takes nanoseconds... */
		else
			ftrt_nap(); /* ...a flush, a write system call */
	}
	return 1;
}

/*
 * The trace's end, from exit or quick_exit (their handlers) or _exit
 * (exit.c), which may be called from a signal handler or in a child
 * after fork: flush every buffer of this process, then, in the process
 * that made the directory, write the final metadata. Async-signal-safe:
 * raw system calls, no lock or buffer waited for longer than END_WAIT_NS
 * all told (what cannot be taken by then is left out). A signal handler
 * may have interrupted this thread's tracer (its buffer busy) or a
 * flush, or an end, on this thread: a buffer holds whole records up to n
 * whatever the point (publish), and each flush writes its records where
 * they go in the stream, again if an interrupted flush had begun to.
 * Run twice (exit, then _exit from a later handler), it writes what came
 * since.
 */
void ftrt_trace_end(void)
{
	/* Ended by ftpatch record -p already (ftrt_live_end): that end is
	 * the trace's, the process's own later one (exit) leaves it so. */
	if (ftrt_trace_fd < 0 || ftrt_end_detached > 1)
		return;
	/* A child made by vfork (or a raw clone) shares the parent's memory,
	 * or has a copy made without after_fork_child: the buffers in the list
	 * are not its own to write or close. It leaves them alone. */
	if ((int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != ftrt_trace_pid)
		return;
	int me = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	struct tbuf *own = tb;
	/* A handler that ends the trace interrupted this thread's tracer: its
	 * record may be written and not yet counted, or counted and not yet
	 * written. */
	if (own && own->busy)
		own->uncounted = 1;
	ftrt_thread_busy = 1;
	__atomic_store_n(&ftrt_ending, 1, __ATOMIC_SEQ_CST);
	uint64_t tsc_end = now(), mono_end = mono_ns(), deadline = mono_end + END_WAIT_NS;
	ftrt_writer_drain(deadline); /* the hand-offs written first (writer mode) */
	int held = ftrt_bufs_take(me, deadline);
	/* Another thread's buffer is flushed only once that thread is seen
	 * out of its tracer (settled), which needs a barrier on every CPU:
	 * only when there is one. A thread with no buffer yet makes it under
	 * the list, so it sees ftrt_ending once the end lets the list go. */
	for (struct tbuf *b = held ? ftrt_bufs : NULL; b; b = b->next)
		if (b != own) {
			barrier_all();
			break;
		}
	for (struct tbuf *b = held ? ftrt_bufs : NULL; b; b = b->next) {
		if (b == own)
			continue;
		if (settled(b, deadline)) {
			ftrt_stream_summary(b, 0);
			ftrt_flush(b);
		} else
			atomic_fetch_add_explicit(&ftrt_lost_threads, 1, memory_order_relaxed);
	}
	if (!held) /* every other thread's buffer is lost */
		atomic_fetch_add_explicit(&ftrt_lost_threads, (uint64_t)(atomic_load_explicit(&ftrt_nbufs, memory_order_relaxed) - (own != NULL)),
					  memory_order_relaxed);
	/* This thread's own, whatever its busy says (a handler interrupted
	 * it): it records no more, and only it unmaps it (thread_exit clears
	 * tb first). Still holding the list, as the end of another thread
	 * that walks it may flush it too. */
	if (own) {
		ftrt_stream_summary(own, 1);
		ftrt_flush(own);
	}
	if (held == 1)
		ftrt_bufs_unlock();
	ftrt_sched_drain(deadline); /* the last context switches, before the counts are written */
	if (ftrt_trace_pid != ftrt_creator_pid)
		return;
	int mods = ftrt_modules_hold();
	ftrt_meta_write(1, tsc_end, mono_end, META_END, 0);
	if (mods)
		ftrt_modules_release();
}

int ftrt_trace_again(void)
{
	if (__atomic_load_n(&ftrt_end_detached, __ATOMIC_ACQUIRE) < 2)
		return -EINVAL;
	uint64_t deadline = mono_ns() + END_WAIT_NS;
	if (ftrt_bufs_take((int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0), deadline) != 1)
		return -EBUSY; /* a thread making or ending its buffer (or this one's handler) */
	/* The end raised ftrt_ending long ago, and every thread has passed a
	 * barrier since (the end's membarrier): none takes its buffer from
	 * here on but to pop a returning call off its shadow stack. One that
	 * took it before the end and has not let it go (a handler stopped
	 * inside the tracer) is waited for, then refused. */
	int ok = 1;
	for (struct tbuf *b = ftrt_bufs; b && ok; b = b->next)
		ok = settled(b, deadline);
	if (ok)
		for (struct tbuf *b = ftrt_bufs; b; b = b->next)
			ftrt_tbuf_restart(b);
	ftrt_bufs_unlock();
	if (!ok)
		return -EBUSY;
	barrier_all(); /* each thread's next look at its buffer sees it emptied */
	ftrt_trace_zero_counts();
	return 0;
}

/*
 * Before an exec (exec.c): write this thread's buffer out, as the exec
 * would discard it; in the process that made the trace, also the final
 * metadata (an exec that fails returns, and the end writes it again).
 * Tracing goes on: the program an exec fails in is still traced. Other
 * threads' buffers are left: the exec ends those threads, and taking
 * their buffers would need the end's handshake, which stops every
 * thread's tracing for good. The metadata counts those that hold
 * records in lost_threads, and the program exec'd leaves this trace
 * where it is (dir.c). Async-signal-safe; nothing in a child that
 * shares its parent's memory (vfork), as at the end. A buffer whose
 * thread was interrupted inside its tracer (the exec is a signal
 * handler's) is in the middle of a record, and is left too.
 */
void ftrt_trace_exec(void)
{
	if (ftrt_trace_fd < 0 || ftrt_end_detached > 1 || (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != ftrt_trace_pid)
		return;
	struct tbuf *b = tb;
	/* A child forked without an image yet (trace.c) that recorded
	 * nothing, as most that exec: no image; its new program's is its
	 * first. */
	if (ftrt_trace_fork_pending() && (!b || !__atomic_load_n(&b->n, __ATOMIC_RELAXED)) &&
	    atomic_load_explicit(&ftrt_nbufs, memory_order_relaxed) <= (b != NULL) &&
	    !atomic_load_explicit(&ftrt_recorded_bytes, memory_order_relaxed))
		return;
	ftrt_writer_drain(mono_ns() + END_WAIT_NS); /* the exec ends the writer: what it holds first */
	ftrt_sched_drain(mono_ns() + END_WAIT_NS / 100); /* the exec drops the event and its ring */
	if (b && ftrt_record_up.take && ftrt_record_up.take(b, (uintptr_t)__builtin_frame_address(0))) {
		if (!ended()) { /* the end, on another thread, takes it otherwise */
			ftrt_stream_summary(b, 1); /* the stream's last records, unless the exec fails */
			ftrt_flush(b);
		}
		unbusy(b, 0);
	}
	if (ftrt_trace_pid != ftrt_creator_pid || __atomic_load_n(&ftrt_ending, __ATOMIC_RELAXED))
		return;
	uint64_t gone = 0;
	int others = atomic_load_explicit(&ftrt_nbufs, memory_order_relaxed) - (b != NULL);
	if (others > 0) {
		int held = ftrt_bufs_take((int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0), mono_ns() + END_WAIT_NS / 100);
		for (struct tbuf *x = held ? ftrt_bufs : NULL; x; x = x->next)
			gone += x != b && (__atomic_load_n(&x->n, __ATOMIC_RELAXED) || x->busy);
		if (held == 1)
			ftrt_bufs_unlock();
		if (!held)
			gone = (uint64_t)others;
	}
	int mods = ftrt_modules_hold();
	ftrt_meta_write(1, now(), mono_ns(), "meta.exec.tmp", gone);
	if (mods)
		ftrt_modules_release();
}
