/*
 * function_graph's shadow stacks, and the contexts that have their own.
 *
 * A graphed call is pushed on a shadow stack at its entry and popped at
 * its return, which it makes through the tracer's hook: the shadow entry
 * holds where it really returns. Calls and returns on one stack nest, so
 * each stack the program runs code on needs a shadow stack of its own:
 * a thread's own stack has the one in its buffer (tracer.h), and each
 * context made by makecontext (coroutines: their stacks are the
 * program's, and swapcontext switches between them in any order) has
 * one in its record here (context.c). A frame's stack pointer says which
 * stack it is on, so which shadow stack its call goes on.
 */
#ifndef FTRT_GRAPH_H
#define FTRT_GRAPH_H

#include <stdint.h>

#include "arch/layout.h"

/*
 * A shadow entry's mark: its low seven bits (MARK_KIND) the subtree
 * filters' mark (layout.h's MARK_CHOSEN, MARK_NOTRACE, or 0: the
 * assembly writes and tests the whole word as 0), or MARK_UNRECORDED, a
 * call pushed for graph users alone (fgraph.c), of which no record is
 * written; MARK_INHERITED, a call a forked child's thread inherited from
 * its parent's (thread.c), whose entry is in the parent's stream and so
 * whose end is recorded in neither; above them the users that want the
 * call's return (a bit for each of users 1-16), the users' epoch when it
 * was pushed (a user registered since did not ask for it), and where the
 * users' data for the call begins in the thread's (struct tbuf's
 * fgdata).
 */
#define MARK_KIND 0x7fu
#define MARK_UNRECORDED 3
#define MARK_INHERITED 0x80u
#define MARK_USERS_SHIFT 8
#define MARK_USERS_MASK 0xffffu
#define MARK_EPOCH_SHIFT 24
#define MARK_EPOCH_MASK 0xffffu
#define MARK_DATA_SHIFT 40
#define MARK_DATA_MAX (1u << 24) /* bytes of a thread's fgdata the mark can reach */
/* Whether the call sh is recorded (its entry written in this stream: its
 * exit will be). */
#define MARK_RECORDED(m) (((m) & MARK_KIND) != MARK_NOTRACE && ((m) & MARK_KIND) != MARK_UNRECORDED && !((m) & MARK_INHERITED))

/* A graphed call (layout.h gives its layout to entry.S). */
struct shadow {
	uintptr_t ret;  /* where the call really returns (the caller's return address) */
	uintptr_t ip;   /* the site */
	uintptr_t sp;   /* the stack pointer the function will return with: its frame check */
	uintptr_t hook; /* what its return slot holds while it runs: return_to_handler, or
			 * the return point inside its per-site trampoline */
	uint64_t pos;   /* the stream position (in words) of its entry record: FTRACE_THRESH */
	uintptr_t mark; /* MARK_CHOSEN, MARK_NOTRACE (layout.h), or 0: its stack's counts below
			 * hold it, and each pop gives it back (subtree.c); the graph users'
			 * bits above (MARK_KIND and the rest, above) */
};

/* The graphed calls running on one stack, innermost last. */
struct shadow_stack {
	uint32_t depth;   /* entries in e[] */
	int stopped;      /* e[] overflowed: no new call on this stack is graphed */
	uint32_t chosen;  /* entries of e[] marked MARK_CHOSEN: a chosen call runs on this stack */
	uint32_t notrace; /* entries of e[] marked MARK_NOTRACE: a notrace call runs on this stack */
	struct shadow e[SHADOW_MAX];
};

/*
 * A context made by makecontext: its stack (a frame's stack pointer sp is
 * on it when lo < sp <= hi), and the shadow stack
 * of the calls running on it. The trace names it by id (1, 2, ...: the
 * thread's own stack is 0); making a context again on the same stack
 * gives it a new id and an empty shadow stack (its old calls never
 * returned).
 */
struct ftrt_ctx {
	uintptr_t lo, hi;    /* set before the record is published, never changed */
	_Atomic uint64_t id; /* a new one each time a context is made on this stack */
	_Atomic int live;    /* 0: its stack was given to another context */
	struct shadow_stack stack;
};

/* Bumped each time a context is made: 0 while none has been, and then
 * every stack is its thread's own. A thread's cached answer of
 * ftrt_context_at holds while this is unchanged. */
extern _Atomic unsigned ftrt_ctx_gen __attribute__((visibility("hidden")));
/* Contexts made, and those made when the table was full (whose calls
 * are then recorded as calls, not graphed: ftrt_graph_ungraphed). */
extern _Atomic uint64_t ftrt_ctx_made __attribute__((visibility("hidden")));
extern _Atomic uint64_t ftrt_ctx_lost __attribute__((visibility("hidden")));

/* The context ucp is being made (context.c; called by the makecontext
 * wrapper in entry.S before the C library's makecontext). */
void ftrt_context_made(const void *ucp) __attribute__((visibility("hidden")));

/* The context whose stack holds the frame at sp (lo < sp <= hi), or NULL
 * for the thread's own stack; *lo and *hi get the extent around sp in
 * which the answer is the same. Lock-free: safe in a signal handler. */
struct ftrt_ctx *ftrt_context_at(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) __attribute__((visibility("hidden")));

/*
 * The subtree filters (subtree.c): FTRACE_GRAPH_FUNCS and
 * FTRACE_GRAPH_NOTRACE. ftrt_subtree says which are on (SUBTREE_*,
 * layout.h; 0 for none, and under any tracer but function_graph);
 * ftrt_subtree_funcs and ftrt_subtree_notrace are their settings, for
 * the trace's metadata (NULL when not on).
 */
extern int ftrt_subtree __attribute__((visibility("hidden")));
extern const char *ftrt_subtree_funcs __attribute__((visibility("hidden")));
extern const char *ftrt_subtree_notrace __attribute__((visibility("hidden")));
extern uint64_t ftrt_subtree_maybe[SUBTREE_BITS / 64] __attribute__((visibility("hidden")));

/* The load-time pass of module `owner` (registry.c's number, 1..) marked
 * its sorted sites s[0, m) (marks[i]: MARK_CHOSEN, MARK_NOTRACE or 0);
 * those it enables (want[i] not WANT_NOP) are kept for lookups, in a
 * table of the module's, whose code lies in [lo, hi). Before the sites
 * are enabled. 0, or -1 when the table could not be made. */
int ftrt_subtree_add(int owner, uintptr_t lo, uintptr_t hi, const uintptr_t *s, const unsigned char *want,
		     const unsigned char *marks, size_t m) __attribute__((visibility("hidden")));
/* The module `owner` is unloaded: its table goes. */
void ftrt_subtree_release(int owner) __attribute__((visibility("hidden")));
/* The mark of the site ip: a search of the tables. */
int ftrt_subtree_lookup(uintptr_t ip) __attribute__((visibility("hidden")));

/* The mark of the site ip (MARK_*, or 0), for the tracer: a site whose
 * bit in ftrt_subtree_maybe is clear has none (the test the assembly
 * fast paths make, see entry.S); the others are looked up. Lock-free. */
static inline int ftrt_subtree_mark(uintptr_t ip)
{
	uintptr_t bit = (ip >> 4) % SUBTREE_BITS;
	if (!(__atomic_load_n(&ftrt_subtree_maybe[bit / 64], __ATOMIC_RELAXED) >> (bit % 64) & 1))
		return 0;
	return ftrt_subtree_lookup(ip);
}

/* state.c: a context exists now: the graph fast paths, which know only
 * the thread's own shadow stack, stay off from here on. */
void ftrt_graph_contexts(void) __attribute__((visibility("hidden")));
/* state.c: a context could not be registered: its stack is unknown, so
 * no new call anywhere is graphed (each is recorded as a call). */
void ftrt_graph_ungraphed(void) __attribute__((visibility("hidden")));

#endif
