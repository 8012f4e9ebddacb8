/*
 * Library calls (libcall.c): the table of redirected GOT slots the
 * tracers' common entry reads (tracers/libcall.c), and the pass that
 * fills it.
 */
#ifndef FTRT_PATCH_LIBCALL_H
#define FTRT_PATCH_LIBCALL_H

#include <stdint.h>

struct ftrt_mod;

/* One redirected slot: its address (what a trace names the call by),
 * 8-byte aligned, with the LIBSLOT_* flags in its 3 low bits (ip), and
 * the function it held, where the stub's call goes on to (target). 16
 * bytes: the pass writes one per slot into pages it faults in, a page a
 * 256 slots. Written once, before the slot points at its stub; never
 * changed after, but for flags set (an atomic or) while it runs. Read
 * through ftrt_libslot_ip and ftrt_libslot_flags. arch/layout.h's LS_*
 * say where each lies, for x86-64's ftrace_libgraph_enter. */
struct ftrt_libslot {
	uintptr_t ip;
	uintptr_t target;
};
/* The function is known to be in a module with sites of its own, which
 * records its calls itself: the slot's calls go straight on, never
 * recorded twice (ftrt_libcalls_module). */
#define LIBSLOT_SKIP 1u
/* Every call takes the C entry (tracers/libcall.c), never a graph stub's
 * fast path, which only pushes and pops the call: set for a slot whose
 * calls need more, before the slot points at its stub or while it runs
 * (ftrt_libslot_set). */
#define LIBSLOT_GENERAL 2u
/* Its return is never hooked, the call recorded as a plain one (the
 * function returns twice, switches stacks or walks the stack:
 * patch/libcall.c's plain_names). Such a slot never has a graph stub. */
#define LIBSLOT_PLAIN 4u
#define LIBSLOT_FLAGS 7u

/* The table: chunks made as slots are added, never moved or freed, so
 * the entry reads a slot without a lock. A stub's index: chunk, then
 * place in it. A chunk is 256 KiB of address space, its pages faulted
 * in as they are filled: one mapping for most programs' slots. */
#define FTRT_LIBSLOT_CHUNK 16384
#define FTRT_LIBSLOT_CHUNKS 64
extern struct ftrt_libslot *ftrt_libslots[FTRT_LIBSLOT_CHUNKS] __attribute__((visibility("hidden")));

static inline const struct ftrt_libslot *ftrt_libslot(uint32_t idx)
{
	return &ftrt_libslots[idx / FTRT_LIBSLOT_CHUNK][idx % FTRT_LIBSLOT_CHUNK];
}

/* The slot's address. */
static inline uintptr_t ftrt_libslot_ip(const struct ftrt_libslot *s)
{
	return s->ip & ~(uintptr_t)LIBSLOT_FLAGS;
}

/* The slot's LIBSLOT_* flags as they are now. */
static inline unsigned ftrt_libslot_flags(const struct ftrt_libslot *s)
{
	return (unsigned)(__atomic_load_n(&s->ip, __ATOMIC_RELAXED) & LIBSLOT_FLAGS);
}

/* Set flags (LIBSLOT_*) of a slot, whether or not its calls run. */
static inline void ftrt_libslot_set(struct ftrt_libslot *s, unsigned flags)
{
	__atomic_fetch_or(&s->ip, (uintptr_t)(flags & LIBSLOT_FLAGS), __ATOMIC_RELAXED);
}

/* Whether FTRACE_LIBCALL asks for library calls. */
int ftrt_libcall_wanted(void) __attribute__((visibility("hidden")));
/* Redirect md's slots of the functions the filter chooses (its pass,
 * once its sites are done); its counts into md->libcalls. */
void ftrt_libcalls_hook(struct ftrt_mod *md) __attribute__((visibility("hidden")));
/* The module owner was unloaded: its stub pages go. */
void ftrt_libcalls_release(int owner) __attribute__((visibility("hidden")));
/* md, a module with sites, has registered (its pass): the slots already
 * redirected whose function is in it are left to its own sites. */
void ftrt_libcalls_module(const struct ftrt_mod *md) __attribute__((visibility("hidden")));

#endif
