/*
 * Writing a record into the thread's buffer, taken (tracer.h's busy),
 * inline in each tracer: room (a flush when the buffer is full:
 * stream.c), the TIME a record needs first, the records themselves; and
 * the pop of a graphed call left without returning. Calls stream.c.
 */
#ifndef FTRT_ENCODE_H
#define FTRT_ENCODE_H

#include "tracer.h"

/* Room for words more: flush when the buffer has not (the flight
 * recorder: into the thread's ring; writer mode: to the writer thread). */
static inline uint32_t room_for(struct tbuf *b, uint32_t words)
{
	uint32_t n = b->n;
	if (__builtin_expect(n > TBUF_WORDS - words, 0)) {
		if (ftrt_ring_slots)
			ftrt_ring_push(b);
		else if (ftrt_writer)
			ftrt_writer_handoff(b);
		else
			ftrt_flush(b);
		n = 0;
	}
	return n;
}

/* Room for a record of up to REC_MAX_WORDS words. */
static inline uint32_t room(struct tbuf *b)
{
	return room_for(b, REC_MAX_WORDS);
}

/*
 * The C path's record writing, with b taken (busy). stamp makes room for
 * a record of the event at ts, writes a TIME first when the record's
 * delta would not fit (above max: the record's widest field), the clock
 * went back, or the stream has no record yet (see "Records" above), and
 * moves last to ts; it returns where the record goes and its delta. The
 * record_* functions write the record and publish it with the TIME, if
 * any, in one step: a flush (the end's, from a signal handler) sees both
 * or neither. room() comes first, as its flush may reset last.
 */
static inline uint32_t stamp(struct tbuf *b, uint64_t ts, uint64_t max, uint64_t *delta)
{
	uint32_t n = room(b);
	uint64_t last = b->last;
	if (__builtin_expect(last == 0 || ts < last || ts - last > max, 0)) {
		b->words[n] = W_EXT(EXT_TIME, 0);
		b->words[n + 1] = ts;
		n += 2;
		last = ts;
	}
	*delta = ts - last;
	b->last = ts;
	return n;
}

/* function: a call of site, from parent (its caller's return address). */
static inline void record_call(struct tbuf *b, uint64_t ts, uint64_t site, uint64_t parent)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXT_MAX, &d);
	if (__builtin_expect(d <= REC_DELTA_MAX && site >> REC_SITE_BITS == 0, 1)) {
		b->words[n] = W_SHORT(REC_CALL, d, site);
		b->words[n + 1] = parent;
		publish(b, n + 2);
	} else {
		b->words[n] = W_EXT(EXT_LONGCALL, d);
		b->words[n + 1] = site;
		b->words[n + 2] = parent;
		publish(b, n + 3);
	}
	b->calls++;
}

/* function_graph: an entry of site; returns where its record is in
 * words[] (after any TIME), for FTRACE_THRESH. */
static inline uint32_t record_entry(struct tbuf *b, uint64_t ts, uint64_t site)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXT_MAX, &d);
	if (__builtin_expect(d <= REC_DELTA_MAX && site >> REC_SITE_BITS == 0, 1)) {
		b->words[n] = W_SHORT(REC_ENTRY, d, site);
		publish(b, n + 1);
	} else {
		b->words[n] = W_EXT(EXT_LONGENTRY, d);
		b->words[n + 1] = site;
		publish(b, n + 2);
	}
	b->entries++;
	return n;
}

/* The delta of the entry record w0 (REC_ENTRY or EXT_LONGENTRY). */
static inline uint64_t entry_delta(uint64_t w0)
{
	if (w0 >> REC_KIND_SHIFT == REC_ENTRY)
		return w0 >> REC_SITE_BITS & REC_DELTA_MAX;
	return w0 & EXT_MAX;
}

/* Whether w0 begins an entry record. */
static inline int is_entry(uint64_t w0)
{
	return w0 >> REC_KIND_SHIFT == REC_ENTRY || (w0 >> REC_KIND_SHIFT == REC_EXT && EXT_SUB(w0) == EXT_LONGENTRY);
}

/* function_graph: the innermost open entry returned. */
static inline void record_exit(struct tbuf *b, uint64_t ts)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXIT_MAX, &d);
	b->words[n] = W_EXIT(d);
	publish(b, n + 1);
	b->exits++;
}

/* function_graph: the thread runs in context id from here on. */
static inline void record_context(struct tbuf *b, uint64_t ts, uint64_t id)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXT_MAX, &d);
	b->words[n] = W_EXT(EXT_CONTEXT, d);
	b->words[n + 1] = id;
	publish(b, n + 2);
	b->uncounted = 1; /* the contexts' calls nest apart: the summary's counts cannot say so */
}

/* The entry sh, popped from s, gives back what its mark added to s's
 * counts (subtree.c). */
static inline void unmark(struct shadow_stack *s, const struct shadow *sh)
{
	if (__builtin_expect((sh->mark & MARK_KIND) == MARK_CHOSEN, 0))
		s->chosen--;
	else if (__builtin_expect((sh->mark & MARK_KIND) == MARK_NOTRACE, 0))
		s->notrace--;
}

/* The graph users' data of the popped call sh goes (fgraph.c): the
 * thread's data stack back to where the call's began. */
static inline void undata(struct tbuf *b, const struct shadow *sh)
{
	if (__builtin_expect(sh->mark >> MARK_USERS_SHIFT != 0, 0) && b->fgdata)
		b->fgtop = (uint32_t)(sh->mark >> MARK_DATA_SHIFT);
}

/* One graphed call left without returning (a longjmp, an exception). */
static inline void record_unwound(struct tbuf *b, uint64_t ts)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXT_MAX, &d);
	b->words[n] = W_EXT(EXT_UNWOUND, d);
	publish(b, n + 1);
	b->unwound++;
	atomic_fetch_add_explicit(&ftrt_unwound, 1, memory_order_relaxed);
}

/* Pop the innermost call of s, left without returning: recorded as
 * unwound when rec (not once the trace is ending), unless it is a
 * notrace call, whose entry was never recorded. */
static inline void pop_left(struct tbuf *b, struct shadow_stack *s, uint64_t ts, int rec)
{
	const struct shadow *sh = &s->e[--s->depth];
	if (rec && MARK_RECORDED(sh->mark))
		record_unwound(b, ts);
	unmark(s, sh);
	undata(b, sh); /* a call left runs no graph user's return */
}

#endif
