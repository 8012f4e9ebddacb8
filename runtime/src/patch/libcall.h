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
 * before the slot points at its stub; never changed after, but for skip
 * and capture. */
struct ftrt_libslot {
	uintptr_t ip;
	uintptr_t target;
	/* The function's name, in the module's dynamic string table (valid
	 * while owner, the module, is loaded: ftrt_libcalls_release clears
	 * it), for what chooses by name after the pass (the arguments'
	 * entries: tracers/capture.c). */
	const char *name;
	int owner;
	/* 1 once the function is known to be in a module with sites of its
	 * own, which records its calls itself: the slot's calls go straight
	 * on, never recorded twice (ftrt_libcalls_module). */
	int skip;
	/* 1: its return is never hooked, the call recorded as a plain one
	 * (the function returns twice, switches stacks or walks the
	 * stack: patch/libcall.c's plain_call). */
	int plain;
	/* (atomic) 1 when FTRACE_ARGS or FTRACE_RETVAL has an entry for
	 * the function: its calls go through the capture too (set by
	 * tracers/capture.c when it starts and when a module is added;
	 * 0 for the rest, whose calls cost what they did without it). */
	int capture;
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
/* Slots in the table: each below it is filled (acquire: after the
 * slot's fields). */
uint32_t ftrt_libslots_count(void) __attribute__((visibility("hidden")));
/* Set slot idx's capture flag (tracers/capture.c, with the registry's
 * lock). */
void ftrt_libslot_capture(uint32_t idx, int on) __attribute__((visibility("hidden")));
/* md, a module with sites, has registered (its pass): the slots already
 * redirected whose function is in it are left to its own sites. */
void ftrt_libcalls_module(const struct ftrt_mod *md) __attribute__((visibility("hidden")));

#endif
