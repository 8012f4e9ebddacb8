/*
 * Library calls' parts, and what they share:
 *
 *   libcall.c   the pass over a module's slots (which to redirect, the
 *               writes), FTRACE_LIBCALL, a file's baked list
 *   libslots.c  the table of redirected slots and their stubs' pages,
 *               the functions treated apart
 *   libdyn.c    a module's dynamic section; a lazy slot's function
 *               looked up as the loader would
 *   libscan.c   every loaded object's slots (FTRACE_LIBCALL=nest): the
 *               objects without sites served, at start and after dlopen
 *   liblive.c   slots made traced or untraced while the program runs
 *               (the live filters)
 *
 * Start-up and live code, never the hot path: libc is used freely.
 */
#ifndef FTRT_PATCH_LIBSLOTS_H
#define FTRT_PATCH_LIBSLOTS_H

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "libdyn.h"

#define HIDDEN_LIB __attribute__((visibility("hidden")))

struct ftrt_mod;
struct ftrt_libcall_stats;

/* A lazy slot's function looked up before the registry's lock is taken
 * (libscan.c's rescans, liblive.c's changes: the loader's lookups take
 * the loader's lock, which a thread running a constructor holds while it
 * waits for the registry's); the pass then takes it from here. */
struct ftrt_early {
	uintptr_t slot, target;
	uint32_t hash; /* of its function's name: a slot of another module loaded at its place since is not it */
};
extern struct ftrt_early *ftrt_lib_early HIDDEN_LIB;
extern size_t ftrt_lib_nearly HIDDEN_LIB, ftrt_lib_early_cap HIDDEN_LIB;
/* This thread's pass takes lazy slots' functions from ftrt_lib_early
 * alone. */
extern __thread int ftrt_lib_early_on __attribute__((tls_model("initial-exec"))) HIDDEN_LIB;
/* ftrt_lib_early's function for slot, when it is name's, else 0. */
uintptr_t ftrt_lib_early_target(uintptr_t slot, const char *name) HIDDEN_LIB;
/* Room in ftrt_lib_early for n more: 0, or -1. */
int ftrt_lib_early_room(size_t n) HIDDEN_LIB;
/* One rescan (libscan.c) or live change (liblive.c) at a time: the
 * holder owns ftrt_lib_early. */
extern pthread_mutex_t ftrt_lib_rescan_lock HIDDEN_LIB;

/* Each module's dynamic section's facts, as its pass read them, by
 * owner: what a live change reads instead of walking the loader's list
 * again (dl_iterate_phdr takes a lock of the loader's that a fork leaves
 * held in the child when another thread held it). keep at the pass;
 * of: 0 with *d filled, -1 for a module never read. */
void ftrt_lib_dyn_keep(int owner, const struct ftrt_dyn *d) HIDDEN_LIB;
int ftrt_lib_dyn_of(int owner, struct ftrt_dyn *d) HIDDEN_LIB;

/* Whether the arguments' capture may ask for slots' names (FTRACE_ARGS,
 * FTRACE_RETVAL, their library entries, the --auto-args socket): a pass
 * keeps them in cold entries then. */
int ftrt_lib_names_wanted(void) HIDDEN_LIB;

/* Slots in the table. */
extern uint32_t ftrt_lib_nslots HIDDEN_LIB;
/* The stub pages of one module's batch: room for n stubs, graph stubs
 * where the ISA has them when graph (0, or -1), the first at
 * ftrt_lib_stubs_base(); then, the stubs made, those used made only
 * executable and kept for owner (0, or -1: not to be used). */
int ftrt_lib_stubs_reserve(size_t n, int graph) HIDDEN_LIB;
unsigned char *ftrt_lib_stubs_base(void) HIDDEN_LIB;
int ftrt_lib_stubs_seal(int owner) HIDDEN_LIB;
/* A walk over a batch's stubs, in the order of their slots' entries: at,
 * the next one, left the cells after it in its page. */
struct ftrt_lib_cursor {
	unsigned char *at;
	size_t left;
};
struct ftrt_lib_cursor ftrt_lib_cursor_at(unsigned char *base) HIDDEN_LIB;
unsigned char *ftrt_lib_cursor_next(struct ftrt_lib_cursor *c) HIDDEN_LIB;
/* Whether a is in a stub page: a slot redirected already. */
int ftrt_lib_in_stubs(uintptr_t a) HIDDEN_LIB;
/* slot, redirected to stub, as owner's probe (ftrt_libcalls_still). */
void ftrt_lib_set_probe(int owner, uintptr_t *slot, uintptr_t stub) HIDDEN_LIB;
/* The spans of the modules with sites, gathered once a pass, for the
 * slots whose functions record their own calls (LIBSLOT_SKIP). */
void ftrt_lib_traced_gather(void) HIDDEN_LIB;
/* A new entry of the table for md's slot at ip, whose function is
 * target, and its stub in the batch's pages (a graph stub in a graph
 * batch, unless plain or loader); name kept in its cold entry when cold
 * (loader, too): 0, or -1 (no room). */
int ftrt_lib_new_slot(const struct ftrt_mod *md, uintptr_t ip, uintptr_t target, const char *name, int plain, int loader, int cold)
	HIDDEN_LIB;

/* What one module's pass decides once for all its slots. */
struct ftrt_lib_pass {
	const char *baked; /* a file's baked list (ftpatch enable --libcall) chooses, not the filter */
	int nest;        /* FTRACE_LIBCALL=nest: the loader's functions marked */
	int cold;        /* the arguments' capture may ask for names */
	int again;       /* the module may have been served already: redirected slots skipped */
	/* The subtree filters' marks (FTRACE_GRAPH_FUNCS, _NOTRACE), by
	 * slot, made as marked slots are met. */
	struct ftrt_lib_mark {
		uintptr_t ip;
		unsigned char mark;
	} *marks;
	size_t nmarks, capmarks;
};
/* The slots of md's relocations r[0, n) that the filter (or p's baked
 * list) chooses, each a new slot of the table with its stub in the
 * batch's pages, as long as there is room; counted into st, marks into
 * p (libcall.c's pass). */
void ftrt_lib_hook_table(const struct ftrt_mod *md, const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n, struct ftrt_lib_pass *p,
			 struct ftrt_libcall_stats *st) HIDDEN_LIB;

/* The functions treated apart, by name: left alone, recorded as plain
 * calls (listed), the loader's (1: after which objects are scanned
 * again, 2: whose call scans). */
enum { LISTED_NOT, LISTED_ALONE, LISTED_PLAIN };
int ftrt_lib_listed(const char *name) HIDDEN_LIB;
int ftrt_lib_loader_call(const char *name) HIDDEN_LIB;
/* Whether name is one of the loader's functions that take their caller
 * from their return address (plain, but for the program's own calls). */
int ftrt_lib_caller_sensitive(const char *name) HIDDEN_LIB;
/* Whether md's call of name is recorded as a plain call, its list being
 * list (ftrt_lib_listed's). */
int ftrt_lib_plain(const struct ftrt_mod *md, const char *name, int list) HIDDEN_LIB;
/* A name's hash (cheap: its length and a few bytes). */
uint32_t ftrt_lib_name_hash(const char *s) HIDDEN_LIB;

/* Whether relocation r of d fills a library-call slot (its symbol into
 * *sym); how many of r[0, n) do. */
int ftrt_lib_slot_of(const struct ftrt_dyn *d, const ElfW(Rela) *r, const ElfW(Sym) **sym) HIDDEN_LIB;
size_t ftrt_lib_count_slots(const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n) HIDDEN_LIB;

#endif
