/*
 * Each thread's buffer (tracer.h's struct tbuf): made at its first event
 * and listed, for the trace's end; flushed and unmapped at its exit;
 * kept, emptied, by the forking thread in a child after fork. Calls
 * stream.c (flush), shadow.c (the calls left open at a thread's exit)
 * and the clock.
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

#include "encode.h"
#include "tracer.h"

static pthread_key_t exit_key;

void ftrt_nap(void)
{
	struct timespec ts = { .tv_nsec = 100000 };
	sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
}

void ftrt_bufs_lock(int me)
{
	int free = 0;
	while (!atomic_compare_exchange_weak_explicit(&ftrt_bufs_owner, &free, me, memory_order_acquire, memory_order_relaxed)) {
		free = 0;
		sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	}
}

void ftrt_bufs_unlock(void)
{
	atomic_store_explicit(&ftrt_bufs_owner, 0, memory_order_release);
}

/* The list for the trace's end: 1 taken; 2 this thread held it already
 * (a signal handler interrupted it: do not release it); 0 another thread
 * kept it until the deadline (CLOCK_MONOTONIC ns). */
int ftrt_bufs_take(int me, uint64_t deadline)
{
	for (;;) {
		int free = 0;
		if (atomic_compare_exchange_strong_explicit(&ftrt_bufs_owner, &free, me, memory_order_acquire, memory_order_relaxed))
			return 1;
		if (free == me)
			return 2;
		if (mono_ns() > deadline)
			return 0;
		ftrt_nap();
	}
}

/* A thread's first event: map its buffer and register it for the flush
 * at thread exit (pthread key destructor) and at the trace's end (list). */
struct tbuf *ftrt_tbuf_new(void)
{
	long m = sys(SYS_mmap, 0, sizeof(struct tbuf), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m < 0 && m > -4096)
		return NULL;
	struct tbuf *b = (struct tbuf *)m;
	b->fd = FD_NONE;
	b->cur = &b->own;
	b->pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	b->tid = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	unsigned long mask;
	sys_sigs_hold(&mask);
	ftrt_bufs_lock(b->tid);
	b->next = ftrt_bufs;
	ftrt_bufs = b;
	atomic_fetch_add_explicit(&ftrt_nbufs, 1, memory_order_relaxed);
	ftrt_bufs_unlock();
	sys_sigs_release(&mask);
	pthread_setspecific(exit_key, b);
	tb = b;
	if (b->tid != b->pid)
		ftrt_sched_reader(); /* a second thread: the scheduler events' reader, once */
	return b;
}

/*
 * Thread exit: flush, unlink from the list, unmap. All but the unmap
 * holding the list, so a trace's end that runs meanwhile on another
 * thread either finds the buffer in the list, not yet busy, and flushes
 * it itself, or waits until it is written; and flushed before it is
 * unlinked, so an end in a signal handler that interrupts the flush
 * finds it (as this thread's own) and finishes it. Graphed calls still
 * open were left without returning (pthread_exit, pthread_cancel: a
 * forced unwind that ran no landing pad above them): recorded so.
 */
static void ftrt_thread_exit(void *p)
{
	struct tbuf *b = p;
	ftrt_thread_busy = 1; /* nothing of this thread is traced from here on */
	unsigned long mask;
	sys_sigs_hold(&mask);
	ftrt_writer_wait(b, mono_ns() + END_WAIT_NS); /* its hand-offs written before its stream closes */
	ftrt_bufs_lock(b->tid);
	b->busy = BUSY_HELD;
	if (!ended() && ftrt_record_up.left_all)
		ftrt_record_up.left_all(b, (uintptr_t)__builtin_frame_address(0), now());
	ftrt_stream_summary(b, 1);
	ftrt_flush(b);
	for (struct tbuf **pp = &ftrt_bufs; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			atomic_fetch_sub_explicit(&ftrt_nbufs, 1, memory_order_relaxed);
			break;
		}
	tb = NULL;
	ftrt_bufs_unlock();
	sys_sigs_release(&mask);
	if (b->fd >= 0)
		ftrt_stream_close(b, b->fd);
	ftrt_ring_free(b);
	sys(SYS_munmap, (long)b, sizeof *b, 0, 0, 0, 0);
}

/* At the trace's start: the flush at each thread's exit (a pthread key's
 * destructor). -1 when no key is left. */
int ftrt_thread_start(void)
{
	static int made; /* once: a second trace (ftpatch record -p again) keeps the key */
	if (!made && pthread_key_create(&exit_key, ftrt_thread_exit) != 0)
		return -1;
	made = 1;
	return 0;
}

/*
 * Buffer b made ready for a new stream (a forked child's, or a second
 * trace's: end.c's ftrt_trace_again), its records so far dropped as if
 * flushed: base goes on counting past them, so no shadow entry of
 * before takes a new record for its own (FTRACE_THRESH); the new stream
 * starts with a TIME. The calls running now have their entries in the
 * old stream: their ends are recorded in neither (MARK_INHERITED).
 * Contexts' calls, on shadow stacks of their own, are not followed so:
 * a process that made any leaves its new counts to be read from the
 * records. Its thread records nothing meanwhile (alone in a child; the
 * trace ending, and b seen not busy, for a second trace).
 */
void ftrt_tbuf_restart(struct tbuf *b)
{
	b->base += b->n;
	b->n = 0;
	b->last = 0;
	b->fd = FD_NONE;
	b->pending = 0;
	ftrt_ring_forget(b);
	b->calls = b->entries = b->exits = b->unwound = 0;
	b->first = 0;
	b->summed = b->base;
	b->uncounted = atomic_load_explicit(&ftrt_ctx_made, memory_order_relaxed) != 0;
	for (uint32_t i = 0; i < b->own.depth; i++)
		b->own.e[i].mark |= MARK_INHERITED;
}

/* In a child after fork: the parent's records are the parent's to write,
 * and only the forking thread exists here. Keep its buffer, emptied and
 * with a stream of its own; unmap the copies of the others'. From here
 * on the buffers in the list are this process's (trace_pid). */
void ftrt_after_fork_child(void)
{
	struct tbuf *keep = tb;
	for (struct tbuf *b = ftrt_bufs, *next; b; b = next) {
		next = b->next;
		if (b->fd >= 0) /* the parent's stream, open here too */
			ftrt_stream_close(b, b->fd);
		if (b != keep) {
			ftrt_ring_free(b);
			sys(SYS_munmap, (long)b, sizeof *b, 0, 0, 0, 0);
		}
	}
	ftrt_bufs = keep;
	atomic_store_explicit(&ftrt_nbufs, keep ? 1 : 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_bufs_owner, 0, memory_order_relaxed);
	ftrt_membarrier_state = 0; /* a registration is the parent's memory's, not this copy's */
	ftrt_writer_forget();      /* no writer thread here */
	ftrt_trace_pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (keep) {
		keep->next = NULL;
		ftrt_tbuf_restart(keep); /* the parent's records are the parent's */
		keep->pid = ftrt_trace_pid;
		keep->tid = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	}
}

/* A thread of the runtime's own (ctl.c's server, writer.c's writer):
 * detached, every signal blocked (the program's go to its own threads),
 * running fn. 0, or an error number. */
/* A runtime thread's start: its calls are the runtime's (ftrt_in_runtime),
 * then fn's own. */
struct spawned {
	void *(*fn)(void *);
};

static void *runtime_thread(void *arg)
{
	ftrt_in_runtime = 1;
	ftrt_sched_own_thread(); /* its context switches are not the program's */
	return ((struct spawned *)arg)->fn(NULL);
}

int ftrt_spawn(void *(*fn)(void *))
{
	/* One per function (the server, the writer): each started once. */
	static struct spawned spawned[4];
	static int nspawned;
	struct spawned *sp = NULL;
	for (int i = 0; i < nspawned && !sp; i++)
		if (spawned[i].fn == fn)
			sp = &spawned[i];
	if (!sp && nspawned < 4) {
		sp = &spawned[nspawned++];
		sp->fn = fn;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	int err = sp ? pthread_create(&t, &at, runtime_thread, sp) : pthread_create(&t, &at, fn, NULL);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
