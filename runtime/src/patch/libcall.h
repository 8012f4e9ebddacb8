/*
 * Library calls (libcall.c): the table of redirected GOT slots the
 * tracers' common entry reads (tracers/libcall.c), and the pass that
 * fills it.
 */
#ifndef FTRT_PATCH_LIBCALL_H
#define FTRT_PATCH_LIBCALL_H

#include <stddef.h>
#include <stdint.h>

struct dl_phdr_info; /* <link.h>'s, with _GNU_SOURCE */

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
	/* 1: dlopen, dlmopen or dlclose, after which the loaded objects
	 * are scanned again (FTRACE_LIBCALL=nest); 2: another of the
	 * loader's functions, whose call does that scan when one of the
	 * first kind has returned on its thread (tracers/libcall.c). */
	int loader;
	/* Its stub: while the slot holds it, the slot is this entry's (a
	 * slot made traced, untraced and traced again live has an entry
	 * for each time). */
	uintptr_t stub;
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

/* What FTRACE_LIBCALL asks for: 0 nothing, LIBCALL_ON the calls of the
 * modules with sites ("1"), LIBCALL_NEST those of every loaded module
 * ("nest": libraries' calls of one another too). */
#define LIBCALL_ON 1
#define LIBCALL_NEST 2
int ftrt_libcall_wanted(void) __attribute__((visibility("hidden")));
/* Whether the loaded object info is one to serve for its library calls
 * alone (FTRACE_LIBCALL=nest): a shared object without sites, not the
 * loader or the vDSO (registry.c's scan asks). */
int ftrt_libcalls_plain(const struct dl_phdr_info *info) __attribute__((visibility("hidden")));
/* Whether the module owner's redirected slots are still as it left them
 * (its object not unloaded and loaded again at its place). */
int ftrt_libcalls_still(int owner) __attribute__((visibility("hidden")));
/* The loaded objects scanned again (after a dlopen or dlclose returned):
 * those without sites served, those gone forgotten. */
void ftrt_libcalls_rescan(void) __attribute__((visibility("hidden")));
/* The same from a pass (the program's: FTRACE_LIBCALL=nest), the
 * registry's lock held, in the loader's context. */
void ftrt_libcalls_scan_locked(void) __attribute__((visibility("hidden")));
/* Redirect md's slots of the functions the filter chooses (its pass,
 * once its sites are done); its counts into md->libcalls. */
void ftrt_libcalls_hook(struct ftrt_mod *md) __attribute__((visibility("hidden")));
/* ftrt_libcalls_hook of a file pre-patched by ftpatch enable --libcall:
 * the slots of the functions its record's list (at most max bytes)
 * names. */
void ftrt_libcalls_hook_baked(struct ftrt_mod *md, const char *list, size_t max) __attribute__((visibility("hidden")));
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
