/*
 * Taking the thread's buffer for a tracer's work (busy), inline in each
 * tracer: whether its holder was left by a longjmp (shadow.c), whether a
 * graphed call was left without returning, and a thread's first event,
 * which makes its buffer (record/thread.c). Calls shadow.c,
 * record/thread.c and record/encode.h.
 */
#ifndef FTRT_TAKE_H
#define FTRT_TAKE_H

#include "record/encode.h"

/*
 * Whether a graphed call whose frame is at entry_sp is on another stack
 * than the code running now: the thread runs a signal handler on its
 * alternate stack (sigaltstack, SA_ONSTACK), and the call is not on it.
 * Its frame being below ours then says nothing of whether it returned:
 * an alternate stack may lie anywhere, above the thread's own. One
 * system call, made only when a frame below ours would otherwise be
 * taken for one left (after a longjmp, or in such a handler).
 */
static inline int elsewhere(uintptr_t entry_sp)
{
	stack_t ss;
	if (sys(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0, 0) != 0 || !(ss.ss_flags & SS_ONSTACK))
		return 0;
	uintptr_t lo = (uintptr_t)ss.ss_sp, hi = lo + ss.ss_size;
	return entry_sp < lo || entry_sp > hi;
}

/*
 * Take b's busy for tracer code serving the call whose stack pointer is
 * ref (the traced function's at its entry, or at its return; the tracer
 * code's own frame where it serves no call): 1 when taken; 0 when it is
 * held (this is a signal handler that interrupted the tracer), and then
 * nothing of b may be touched. Taken from a holder a longjmp left: the
 * next traced call made at the level the longjmp went back to, or above
 * it, takes it.
 */
static inline int take(struct tbuf *b, uintptr_t ref)
{
	uintptr_t held = b->busy;
	if (__builtin_expect(held != 0, 0) && !ftrt_abandoned(b, held, ref))
		return 0;
	b->busy = ref;
	return 1;
}

/*
 * Whether the graphed call sh was left without returning (longjmp, or an
 * exception the unwinder hooks did not see), seen from a new call whose
 * stack pointer is sp and return address ret, on the same shadow stack:
 * its frame is below sp; or, at the same sp, ret is not its hook (the
 * caller of a call that was left made a new one: with the hook still its
 * return address the caller tail-called the new function, which stays
 * and returns after it). Where a call's return address has a slot on the
 * stack (arch.h: FTRT_ARCH_SLOTS), also when its slot no longer holds
 * its hook (the frame is gone and the stack was written over: a longjmp,
 * then a call that pushed stack arguments or from a frame grown by
 * alloca); where it has none, such a call is popped when a call or
 * return above it is seen. While an exception is being unwound the
 * slots hold the real return addresses (suspended): only the stack
 * pointer tells then. The slot holds the hook from the moment the call
 * is pushed until it is popped (see arch/x86_64/graph.S), so a signal
 * handler's call, whatever it interrupted, never takes a live call for a
 * left one (its frame is below every live call's); nor does a handler's
 * call on an alternate stack above the thread's own (elsewhere).
 */
static inline int left(const struct tbuf *b, const struct shadow *sh, uintptr_t sp, uintptr_t ret)
{
	if (__builtin_expect(sh->sp < sp, 0) && !elsewhere(sh->sp))
		return 1;
#if FTRT_ARCH_SLOTS
	(void)ret; /* at sh->sp == sp, ret is what the slot holds */
	return !b->suspended && ((const uintptr_t *)sh->sp)[-1] != sh->hook;
#else
	(void)b;
	return sh->sp == sp && ret != sh->hook;
#endif
}

/* Pop the calls of s left without returning (pop_left), seen from a new
 * call at sp returning to ret; returns the new depth. */
static inline uint32_t unwind_to(struct tbuf *b, struct shadow_stack *s, uint64_t ts, uintptr_t sp, uintptr_t ret, int rec)
{
	while (s->depth > 0 && left(b, &s->e[s->depth - 1], sp, ret))
		pop_left(b, s, ts, rec);
	return s->depth;
}

/* The thread's buffer, made at its first event (the tracer's, or a
 * graph user's: fgraph.c); NULL when it cannot be (it is being made or
 * torn down, or no memory). */
static inline struct tbuf *own_buffer(void)
{
	struct tbuf *b = tb;
	if (__builtin_expect(b == NULL, 0)) {
		if (ftrt_thread_busy)
			return NULL;
		ftrt_thread_busy = 1;
		b = ftrt_tbuf_new();
		ftrt_thread_busy = 0;
	}
	return b;
}

/* The thread's buffer, made at its first event, taken (busy) for the
 * call whose stack pointer is ref; NULL when the tracer cannot record
 * here (it is already running on this thread: a signal handler; or the
 * buffer cannot be made). */
static inline struct tbuf *enter(uintptr_t ref)
{
	/* No trace open: a pre-patched site (ftpatch enable) called before
	 * ftrt_init started tracing, or after it failed to. Return before
	 * touching TLS, which may not be set up yet (ifunc resolvers). */
	if (__builtin_expect(ftrt_trace_fd < 0, 0))
		return NULL;
	struct tbuf *b = own_buffer();
	if (__builtin_expect(!b, 0))
		goto drop;
	if (__builtin_expect(!take(b, ref), 0))
		goto drop;
	if (__builtin_expect(ended(), 0)) {
		unbusy(b, 0); /* after the trace's end: not an event it lost */
		return NULL;
	}
	return b;
drop:
	/* A graph user's callback's own traced call is left out, as the
	 * callback is (fgraph.c): not an event lost. */
	if (!ftrt_in_users)
		atomic_fetch_add_explicit(&ftrt_dropped, 1, memory_order_relaxed);
	return NULL;
}

#endif
