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
#include "entry.h"
#include "patch/subtree.h"
#include "record/stack.h"

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

/* The context ucp is being made (context.c; called by the makecontext
 * wrapper in entry.S before the C library's makecontext). */
void ftrt_context_made(const void *ucp) __attribute__((visibility("hidden")));

/* The context whose stack holds the frame at sp (lo < sp <= hi), or NULL
 * for the thread's own stack; *lo and *hi get the extent around sp in
 * which the answer is the same. Lock-free: safe in a signal handler. */
struct ftrt_ctx *ftrt_context_at(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) __attribute__((visibility("hidden")));

/* state.c: a context exists now: the graph fast paths, which know only
 * the thread's own shadow stack, stay off from here on. */
void ftrt_graph_contexts(void) __attribute__((visibility("hidden")));
/* state.c: a context could not be registered: its stack is unknown, so
 * no new call anywhere is graphed (each is recorded as a call). */
void ftrt_graph_ungraphed(void) __attribute__((visibility("hidden")));

#endif
