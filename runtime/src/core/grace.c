/*
 * Grace periods for the ops (grace.h says how they work): the slots,
 * claimed by each thread at its first walk of the ops and given back at
 * its exit, and the writer's wait. Calls live.h's text.c (membarrier)
 * and the C library's pthread keys.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch/poke.h"
#include "arch/sys.h"
#include "ftrt.h"
#include "grace.h"

/* Slots for this many threads at once; one cache line each, in the
 * zero-filled data of the program, untouched until claimed. */
#define GRACE_SLOTS 4096
static struct ftrt_grace slots[GRACE_SLOTS];
/* For the threads past the last slot, and for a thread's walks after
 * its slot went back at its exit (other keys' destructors may still
 * make traced calls). */
static struct ftrt_grace overflow = { .shared = 1 };

__thread struct ftrt_grace *ftrt_grace_mine __attribute__((tls_model("initial-exec"), visibility("hidden")));

static pthread_key_t key;
static int key_ok; /* made by ftrt_grace_init, before any walk */

/* At the thread's exit: its slot goes back, empty. */
static void give_back(void *v)
{
	struct ftrt_grace *g = ftrt_grace_mine;
	(void)v;
	ftrt_grace_mine = &overflow;
	if (g && !g->shared) {
		__atomic_store_n(&g->w, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&g->owner, 0, __ATOMIC_RELEASE);
	}
}

void ftrt_grace_init(void)
{
	if (!key_ok)
		key_ok = pthread_key_create(&key, give_back) == 0;
}

struct ftrt_grace *ftrt_grace_claim(void)
{
	int me = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	struct ftrt_grace *g = &overflow;
	ftrt_in_runtime++; /* the runtime's own call of the C library (tracers/libcall.c) */
	int keyed = __atomic_load_n(&key_ok, __ATOMIC_ACQUIRE) && pthread_setspecific(key, (void *)1) == 0;
	ftrt_in_runtime--;
	if (keyed)
		for (int i = 0; i < GRACE_SLOTS; i++) {
			int free = 0;
			if (__atomic_load_n(&slots[i].owner, __ATOMIC_RELAXED) == 0 &&
			    __atomic_compare_exchange_n(&slots[i].owner, &free, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
				g = &slots[i];
				break;
			}
		}
	/* Without a key the slot could not be given back: the shared one. */
	ftrt_grace_mine = g;
	return g;
}

void ftrt_grace_wait(void)
{
	static uint64_t seen[GRACE_SLOTS];
	struct ftrt_grace *mine = ftrt_grace_mine;
	/* Every thread past a full barrier: a walk that began before it is
	 * seen in its slot below; one that begins after it sees what the
	 * caller published. */
	ftrt_text_sync();
	for (int i = 0; i < GRACE_SLOTS; i++)
		seen[i] = &slots[i] == mine || !__atomic_load_n(&slots[i].owner, __ATOMIC_ACQUIRE)
				  ? 0
				  : __atomic_load_n(&slots[i].w, __ATOMIC_ACQUIRE);
	struct timespec nap = { .tv_nsec = 50000 };
	for (int i = 0; i < GRACE_SLOTS; i++) {
		if (!(seen[i] & GRACE_DEPTH))
			continue;
		for (;;) {
			uint64_t w = __atomic_load_n(&slots[i].w, __ATOMIC_ACQUIRE);
			/* Outside every walk, or out of the outermost one seen (the
			 * slot given back, or claimed by a new thread, says 0 or
			 * counts afresh: that thread's walks began after the change). */
			if (!(w & GRACE_DEPTH) || (w & ~GRACE_DEPTH) != (seen[i] & ~GRACE_DEPTH) ||
			    !__atomic_load_n(&slots[i].owner, __ATOMIC_ACQUIRE))
				break;
			sys(SYS_nanosleep, (long)&nap, 0, 0, 0, 0, 0);
		}
	}
	/* The shared slot: until no walk is under way in it. */
	while (mine != &overflow && __atomic_load_n(&overflow.w, __ATOMIC_ACQUIRE) != 0)
		sys(SYS_nanosleep, (long)&nap, 0, 0, 0, 0, 0);
}

void ftrt_grace_after_fork(void)
{
	struct ftrt_grace *mine = ftrt_grace_mine;
	for (int i = 0; i < GRACE_SLOTS; i++)
		if (&slots[i] != mine) {
			__atomic_store_n(&slots[i].w, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&slots[i].owner, 0, __ATOMIC_RELAXED);
		}
	__atomic_store_n(&overflow.w, mine == &overflow ? __atomic_load_n(&overflow.w, __ATOMIC_RELAXED) : 0, __ATOMIC_RELAXED);
	if (mine && !mine->shared)
		__atomic_store_n(&mine->owner, (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0), __ATOMIC_RELAXED);
}
