/*
 * Library calls (libcall.c): the table of redirected GOT slots the
 * tracers' common entry reads (tracers/libcall.c), and the pass that
 * fills it.
 */
#ifndef FTRT_PATCH_LIBCALL_H
#define FTRT_PATCH_LIBCALL_H

#include <stdint.h>

struct ftrt_mod;

/* One redirected slot: its address (what a trace names the call by) and
 * the function it held, where the stub's call goes on to. Written once,
 * before the slot points at its stub; never changed after, but for
 * skip and general, which only ever go from 0 to 1. arch/layout.h's
 * LS_* say where each lies, for x86-64's ftrace_libgraph_enter. */
struct ftrt_libslot {
	uintptr_t ip;
	uintptr_t target;
	/* 1 once the function is known to be in a module with sites of its
	 * own, which records its calls itself: the slot's calls go straight
	 * on, never recorded twice (ftrt_libcalls_module). */
	int skip;
	/* 1: every call takes the C entry (tracers/libcall.c), never a
	 * graph stub's fast path, which only pushes and pops the call: set
	 * for a slot whose calls need more, before the slot points at its
	 * stub or (an atomic store) while it runs. With skip and plain,
	 * and the padding after them (0: the table's chunks are mapped
	 * zeroed), read by the fast path as one word. */
	unsigned char general;
	/* 1: its return is never hooked, the call recorded as a plain one
	 * (the function returns twice, switches stacks or walks the
	 * stack: patch/libcall.c's plain_call). Such a slot never has a
	 * graph stub. */
	unsigned char plain;
};

/* The table: chunks made as slots are added, never moved or freed, so
 * the entry reads a slot without a lock. A stub's index: chunk, then
 * place in it. */
#define FTRT_LIBSLOT_CHUNK 4096
#define FTRT_LIBSLOT_CHUNKS 256
extern struct ftrt_libslot *ftrt_libslots[FTRT_LIBSLOT_CHUNKS] __attribute__((visibility("hidden")));

static inline const struct ftrt_libslot *ftrt_libslot(uint32_t idx)
{
	return &ftrt_libslots[idx / FTRT_LIBSLOT_CHUNK][idx % FTRT_LIBSLOT_CHUNK];
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
