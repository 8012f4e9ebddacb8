/*
 * What the library-call pass (libcall.c) reads of a module as the loader
 * left it (libdyn.c): its dynamic section's relocation tables, symbols,
 * strings and versions, its RELRO range, and a lazy slot's function,
 * looked up as the loader would bind it.
 *
 * Start-up code (the module's pass): libc is used freely.
 */
#ifndef FTRT_PATCH_LIBDYN_H
#define FTRT_PATCH_LIBDYN_H

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

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

/* md's facts into *d: 0, or -1 when its dynamic section is not found. */
int ftrt_dyn_read(const struct ftrt_mod *md, struct ftrt_dyn *d) __attribute__((visibility("hidden")));
/* The version the module asks of symbol i (its verneed's name), or
 * NULL: none, or the base. */
const char *ftrt_dyn_version(const struct ftrt_dyn *d, size_t i) __attribute__((visibility("hidden")));
/* The function a lazy slot of md will be bound to: as the loader looks
 * it up, the global scope first, then the module's own. 0: not found. */
uintptr_t ftrt_dyn_resolve(const struct ftrt_mod *md, const char *name, const char *version) __attribute__((visibility("hidden")));

#endif
