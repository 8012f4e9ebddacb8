/*
 * Library calls' parts, and what they share:
 *
 *   libcall.c   the pass over a module's slots (which to redirect, the
 *               writes), FTRACE_LIBCALL, a file's baked list
 *   libslots.c  the table of redirected slots and their stubs' pages,
 *               the functions treated apart, a module's dynamic
 *               section, looking a lazy slot's function up
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

#define HIDDEN_LIB __attribute__((visibility("hidden")))

struct ftrt_mod;

/* A module's dynamic section's facts, and its RELRO range. */
struct ftrt_dyn {
	const ElfW(Rela) *jmprel, *rela;
	size_t njmprel, nrela;
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Half) *versym;
	const ElfW(Verneed) *verneed;
	size_t nverneed;
	uintptr_t relro_lo, relro_hi;
};

/* ftrt_lib_find_dyn's argument: the module looked for, its facts. */
struct ftrt_dynfind {
	const struct ftrt_mod *md;
	struct ftrt_dyn *d;
	int found;
};

/* The slots to redirect, gathered before any is written: their stubs'
 * page is made executable once, and only then do slots point at it. */
struct ftrt_pending {
	uintptr_t *slot;
	uintptr_t stub;
	unsigned char mark; /* its function's subtree mark (subtree.c), or 0 */
};

/* A lazy slot's function looked up before the registry's lock is taken
 * (libslots.c says when). */
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

/* Slots in the table. */
extern uint32_t ftrt_lib_nslots HIDDEN_LIB;
/* The stub pages of one module's batch: room for n stubs (0, or -1);
 * then, the stubs made, those used made only executable and kept for
 * owner (0, or -1: not to be used). */
int ftrt_lib_stubs_reserve(size_t n) HIDDEN_LIB;
int ftrt_lib_stubs_seal(int owner) HIDDEN_LIB;
/* Whether a is in a stub page: a slot redirected already. */
int ftrt_lib_in_stubs(uintptr_t a) HIDDEN_LIB;
/* slot, redirected to stub, as owner's probe (ftrt_libcalls_still). */
void ftrt_lib_set_probe(int owner, uintptr_t *slot, uintptr_t stub) HIDDEN_LIB;
/* A new entry of the table for md's slot at ip, whose function is
 * target, and its stub in the batch's pages: the stub, or 0. */
uintptr_t ftrt_lib_new_slot(const struct ftrt_mod *md, uintptr_t ip, uintptr_t target, const char *name, int plain, int loader) HIDDEN_LIB;

/* FNV-1a of a name. */
uint32_t ftrt_lib_name_hash(const char *s) HIDDEN_LIB;
/* The functions treated apart: left alone; recorded as plain calls; the
 * loader's (1: after which objects are scanned again, 2: whose call
 * scans). */
int ftrt_lib_left_alone(const char *name) HIDDEN_LIB;
int ftrt_lib_plain_call(const char *name) HIDDEN_LIB;
int ftrt_lib_loader_call(const char *name) HIDDEN_LIB;

/* dl_iterate_phdr's callback filling a struct ftrt_dynfind. */
int ftrt_lib_find_dyn(struct dl_phdr_info *info, size_t size, void *arg) HIDDEN_LIB;
/* The version the module asks of symbol i, or NULL. */
const char *ftrt_lib_version_of(const struct ftrt_dyn *d, size_t i) HIDDEN_LIB;
/* The function a lazy slot of md will be bound to, or 0. */
uintptr_t ftrt_lib_resolve(const struct ftrt_mod *md, const char *name, const char *version) HIDDEN_LIB;
/* Whether relocation r of d fills a library-call slot (its symbol into
 * *sym); how many of r[0, n) do. */
int ftrt_lib_slot_of(const struct ftrt_dyn *d, const ElfW(Rela) *r, const ElfW(Sym) **sym) HIDDEN_LIB;
size_t ftrt_lib_count_slots(const struct ftrt_dyn *d, const ElfW(Rela) *r, size_t n) HIDDEN_LIB;

#endif
