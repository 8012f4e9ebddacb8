/*
 * Streams: each thread's records (tracer.h's struct tbuf), one record
 * per event, are written to that thread's stream in the
 * trace directory when full, when the thread exits, when the process
 * ends through exit or quick_exit (handlers of both) or _exit (exit.c),
 * and, the calling thread's, before an exec (exec.c).
 *
 * Hot path (ftrt_entry): no lock, no allocation, no libc call: a
 * thread-local buffer (initial-exec TLS), a recursion guard (a signal
 * handler that calls traced functions while the tracer runs has those
 * calls dropped and counted, never corrupted), a timestamp from rdtsc.
 * Flushing uses raw system calls, so errno is never touched and the
 * writer is async-signal-safe.
 *
 * Layout of the trace directory (made by dir.c; read by the Go package
 * trace):
 *   meta                     key value lines: written when the trace opens
 *                            ("ended 0"), again when a module comes or
 *                            goes, and at the end ("ended 1"); a run
 *                            killed by a signal leaves the "ended 0" one
 *   <pid>-<tid>.trace        one stream per thread: a 16-byte header
 *                            ("ftrtrec3", pid, tid: u32 LE) then records
 *
 * Every file is created with O_EXCL|O_NOFOLLOW in the directory's own
 * descriptor (dir.c). Nothing is fsynced: a trace must survive the
 * program's death, by any signal, which needs only that each write is
 * done (the page cache outlives the process) and that meta is replaced by
 * a rename; an fsync would add only survival of a power loss, for
 * milliseconds of every traced process's life under disk load. Nothing
 * is written past RLIMIT_FSIZE, whose SIGXFSZ would kill the program:
 * what does not fit is counted (lost_bytes), as is what a full disk
 * refuses; a stream that lost a write takes no more (it ends with whole
 * records), and a metadata file not written whole never replaces meta.
 *
 * This file writes a buffer to its thread's stream: the stream made at
 * the first flush, each record at its own offset, within RLIMIT_FSIZE.
 * Calls dir.c (to make a file) and raw system calls only.
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

#include "arch/fds.h"
#include "tracer.h"

/* Decimal digits of v at p; returns the end. */
char *ftrt_utoa(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/*
 * How many bytes a file may grow to past offset off under RLIMIT_FSIZE,
 * read now, as the program may change it (UINT64_MAX: no limit). A write
 * that starts at the limit raises SIGXFSZ, which would kill the program;
 * one that crosses it is cut short there.
 */
uint64_t ftrt_fsize_room(uint64_t off)
{
	struct {
		uint64_t cur, max;
	} lim;
	if (sys(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, (long)&lim, 0, 0) != 0 || lim.cur == (uint64_t)RLIM_INFINITY)
		return UINT64_MAX;
	return lim.cur > off ? lim.cur - off : 0;
}


/* Write the whole records of words[0, n) at offset off of fd that fit
 * under RLIMIT_FSIZE (read now): the bytes written, n * 8 unless the
 * limit or a failed write cut them short. Stream mode's flush, the
 * flight recorder's and the writer thread's. */
size_t ftrt_put_records(int fd, const uint64_t *words, uint32_t n, uint64_t off)
{
	uint64_t room = ftrt_fsize_room(off), len = (uint64_t)n * 8;
	size_t want = len <= room ? (size_t)len : (size_t)ftrt_fit(words, n, room) * 8;
	return ftrt_put(fd, words, want, off);
}

/* Of words[0, n), which start with a record, the words of the whole
 * records that fit in room bytes. */
uint32_t ftrt_fit(const uint64_t *words, uint32_t n, uint64_t room)
{
	uint32_t k = 0;
	while (k < n && (uint64_t)(k + rec_words(words[k])) * 8 <= room)
		k += rec_words(words[k]);
	return k < n ? k : n;
}

/* The time of the first record of words[0, n) that has one, on a
 * stream's clock that starts there at 0 (a TIME sets it); 0 when none
 * has. */
static uint64_t first_time(const uint64_t *words, uint32_t n)
{
	uint64_t clock = 0;
	for (uint32_t i = 0; i < n; i += rec_words(words[i])) {
		uint64_t w0 = words[i];
		switch (w0 >> REC_KIND_SHIFT) {
		case REC_CALL:
		case REC_ENTRY:
			return clock + (w0 >> REC_SITE_BITS & REC_DELTA_MAX);
		case REC_EXIT:
			return clock + (w0 & EXIT_MAX);
		}
		switch (EXT_SUB(w0)) {
		case EXT_TIME:
			if (i + 1 >= n)
				return 0;
			clock = words[i + 1];
			break;
		case EXT_UNWOUND:
		case EXT_CONTEXT:
		case EXT_LONGENTRY:
		case EXT_LONGCALL:
			return clock + (w0 & EXT_MAX);
		}
	}
	return 0;
}

/* The stream's name: <pid>-<tid>.trace, or <pid>-<tid>-<i>.trace when an
 * earlier thread of the process had the same id (ids are reused) and
 * its stream holds the first. */
static void stream_name(char *name, const struct tbuf *b, int i)
{
	char *p = ftrt_utoa(name, (uint64_t)b->pid);
	*p++ = '-';
	p = ftrt_utoa(p, (uint64_t)b->tid);
	if (i) {
		*p++ = '-';
		p = ftrt_utoa(p, (uint64_t)i);
	}
	memcpy(p, STREAM_SUFFIX, sizeof STREAM_SUFFIX);
}

/*
 * Make the thread's stream and write its header, at a flush of words[]
 * (not empty). b->fd says where a flush this one interrupted had got to
 * (see ftrt_flush): FD_MAKING - i, it was making stream i, which may exist
 * already, made by it. 0, or -1 when the stream could not be made (no
 * room for its header and first record under RLIMIT_FSIZE, a full disk,
 * no descriptor left): a later flush tries again. header 0: the header
 * is left to the caller (the writer thread writes it: writer.c).
 */
int ftrt_stream_make_as(struct tbuf *b, int header)
{
	int i = 0, again = 0;
	if (b->fd <= FD_MAKING) {
		i = FD_MAKING - b->fd;
		again = 1;
	}
	if (ftrt_fsize_room(0) < 16 + (uint64_t)rec_words(b->words[0]) * 8)
		goto none;
	int dir = ftrt_trace_dir();
	for (; i < 1000 && dir >= 0; i++) {
		char name[80];
		stream_name(name, b, i);
		__atomic_store_n(&b->fd, FD_MAKING - i, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* before the file exists */
		long fd = ftrt_file_create(dir, name);
		if (fd == -EEXIST && again) { /* made by the flush this one interrupted? */
			struct stat st;
			fd = sys(SYS_openat, dir, (long)name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
			/* Not if it holds records: it did not get that far, so the
			 * stream is an earlier thread's of the same id. */
			if (!sys_failed(fd) && (sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0 || !S_ISREG(st.st_mode) || st.st_size > 16)) {
				sys(SYS_close, fd, 0, 0, 0, 0, 0);
				fd = -EEXIST;
			}
		}
		again = 0;
		if (fd == -EEXIST)
			continue;
		struct ftrt_fd k;
		if (ftrt_fd_keep(&k, fd) != 0)
			break;
		unsigned char hdr[STREAM_HEADER];
		ftrt_stream_header(hdr, b);
		if (header && ftrt_put(k.fd, hdr, sizeof hdr, 0) != sizeof hdr) {
			/* Not a stream: a reader must not find it. */
			sys(SYS_unlinkat, dir, (long)name, 0, 0, 0, 0);
			ftrt_fd_close(&k);
			break;
		}
		b->skip = b->base;
		b->first = first_time(b->words, b->n);
		b->fd_i = i;
		b->fd_dev = k.dev;
		b->fd_ino = k.ino;
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* skip and what it is before the stream is kept */
		__atomic_store_n(&b->fd, k.fd, __ATOMIC_RELEASE);
		return 0;
	}
none:
	__atomic_store_n(&b->fd, FD_NONE, __ATOMIC_RELAXED);
	return -1;
}

int ftrt_stream_make(struct tbuf *b)
{
	return ftrt_stream_make_as(b, 1);
}

int ftrt_stream_fd(struct tbuf *b)
{
	int fd = __atomic_load_n(&b->fd, __ATOMIC_ACQUIRE);
	if (fd < 0 || ftrt_fd_same(fd, b->fd_dev, b->fd_ino))
		return fd < 0 ? -1 : fd;
	/* The program closed it (and perhaps took the number): the stream
	 * again by its name, if that is still the very file. Another thread
	 * writing the buffer (the writer, the end) may do the same: the
	 * first to put its descriptor in b->fd wins, the other closes its. */
	char name[80];
	stream_name(name, b, b->fd_i);
	int dir = ftrt_trace_dir();
	long n = dir < 0 ? -EBADF : ftrt_fd_lift(sys(SYS_openat, dir, (long)name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0));
	if (!sys_failed(n) && !ftrt_fd_same((int)n, b->fd_dev, b->fd_ino)) {
		sys(SYS_close, n, 0, 0, 0, 0, 0);
		n = -ENOENT;
	}
	if (__atomic_compare_exchange_n(&b->fd, &fd, sys_failed(n) ? FD_LOST : (int)n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return sys_failed(n) ? -1 : (int)n;
	if (!sys_failed(n))
		sys(SYS_close, n, 0, 0, 0, 0, 0);
	return fd >= 0 && ftrt_fd_same(fd, b->fd_dev, b->fd_ino) ? fd : -1;
}

void ftrt_stream_close(struct tbuf *b, int fd)
{
	if (ftrt_fd_same(fd, b->fd_dev, b->fd_ino))
		sys(SYS_close, fd, 0, 0, 0, 0, 0);
}

/* The header of b's stream: its magic, its pid and tid. */
void ftrt_stream_header(unsigned char hdr[STREAM_HEADER], const struct tbuf *b)
{
	static const unsigned char magic[8] = STREAM_MAGIC;
	uint32_t ids[2] = { (uint32_t)b->pid, (uint32_t)b->tid };
	memcpy(hdr, magic, 8);
	memcpy(hdr + 8, ids, 8);
}

/*
 * Write the buffer's records to the thread's stream (made, and its
 * header written, at the first flush) and empty it.
 *
 * A flush of this buffer may have been interrupted anywhere by a signal
 * handler whose trace's end flushes it again: each record goes at an
 * offset of its own (16 + (base - skip) * 8 for words[0]), so the second
 * writes what the first did, or would have, at the same place, and a
 * stream half made says how far (b->fd, make_stream). n is emptied
 * before base moves on, so a flush that wrote is never taken for one
 * that had not begun. Nobody else may be writing the buffer meanwhile
 * (claim).
 *
 * Within RLIMIT_FSIZE (read at every flush: the program may change it),
 * the whole records that fit are written and the stream ends there;
 * after a failed write too. What is not written is counted (lost_bytes).
 */
void ftrt_flush(struct tbuf *b)
{
	if (ftrt_ring_slots) {
		ftrt_ring_write(b);
		return;
	}
	uint32_t n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
	if (n == 0)
		return;
	size_t len = (size_t)n * 8, done = 0;
	unsigned long mask;
	sys_sigs_hold(&mask); /* the write is done whole, whatever handlers do */
	if (b->fd != FD_LOST && b->fd < 0)
		ftrt_stream_make(b);
	if (b->fd >= 0) {
		int fd = ftrt_stream_fd(b);
		done = fd < 0 ? 0 : ftrt_put_records(fd, b->words, n, 16 + (b->base - b->skip) * 8);
		if (done < len && fd >= 0) { /* the stream ends here */
			ftrt_stream_close(b, fd);
			b->fd = FD_LOST;
		}
	}
	if (done < len)
		atomic_fetch_add_explicit(&ftrt_lost_bytes, len - done, memory_order_relaxed);
	atomic_fetch_add_explicit(&ftrt_recorded_bytes, len, memory_order_relaxed);
	if (b->fd < 0 && b->fd != FD_LOST) {
		b->last = 0; /* no stream had them: the one a later flush makes starts with a TIME */
		b->uncounted = 1; /* and its summary's counts would hold them */
	}
	publish(b, 0);
	b->base += n;
	sys_sigs_release(&mask);
	ftrt_sched_check(); /* the scheduler events' ring, if a quarter full */
}

/* The thread's name, NUL-padded: its own (PR_GET_NAME) when self, else
 * /proc/self/task/TID/comm's first line; "" when it cannot be read. */
static void thread_name(const struct tbuf *b, int self, char name[SUM_NAME_BYTES])
{
	memset(name, 0, SUM_NAME_BYTES);
	if (self) {
		char buf[16] = { 0 }; /* the kernel's TASK_COMM_LEN: 15 bytes and a NUL */
		if (sys(SYS_prctl, 16 /* PR_GET_NAME */, (long)buf, 0, 0, 0, 0) == 0)
			memcpy(name, buf, sizeof buf);
		return;
	}
	char path[48], buf[SUM_NAME_BYTES + 1];
	char *p = path;
	memcpy(p, "/proc/self/task/", 16);
	p = ftrt_utoa(p + 16, (uint64_t)b->tid);
	memcpy(p, "/comm", 6);
	long fd = sys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (sys_failed(fd))
		return;
	long got = sys(SYS_read, fd, (long)buf, SUM_NAME_BYTES, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	for (long i = 0; i < got && i < SUM_NAME_BYTES && buf[i] != '\n'; i++)
		name[i] = buf[i];
}

/*
 * End b's stream with its summary (abi.h's EXT_SUMMARY), appended to the
 * buffer for the flush that follows (the thread's exit, the trace's end,
 * an exec), with nobody else writing the buffer: what the counts kept as
 * the records were written say the stream holds, so that a reader need
 * not read it through. Nothing when the stream has no record, or
 * nothing was recorded since its last summary, or it lost a write (it
 * ends there). Its place (SUM_POS) is where the flush, or the flight
 * recorder's write of the ring, puts it: after everything of the stream.
 * Async-signal-safe.
 */
void ftrt_stream_summary(struct tbuf *b, int self)
{
	if (b->fd == FD_LOST || b->base + b->n == b->summed)
		return;
	uint64_t last = b->last;
	if (b->n > TBUF_WORDS - SUM_WORDS) {
		if (ftrt_ring_slots)
			ftrt_ring_push(b);
		else
			ftrt_flush(b);
		if (b->fd == FD_LOST)
			return;
	}
	uint32_t n = b->n;
	uint64_t pos = ftrt_ring_slots ? b->written + ftrt_ring_words(b) + n : (b->fd >= 0 ? b->base - b->skip : 0) + n;
	if (pos == 0)
		return; /* no record: no stream */
	uint64_t *w = b->words + n;
	w[0] = W_EXT(EXT_SUMMARY, SUM_WORDS - 1);
	w[SUM_CALLS] = b->calls;
	w[SUM_ENTRIES] = b->entries;
	w[SUM_EXITS] = b->exits;
	w[SUM_UNWOUND] = b->unwound;
	/* A stream the flush that follows makes starts at words[0]. */
	uint64_t first = b->fd >= 0 ? b->first : first_time(b->words, n);
	w[SUM_FIRST] = first;
	w[SUM_LAST] = last;
	w[SUM_FLAGS] = !b->uncounted && !ftrt_ring_slots && first ? SUM_COUNTED : 0;
	thread_name(b, self, (char *)&w[SUM_NAME]);
	w[SUM_POS] = pos;
	w[SUM_END] = w[0];
	publish(b, n + SUM_WORDS);
	b->summed = b->base + n + SUM_WORDS;
}
