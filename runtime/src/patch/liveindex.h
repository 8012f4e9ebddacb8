/*
 * The live part's index of every module's sites (liveindex.c), which
 * live.c plans its batches over.
 */
#ifndef FTRT_LIVEINDEX_H
#define FTRT_LIVEINDEX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "core/ftrt.h"

/* One module's sites, by address and by name. */
struct live_mod {
	const struct ftrt_mod *md; /* its record; NULL: not indexed */
	size_t n;                  /* sites */
	uintptr_t *site;           /* sorted, unique */
	unsigned char *kind;       /* WANT_ENTRY, WANT_MCOUNT; WANT_NOP: in no named function */
	unsigned char *traced;     /* the tracer wants the site (ops may want it besides, ops.c) */
	unsigned char *orig_len;   /* the site disabled when indexed: its bytes' length then (else 0) */
	unsigned char (*orig)[8];  /* and those bytes: what an end of ftpatch record -p puts back (live.c) */
	uint32_t *name;            /* offset of the site's function's name in names; NONAME: none */
	uint32_t *byname;          /* the named sites' indices, by name */
	size_t nnamed;
	char *names;
	void *mem;
	size_t mem_size;
};
#define NONAME UINT32_MAX
/* Each module's, by its owner number - 1. */
extern struct live_mod ftrt_live_mods[FTRT_MOD_MAX] __attribute__((visibility("hidden")));

/* Index module md's sites into l: 0, or -errno (-ENOENT: no table). */
int ftrt_live_index(const struct ftrt_mod *md, struct live_mod *l) __attribute__((visibility("hidden")));
/* Index every loaded module not indexed yet; with the registry held. */
int ftrt_live_index_all(void) __attribute__((visibility("hidden")));

/* The name of the function whose code holds addr, as l's index keeps
 * it (valid while l is); NULL when no site of l is in that function.
 * Reads the module's symbol table. */
const char *ftrt_live_name_at(const struct live_mod *l, uintptr_t addr) __attribute__((visibility("hidden")));

/* Zeroed memory of the live part's own (mmap): never the program's
 * allocator, which a thread may hold. */
static inline void *live_zalloc(size_t bytes)
{
	void *m = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

#endif
