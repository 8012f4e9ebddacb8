/*
 * Grace periods for the ops (ops.c): the user-space stand-in for the
 * kernel's RCU-tasks wait, which unregister_ftrace_function needs
 * before it may return. Each thread that runs an ops callback holds a
 * slot of its own (one cache line) whose word counts, in its low half,
 * the walks of the ops the thread is inside (a callback's own traced
 * calls, and a signal handler's, nest) and, in its high half, the
 * outermost walks it has left. A walk enters before it reads anything
 * the writer changes (an ops record's user, the list's view) and leaves
 * after its last callback returned.
 *
 * The writer (ftrt_grace_wait) publishes its change, makes every thread
 * pass a full barrier (membarrier: a walk that entered before it is seen
 * entered; one that enters after it sees the change), then waits for
 * each thread seen inside a walk to be outside, or to have left an
 * outermost walk since. Its own thread is not waited for (a callback
 * that unregisters an ops is inside a walk for as long as it runs).
 *
 * A thread's slot is claimed at its first walk and given back at its
 * exit (a key's destructor); past the last slot, threads share one
 * whose word they change atomically, and which the writer waits to see
 * at zero walks.
 */
#ifndef FTRT_GRACE_H
#define FTRT_GRACE_H

#include <stddef.h>
#include <stdint.h>

#include "arch/opslayout.h"

#define GRACE_DEPTH 0xffffffffull /* the low half: walks the thread is inside */
#define GRACE_LEFT (1ull << 32)   /* one outermost walk left, in the high half */

struct ftrt_grace {
	uint64_t w;         /* (atomic) GRACE_DEPTH | left walks << 32; written by its thread alone (but the shared slot) */
	int owner;          /* (atomic) the thread's id; 0: free */
	int shared;         /* the slot every thread past the last shares: changed atomically */
	char pad[64 - 16];
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct ftrt_grace, w) == GRACE_W && offsetof(struct ftrt_grace, shared) == GRACE_SHARED &&
		       GRACE_LEFT_LESS_ONE == GRACE_LEFT - 1,
	       "opslayout.h: struct ftrt_grace");

/* The calling thread's slot; NULL before its first walk. */
extern __thread struct ftrt_grace *ftrt_grace_mine __attribute__((tls_model("initial-exec"), visibility("hidden")));
struct ftrt_grace *ftrt_grace_claim(void) __attribute__((visibility("hidden")));

/* Enter a walk: after it, the writer sees this thread inside (or the
 * thread sees the writer's change). The slot is changed by its thread
 * alone, a load and a store: a signal handler's walks between them
 * leave the depth as they found it. */
static inline struct ftrt_grace *ftrt_grace_enter(void)
{
	struct ftrt_grace *g = ftrt_grace_mine;
	if (__builtin_expect(!g, 0))
		g = ftrt_grace_claim();
	if (__builtin_expect(g->shared, 0))
		__atomic_fetch_add(&g->w, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_store_n(&g->w, __atomic_load_n(&g->w, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	__asm__ volatile("" ::: "memory"); /* the walk's reads stay after (membarrier orders the rest) */
	return g;
}

/* Leave it: every read and call of the walk done first (release). An
 * outermost walk's leaving bumps the high half. A handler interrupting
 * between the load and the store leaves the value as it found it but
 * for its own bumps of the high half, which the store may lose: the
 * outermost walk's own bump is never lost. */
static inline void ftrt_grace_exit(struct ftrt_grace *g)
{
	if (__builtin_expect(g->shared, 0)) {
		__atomic_fetch_sub(&g->w, 1, __ATOMIC_RELEASE);
		return;
	}
	uint64_t w = __atomic_load_n(&g->w, __ATOMIC_RELAXED);
	w = (w & GRACE_DEPTH) == 1 ? w - 1 + GRACE_LEFT : w - 1;
	__atomic_store_n(&g->w, w, __ATOMIC_RELEASE);
}

/* Before the first walk can begin (the first ops registered): the key
 * whose destructor gives a thread's slot back (a first walk may be a
 * signal handler's, where no pthread_once may run). */
void ftrt_grace_init(void) __attribute__((visibility("hidden")));
/* Wait until no thread but the caller is inside a walk that began
 * before this call; the change to wait for published before it. */
void ftrt_grace_wait(void) __attribute__((visibility("hidden")));
/* In a child after fork: the parent's other threads are gone. */
void ftrt_grace_after_fork(void) __attribute__((visibility("hidden")));

#endif
