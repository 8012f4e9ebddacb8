/*
 * Library calls (patch/libcall.c and the files libslots.h lists): the
 * table of redirected GOT slots the tracers' common entry reads
 * (tracers/libcall.c), and the passes that fill it.
 */
#ifndef FTRT_PATCH_LIBCALL_H
#define FTRT_PATCH_LIBCALL_H

#include <stddef.h>
#include <stdint.h>

struct dl_phdr_info; /* <link.h>'s, with _GNU_SOURCE */

struct ftrt_mod;

/* One redirected slot: its address (what a trace names the call by),
 * 8-byte aligned, with the LIBSLOT_* flags in its 3 low bits (ip), and
 * the function it held, where the stub's call goes on to (target). 16
 * bytes: the pass writes one per slot into pages it faults in, a page a
 * 256 slots. Written once, before the slot points at its stub; never
 * changed after, but for flags set (an atomic or) while it runs. Read
 * through ftrt_libslot_ip and ftrt_libslot_flags. arch/layout.h's LS_*
 * say where each lies, for x86-64's ftrace_libgraph_enter. What the hot
 * path needs of a few slots besides is in their cold entry (below). */
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
 * calls need more (its cold entry says what: a capture, the loader's
 * functions), before the slot points at its stub or while it runs
 * (ftrt_libslot_set). */
#define LIBSLOT_GENERAL 2u
/* Its return is never hooked, the call recorded as a plain one (the
 * function returns twice, switches stacks or walks the stack, or takes
 * its caller from its return address: libslots.c's plain_names). Such a
 * slot never has a graph stub. */
#define LIBSLOT_PLAIN 4u
#define LIBSLOT_FLAGS 7u

/* A slot's cold entry, beside its entry in a table of its own: written
 * only for the slots that need it, when the pass knows they may (the
 * arguments' capture asked for, FTRACE_LIBCALL=nest), so that a pass
 * that needs none touches none. */
struct ftrt_libslot_cold {
	/* The function's name, in the module's dynamic string table (valid
	 * while owner, the module, is loaded: ftrt_libcalls_release clears
	 * it), for what chooses by name after the pass (the arguments'
	 * entries: tracers/capture.c). */
	const char *name;
	int owner;
	/* 1: dlopen, dlmopen or dlclose, after which the loaded objects
	 * are scanned again (FTRACE_LIBCALL=nest); 2: another of the
	 * loader's functions, whose call does that scan when one of the
	 * first kind has returned on its thread (tracers/libcall.c). */
	unsigned char loader;
	/* (atomic) 1 when FTRACE_ARGS or FTRACE_RETVAL has an entry for
	 * the function: its calls go through the capture too (set by
	 * tracers/capture.c when it starts and when a module is added). */
	unsigned char capture;
};

/* The table: chunks made as slots are added, never moved or freed, so
 * the entry reads a slot without a lock. A stub's index: chunk, then
 * place in it. A chunk is 256 KiB of address space, its pages faulted
 * in as they are filled: one mapping for most programs' slots; its cold
 * entries another, touched only where written. */
#define FTRT_LIBSLOT_CHUNK 16384
#define FTRT_LIBSLOT_CHUNKS 64
extern struct ftrt_libslot *ftrt_libslots[FTRT_LIBSLOT_CHUNKS] __attribute__((visibility("hidden")));
extern struct ftrt_libslot_cold *ftrt_libslots_cold[FTRT_LIBSLOT_CHUNKS] __attribute__((visibility("hidden")));

static inline const struct ftrt_libslot *ftrt_libslot(uint32_t idx)
{
	return &ftrt_libslots[idx / FTRT_LIBSLOT_CHUNK][idx % FTRT_LIBSLOT_CHUNK];
}

/* Slot idx's cold entry (all zero where none was written), or NULL
 * where none of its chunk's slots has one. */
static inline struct ftrt_libslot_cold *ftrt_libslot_cold(uint32_t idx)
{
	struct ftrt_libslot_cold *c = __atomic_load_n(&ftrt_libslots_cold[idx / FTRT_LIBSLOT_CHUNK], __ATOMIC_ACQUIRE);
	return c ? &c[idx % FTRT_LIBSLOT_CHUNK] : NULL;
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

/* What FTRACE_LIBCALL asks for: 0 nothing, LIBCALL_ON the calls of the
 * modules with sites ("1"), LIBCALL_NEST those of every loaded module
 * ("nest": libraries' calls of one another too). */
#define LIBCALL_ON 1
#define LIBCALL_NEST 2
int ftrt_libcall_wanted(void) __attribute__((visibility("hidden")));
/* Whether library calls are hooked now: FTRACE_LIBCALL asks for want
 * (LIBCALL_ON: either), the tracer is function or function_graph, and
 * the tracers gave their entry. */
int ftrt_libcalls_on(int want) __attribute__((visibility("hidden")));
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
/* The module owner was unloaded: its stub pages go, its slots' names. */
void ftrt_libcalls_release(int owner) __attribute__((visibility("hidden")));
/* Slots in the table: each below it is filled (acquire: after the
 * slot's fields). */
uint32_t ftrt_libslots_count(void) __attribute__((visibility("hidden")));
/* Slot idx's function's name, or NULL (not kept, or its module gone). */
const char *ftrt_libslot_name(uint32_t idx) __attribute__((visibility("hidden")));
/* Set slot idx's capture flag (tracers/capture.c, with the registry's
 * lock); a slot captured takes the C entry from then on. */
void ftrt_libslot_capture(uint32_t idx, int on) __attribute__((visibility("hidden")));
/* md, a module with sites, has registered (its pass): the slots already
 * redirected whose function is in it are left to its own sites. */
void ftrt_libcalls_module(const struct ftrt_mod *md) __attribute__((visibility("hidden")));

#endif
