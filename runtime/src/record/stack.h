/*
 * A shadow stack: the graphed calls running on one stack, innermost
 * last, as each thread's buffer (tracer.h's struct tbuf) and each
 * makecontext context (tracers/graph.h) holds one. Definitions only: the
 * graph tracer pushes and pops them (tracers/graph.c, tracers/shadow.c),
 * the buffer code writes the end of a call left open (encode.h's
 * pop_left) and the layout the assembly reads is layout.h's.
 */
#ifndef FTRT_STACK_H
#define FTRT_STACK_H

#include <stdint.h>

#include "arch/layout.h"

/*
 * A shadow entry's mark: its low seven bits (MARK_KIND) the subtree
 * filters' mark (layout.h's MARK_CHOSEN, MARK_NOTRACE, or 0: the
 * assembly writes and tests the whole word as 0), or MARK_UNRECORDED, a
 * call pushed for graph users alone (fgraph.c), of which no record is
 * written; MARK_INHERITED, a call a forked child's thread inherited from
 * its parent's (thread.c), whose entry is in the parent's stream and so
 * whose end is recorded in neither; MARK_PROLOGUE, a call at a site
 * made from a prologue, whose users' returns keep every vector register
 * (fgraph.c); above them the users that want the
 * call's return (a bit for each of users 1-16), the users' epoch when it
 * was pushed (a user registered since did not ask for it), and where the
 * users' data for the call begins in the thread's (struct tbuf's
 * fgdata).
 */
#define MARK_KIND 0x3fu
#define MARK_UNRECORDED 3
#define MARK_PROLOGUE 0x40u
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

/* Bytes of a thread's area for the unwind info of its graphed calls'
 * hooks (tracers/frames.c, ftrt_graph_hook_info). */
#define FTRT_FRAME_INFO 256

#endif
