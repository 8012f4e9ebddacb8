/*
 * Writing off the traced threads (FTRACE_BUFFER=writer): a thread whose
 * buffer is full copies its records into a spare segment and hands it
 * to the runtime's writer thread, which writes it to the thread's
 * stream; the traced thread makes no write system call for its records
 * (its stream's file is made, empty, at its first hand-off: the writer
 * writes the header too). On a machine with a core to spare, the write's
 * cost leaves the traced threads.
 *
 * SEGMENTS spare segments are shared by every thread, on a free list,
 * and the segments handed off wait in a queue, both under one lock (a
 * spinlock: a hand-off is a few words of bookkeeping; signals held back
 * meanwhile, so a handler's traced calls never wait on it). When none is
 * free (the writer is behind), or before the writer runs (it starts when
 * the program's initialisers begin: lifetime.c), or in a forked child
 * (which has no writer), the thread writes its buffer itself, as in
 * stream mode.
 *
 * Each hand-off carries its place in the stream (the offset stream mode
 * would write it at), so the writer writes in any order, and a thread's
 * own writes (at its exit, at the end) go where they would have. Before
 * those, the thread's hand-offs are waited for (pending), and so are
 * all of them before the trace's end writes the metadata (ftrt_writer_drain).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/futex.h>

#include "arch/fds.h"
#include "tracer.h"

#define SEGMENTS 8
#define SEGMENT ((size_t)TBUF_WORDS * 8)

int ftrt_writer; /* FTRACE_BUFFER=writer: hand full buffers off */
static int running, running_pid; /* the writer runs, in process running_pid */

struct handoff {
	struct tbuf *b;
	uint64_t *seg;
	uint32_t n;
	int header; /* the stream's first: the writer writes its header too */
	uint64_t off;
};

static _Atomic int lock;
static uint64_t *free_segs[SEGMENTS];
static int nfree;
static struct handoff queue[SEGMENTS];
static int qhead, qlen;
static _Atomic uint32_t work; /* futex word: hand-offs waiting, or being written */
static _Atomic uint64_t self_written; /* buffers their threads wrote, none free */

static void take_lock(void)
{
	int free = 0;
	while (!atomic_compare_exchange_weak_explicit(&lock, &free, 1, memory_order_acquire, memory_order_relaxed)) {
		free = 0;
		cpu_relax();
	}
}

static void give_lock(void)
{
	atomic_store_explicit(&lock, 0, memory_order_release);
}

static void *writer_main(void *arg)
{
	(void)arg;
	for (;;) {
		uint32_t w = atomic_load_explicit(&work, memory_order_acquire);
		unsigned long mask;
		sys_sigs_hold(&mask);
		take_lock();
		struct handoff h = { 0 };
		int got = qlen > 0;
		if (got) {
			h = queue[qhead];
			qhead = (qhead + 1) % SEGMENTS;
			qlen--;
		}
		give_lock();
		sys_sigs_release(&mask);
		if (!got) {
			sys(SYS_futex, (long)&work, FUTEX_WAIT_PRIVATE, (long)w, 0, 0, 0);
			continue;
		}
		struct tbuf *b = h.b;
		size_t len = (size_t)h.n * 8, done = 0;
		int fd = ftrt_stream_fd(b);
		if (fd >= 0) {
			if (h.header) {
				unsigned char hdr[STREAM_HEADER];
				ftrt_stream_header(hdr, b);
				ftrt_put(fd, hdr, sizeof hdr, 0);
			}
			done = ftrt_put_records(fd, h.seg, h.n, h.off);
		}
		if (done < len) {
			atomic_fetch_add_explicit(&ftrt_lost_bytes, len - done, memory_order_relaxed);
			__atomic_store_n(&b->uncounted, 1, __ATOMIC_RELAXED); /* a hole in the stream: its summary's counts hold what is not there */
		}
		sys_sigs_hold(&mask);
		take_lock();
		free_segs[nfree++] = h.seg;
		give_lock();
		sys_sigs_release(&mask);
		__atomic_fetch_sub(&b->pending, 1, __ATOMIC_RELEASE);
		atomic_fetch_sub_explicit(&work, 1, memory_order_release);
	}
	return NULL;
}

/* When the program's initialisers begin (lifetime.c): the writer thread
 * and its segments, in writer mode. */
void ftrt_writer_start(void)
{
	if (!ftrt_writer || running || ftrt_trace_fd < 0)
		return;
	long m = sys(SYS_mmap, 0, (long)(SEGMENTS * SEGMENT), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sys_failed(m))
		return;
	for (int i = 0; i < SEGMENTS; i++)
		free_segs[i] = (uint64_t *)(m + (long)(i * SEGMENT));
	nfree = SEGMENTS;
	if (ftrt_spawn(writer_main) != 0) {
		sys(SYS_munmap, m, (long)(SEGMENTS * SEGMENT), 0, 0, 0, 0);
		nfree = 0;
		return;
	}
	running_pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	__atomic_store_n(&running, 1, __ATOMIC_RELEASE);
}

/*
 * The buffer is full (encode.h's room), with it taken (busy): hand it to
 * the writer, or write it here when that cannot be. Emptied either way,
 * as ftrt_flush empties it.
 */
void ftrt_writer_handoff(struct tbuf *b)
{
	uint32_t n = b->n;
	if (!__atomic_load_n(&running, __ATOMIC_ACQUIRE) || (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != running_pid ||
	    b->fd == FD_LOST || n == 0) {
		ftrt_flush(b);
		return;
	}
	unsigned long mask;
	sys_sigs_hold(&mask);
	int header = 0;
	if (b->fd < 0) {
		if (ftrt_stream_make_as(b, 0) != 0) {
			sys_sigs_release(&mask);
			ftrt_flush(b); /* counts the records lost */
			return;
		}
		header = 1;
	}
	take_lock();
	uint64_t *seg = nfree > 0 ? free_segs[--nfree] : NULL;
	give_lock();
	if (!seg) {
		sys_sigs_release(&mask);
		atomic_fetch_add_explicit(&self_written, 1, memory_order_relaxed);
		int fd = header ? ftrt_stream_fd(b) : -1;
		if (fd >= 0) { /* the writer would have written it */
			unsigned char hdr[STREAM_HEADER];
			ftrt_stream_header(hdr, b);
			ftrt_put(fd, hdr, sizeof hdr, 0);
		}
		ftrt_flush(b);
		return;
	}
	memcpy(seg, b->words, (size_t)n * 8);
	struct handoff h = { .b = b, .seg = seg, .n = n, .header = header, .off = 16 + (b->base - b->skip) * 8 };
	__atomic_fetch_add(&b->pending, 1, __ATOMIC_RELAXED);
	atomic_fetch_add_explicit(&work, 1, memory_order_release); /* before the queue has it: drain sees it */
	take_lock();
	queue[(qhead + qlen) % SEGMENTS] = h;
	qlen++;
	give_lock();
	atomic_fetch_add_explicit(&ftrt_recorded_bytes, (uint64_t)n * 8, memory_order_relaxed);
	publish(b, 0);
	b->base += n;
	sys_sigs_release(&mask);
	sys(SYS_futex, (long)&work, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
	ftrt_sched_check(); /* the scheduler events' ring, if a quarter full */
}

/* Wait (until deadline) for every hand-off to be written: before the
 * trace's end writes the buffers and the metadata, and before an exec,
 * which ends the writer. Async-signal-safe. */
void ftrt_writer_drain(uint64_t deadline)
{
	while (atomic_load_explicit(&work, memory_order_acquire) && __atomic_load_n(&running, __ATOMIC_ACQUIRE) &&
	       (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) == running_pid && mono_ns() < deadline)
		ftrt_nap();
}

/* Wait (until deadline, CLOCK_MONOTONIC ns) for b's hand-offs to be
 * written: before its thread writes it itself, or closes its stream. */
void ftrt_writer_wait(struct tbuf *b, uint64_t deadline)
{
	while (__atomic_load_n(&b->pending, __ATOMIC_ACQUIRE) && (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) == running_pid &&
	       mono_ns() < deadline)
		ftrt_nap();
}

/* Buffers their threads wrote themselves, the writer being behind. */
uint64_t ftrt_writer_self_written(void)
{
	return atomic_load_explicit(&self_written, memory_order_relaxed);
}

/* In a forked child: no writer; the parent's hand-offs are the parent's. */
void ftrt_writer_forget(void)
{
	__atomic_store_n(&running, 0, __ATOMIC_RELAXED);
	atomic_store_explicit(&lock, 0, memory_order_relaxed);
}
