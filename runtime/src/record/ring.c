/*
 * The flight recorder (FTRACE_BUFFER=ring:SIZE): each thread keeps its
 * last records in memory and writes nothing until asked, for processes
 * that run for days and crash once.
 *
 * A thread's buffer (words[], 1.5 MiB) fills as in stream mode; when it
 * is full, its records go into the next segment of the thread's ring
 * (ftrt_ring_push: a copy, no system call but the first, which maps the
 * ring), the oldest segment's overwritten once every one is used. Each
 * segment starts with a TIME (the buffer's clock is reset whenever it is
 * emptied), so the oldest kept segment decodes on its own. The ring has
 * SIZE / 1.5 MiB segments, at least one: a thread keeps at least SIZE
 * (rounded up to a segment) of its latest records, and those since.
 *
 * The ring is written out (ftrt_ring_write) where stream mode flushes
 * the buffer at the end: at the thread's exit, at the trace's end (exit,
 * quick_exit, _exit, and a fatal signal: trap.c), before an exec. The
 * stream then holds an EXT_WRAPPED record, when the ring overwrote
 * anything, saying how many words, then the kept segments oldest first,
 * then the buffer. A graphed call whose entry was overwritten has its
 * exit there alone, which the reader leaves out.
 *
 * Calls stream.c (the stream's file), and raw system calls.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "tracer.h"

/* The segments of a thread's ring: 0 in stream mode. */
uint32_t ftrt_ring_slots;
uint64_t ftrt_ring_asked;          /* the bytes FTRACE_BUFFER=ring:SIZE asked for */
_Atomic uint64_t ftrt_overwritten; /* bytes of records the rings overwrote */

#define SEGMENT ((uint64_t)TBUF_WORDS * 8)
#define PAGE 4096
/* The most segments a ring has: a larger SIZE gets this many, and is
 * told so (ftrt_ring_parse's caller). */
#define SLOTS_MAX 65536
_Static_assert(SLOTS_MAX * SEGMENT == 96ull << 30, "RING_MAX_TEXT (tracer.h) names the largest ring");

/* A segment's state: seq is the number of the push that filled it (0
 * while it is written, or empty), len its words. A snapshot (another
 * thread's) reads seq before and after copying the segment, and keeps
 * the copy only if it did not change. */
struct seg {
	uint64_t seq;
	uint32_t len;
};

struct ring {
	uint32_t slots;       /* segments */
	uint32_t next;        /* the segment to fill next */
	uint32_t used;        /* segments holding records */
	uint64_t overwritten; /* words overwritten since the ring was last written out */
	uint64_t pushes;      /* segments filled, ever */
	struct seg seg[];     /* each segment's; the segments follow, page-aligned */
};

static size_t head_bytes(uint32_t slots)
{
	return (sizeof(struct ring) + slots * sizeof(struct seg) + PAGE - 1) & ~(size_t)(PAGE - 1);
}

static uint64_t *segment(const struct ring *r, uint32_t i)
{
	return (uint64_t *)((char *)r + head_bytes(r->slots) + (size_t)i * SEGMENT);
}

static size_t ring_bytes(uint32_t slots)
{
	return head_bytes(slots) + (size_t)slots * SEGMENT;
}

/* FTRACE_BUFFER=ring:SIZE (SIZE in bytes, or with k, m or g: KiB, MiB,
 * GiB): the number of segments, at most SLOTS_MAX, or 0 when malformed;
 * *asked the bytes SIZE says. */
uint32_t ftrt_ring_parse(const char *size, uint64_t *asked)
{
	uint64_t v = 0;
	const char *p = size;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9' && v < (1ull << 40))
		v = v * 10 + (uint64_t)(*p++ - '0');
	switch (*p) {
	case 'k': case 'K': v <<= 10, p++; break;
	case 'm': case 'M': v <<= 20, p++; break;
	case 'g': case 'G': v <<= 30, p++; break;
	}
	if (*p || v == 0 || v > (1ull << 40))
		return 0;
	*asked = v;
	uint64_t n = (v + SEGMENT - 1) / SEGMENT;
	return n > SLOTS_MAX ? SLOTS_MAX : (uint32_t)n;
}

uint64_t ftrt_ring_bytes(void)
{
	return (uint64_t)ftrt_ring_slots * SEGMENT;
}

/*
 * The buffer is full (encode.h's room): its records into the next
 * segment, and the buffer emptied, its clock reset so the next segment
 * starts with a TIME. With the thread's buffer taken (busy), signals
 * held back meanwhile: an end in a handler finds the records in the
 * ring or in the buffer, never both or neither. With no memory for the
 * ring, the records are counted overwritten.
 */
void ftrt_ring_push(struct tbuf *b)
{
	uint32_t n = b->n;
	unsigned long mask;
	sys_sigs_hold(&mask);
	struct ring *r = b->ring;
	if (!r) {
		long m = sys(SYS_mmap, 0, (long)ring_bytes(ftrt_ring_slots), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (!sys_failed(m)) {
			/* Huge pages where the system gives them: a ring is written
			 * through once before it wraps, and a fault a 4 KiB page
			 * costs more than the records it holds. */
			sys(SYS_madvise, m, (long)ring_bytes(ftrt_ring_slots), MADV_HUGEPAGE, 0, 0, 0);
			r = (struct ring *)m;
			r->slots = ftrt_ring_slots;
			b->ring = r;
		}
	}
	if (r) {
		uint32_t i = r->next;
		struct seg *sg = &r->seg[i];
		if (r->used == r->slots) {
			r->overwritten += sg->len;
			atomic_fetch_add_explicit(&ftrt_overwritten, (uint64_t)sg->len * 8, memory_order_relaxed);
		} else {
			r->used++;
		}
		__atomic_store_n(&sg->seq, 0, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE); /* seq 0 before the segment changes */
		memcpy(segment(r, i), b->words, (size_t)n * 8);
		sg->len = n;
		__atomic_store_n(&sg->seq, ++r->pushes, __ATOMIC_RELEASE);
		r->next = i + 1 == r->slots ? 0 : i + 1;
	} else {
		atomic_fetch_add_explicit(&ftrt_overwritten, (uint64_t)n * 8, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&ftrt_recorded_bytes, (uint64_t)n * 8, memory_order_relaxed);
	b->last = 0;
	publish(b, 0);
	b->base += n;
	sys_sigs_release(&mask);
	ftrt_sched_check(); /* the scheduler events' ring, if a quarter full */
}

/* Write len bytes at *off of the stream: whole records within
 * RLIMIT_FSIZE; 0 when not all of them went (the stream ends there). */
static int put(struct tbuf *b, const uint64_t *words, uint32_t n, uint64_t *off)
{
	if (b->fd < 0 || n == 0)
		return b->fd >= 0;
	int fd = ftrt_stream_fd(b);
	size_t done = fd < 0 ? 0 : ftrt_put_records(fd, words, n, *off);
	*off += done;
	if (done < (size_t)n * 8) {
		if (fd >= 0)
			ftrt_stream_close(b, fd);
		b->fd = FD_LOST;
		return 0;
	}
	return 1;
}

/*
 * Write the ring and the buffer to the thread's stream (made at the
 * first), in the order the records were made, and empty both: where
 * stream mode flushes at an end (ftrt_flush calls this in ring mode).
 * Each piece goes at its own offset past what was written before
 * (b->written), so a write an end in a signal handler interrupted and
 * did again puts the same bytes in the same places.
 */
void ftrt_ring_write(struct tbuf *b)
{
	uint32_t n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
	struct ring *r = b->ring;
	uint32_t used = r ? r->used : 0;
	if (n == 0 && used == 0 && !(r && r->overwritten))
		return;
	unsigned long mask;
	sys_sigs_hold(&mask);
	if (b->fd != FD_LOST && b->fd < 0)
		ftrt_stream_make(b);
	uint64_t off = 16 + b->written * 8, total = 0, lost = 0;
	int ok = b->fd >= 0;
	if (r && r->overwritten) {
		uint64_t w = W_EXT(EXT_WRAPPED, r->overwritten < EXT_MAX ? r->overwritten : EXT_MAX);
		ok = ok && put(b, &w, 1, &off);
		total++;
	}
	for (uint32_t k = 0; k < used; k++) {
		uint32_t i = (used == r->slots ? r->next : 0) + k;
		i = i >= r->slots ? i - r->slots : i;
		if (!(ok = ok && put(b, segment(r, i), r->seg[i].len, &off)))
			lost += r->seg[i].len;
		total += r->seg[i].len;
	}
	if (!(ok = ok && put(b, b->words, n, &off)))
		lost += n;
	total += n;
	if (lost)
		atomic_fetch_add_explicit(&ftrt_lost_bytes, lost * 8, memory_order_relaxed);
	atomic_fetch_add_explicit(&ftrt_recorded_bytes, (uint64_t)n * 8, memory_order_relaxed);
	b->written += total;
	if (r) {
		for (uint32_t i = 0; i < r->slots; i++)
			__atomic_store_n(&r->seg[i].seq, 0, __ATOMIC_RELAXED);
		r->used = r->next = 0, r->overwritten = 0;
	}
	b->last = 0;
	publish(b, 0);
	b->base += n;
	sys_sigs_release(&mask);
}

/* The words of records the next ftrt_ring_write puts before the
 * buffer's: the EXT_WRAPPED record, if any, and the kept segments. */
uint64_t ftrt_ring_words(const struct tbuf *b)
{
	const struct ring *r = b->ring;
	uint64_t k = r && r->overwritten ? 1 : 0;
	for (uint32_t i = 0; r && i < r->used; i++) {
		uint32_t at = (r->used == r->slots ? r->next : 0) + i;
		k += r->seg[at >= r->slots ? at - r->slots : at].len;
	}
	return k;
}

/* The thread's ring goes (its exit; a forked child's copy of another
 * thread's). */
void ftrt_ring_free(struct tbuf *b)
{
	if (b->ring)
		sys(SYS_munmap, (long)b->ring, (long)ring_bytes(b->ring->slots), 0, 0, 0, 0);
	b->ring = NULL;
}

/* A forked child's ring: the parent's records are the parent's. */
void ftrt_ring_forget(struct tbuf *b)
{
	struct ring *r = b->ring;
	if (r) {
		for (uint32_t i = 0; i < r->slots; i++)
			r->seg[i].seq = 0;
		r->used = r->next = 0, r->overwritten = 0;
	}
	b->written = 0;
}

/*
 * Copy, from another thread, what b's ring and buffer hold now into out
 * (ftrt_ring_snapshot_bytes of room): an EXT_WRAPPED record when
 * anything before is missing, the segments oldest first, the buffer.
 * The owner goes on recording meanwhile: a segment it refilled while it
 * was copied is left out (the oldest: the wrap moves), and so is the
 * buffer when it was pushed meanwhile (the newest segment then has its
 * records). The words copied, 0 when there is nothing. Under the list's
 * lock (the buffer stays).
 */
size_t ftrt_ring_snapshot(const struct tbuf *b, uint64_t *out)
{
	uint64_t base = __atomic_load_n(&b->base, __ATOMIC_ACQUIRE);
	const struct ring *r = __atomic_load_n(&b->ring, __ATOMIC_ACQUIRE);
	size_t k = 1; /* out[0]: the wrap, filled last */
	uint64_t missing = r ? __atomic_load_n(&r->overwritten, __ATOMIC_RELAXED) : 0, prev = 0;
	/* The segments in push order: each pass takes the lowest seq above
	 * the last taken (a few segments: a scan each). */
	for (uint32_t taken = 0; r && taken < r->slots; taken++) {
		uint64_t best = 0;
		uint32_t at = 0;
		for (uint32_t i = 0; i < r->slots; i++) {
			uint64_t q = __atomic_load_n(&r->seg[i].seq, __ATOMIC_ACQUIRE);
			if (q > prev && (!best || q < best))
				best = q, at = i;
		}
		if (!best)
			break;
		uint32_t len = r->seg[at].len;
		memcpy(out + k, segment(r, at), (size_t)len * 8);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->seg[at].seq, __ATOMIC_RELAXED) == best)
			k += len;
		else
			missing += len; /* refilled under the copy */
		prev = best;
	}
	uint32_t n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
	memcpy(out + k, b->words, (size_t)n * 8);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&b->base, __ATOMIC_RELAXED) == base)
		k += n;
	if (k == 1)
		return 0;
	if (!missing) {
		memmove(out, out + 1, (k - 1) * 8);
		return k - 1;
	}
	out[0] = W_EXT(EXT_WRAPPED, missing < EXT_MAX ? missing : EXT_MAX);
	return k;
}

/* Room ftrt_ring_snapshot needs: every segment, the buffer, a word. */
size_t ftrt_ring_snapshot_bytes(void)
{
	return ((size_t)ftrt_ring_slots + 1) * SEGMENT + 8;
}
