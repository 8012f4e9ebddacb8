/*
 * function_graph's shadow stacks (graph.h): which one a frame is on (the
 * thread's own, or a context's: context.c), whether the tracer code that
 * holds a buffer was left by a longjmp, and calls popped for having been
 * left without returning (inline in tracer.h). Calls context.c,
 * stream.c (a record's flush) and raw system calls.
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

#include "graph.h"
#include "record/encode.h"
#include "record/tracer.h"

/*
 * The shadow stack of the code whose frame is at sp (graph.h): the
 * thread's own, or that of the context whose stack holds it, with its id
 * (0: the thread's own). The thread keeps the last answer and the extent
 * of stack pointers it holds for, until another context is made.
 */
struct shadow_stack *ftrt_find_stack(struct tbuf *b, uintptr_t sp, uint64_t *id)
{
	unsigned gen = atomic_load_explicit(&ftrt_ctx_gen, memory_order_acquire);
	if (__builtin_expect(gen == 0, 1)) {
		*id = 0;
		return &b->own;
	}
	if (gen == b->cur_gen && b->cur_lo < sp && sp <= b->cur_hi) {
		*id = b->cur_id;
		return b->cur;
	}
	uintptr_t lo, hi;
	struct ftrt_ctx *c = ftrt_context_at(sp, &lo, &hi);
	*id = c ? atomic_load_explicit(&c->id, memory_order_relaxed) : 0;
	return c ? &c->stack : &b->own;
}

/*
 * find_stack for an event recorded at ts (when rec): when the code runs
 * on another stack than the thread's last event did (swapcontext), or
 * in a context made again since, a switch record says so first
 * (EXT_CONTEXT, with id). The reader keeps a stack of open calls per
 * context, as the runtime does.
 */
struct shadow_stack *ftrt_stack_at(struct tbuf *b, uintptr_t sp, uint64_t ts, int rec)
{
	unsigned gen = atomic_load_explicit(&ftrt_ctx_gen, memory_order_acquire);
	if (__builtin_expect(gen == 0, 1))
		return &b->own;
	if (gen == b->cur_gen && b->cur_lo < sp && sp <= b->cur_hi)
		return b->cur;
	uintptr_t lo, hi;
	struct ftrt_ctx *c = ftrt_context_at(sp, &lo, &hi);
	struct shadow_stack *s = c ? &c->stack : &b->own;
	uint64_t id = c ? atomic_load_explicit(&c->id, memory_order_relaxed) : 0;
	b->cur_gen = gen;
	b->cur_lo = lo;
	b->cur_hi = hi;
	if (s != b->cur || id != b->cur_id) {
		b->cur = s;
		b->cur_id = id;
		if (rec)
			record_context(b, ts, id);
	}
	return s;
}

/*
 * Whether the tracer code that took b's busy with the reference held (a
 * stack pointer: that of the traced call it served, see take) is gone,
 * as seen by tracer code whose reference is sp: a longjmp left it (a
 * signal handler that interrupted the tracer, and siglongjmp'd out of
 * it), and nothing will let busy go. On one stack, a reference at or
 * above the holder's says so: a handler that interrupted the tracer
 * runs below the tracer's own frames, and those lie below the call it
 * served. A holder on the alternate signal stack is gone when the
 * thread runs off it (a handler on it ended); a holder on the thread's
 * stack seen from the alternate one, or on another context's stack, is
 * not: a handler interrupted it. One system call, only when busy is
 * found taken: rare.
 */
int ftrt_abandoned(struct tbuf *b, uintptr_t held, uintptr_t sp)
{
	if (held == BUSY_HELD)
		return 0;
	stack_t ss;
	uintptr_t lo = 0, hi = 0;
	if (sys(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0, 0) == 0 && !(ss.ss_flags & SS_DISABLE))
		lo = (uintptr_t)ss.ss_sp, hi = lo + ss.ss_size;
	int held_alt = held > lo && held <= hi, now_alt = sp > lo && sp <= hi;
	if (held_alt != now_alt)
		return held_alt;
	uint64_t a, c;
	if (ftrt_find_stack(b, held, &a) != ftrt_find_stack(b, sp, &c) || a != c)
		return 0;
	return sp >= held;
}

