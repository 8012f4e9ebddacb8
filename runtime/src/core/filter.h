/*
 * Glob lists (filter.c): FTRACE_FILTER's, the subtree filters', the live
 * API's and the ops' lists of globs, matched against function names
 * (C++ names demangled where a glob asks).
 */
#ifndef FTRT_FILTER_H
#define FTRT_FILTER_H

#include <stddef.h>
#include <stdint.h>

/* Glob lists (filter.c). */
const char *ftrt_glob_next(const char *p, char glob[static 256]) __attribute__((visibility("hidden")));
int ftrt_filter_match(const char *list, const char *name, const char *dem, uint64_t *hits) __attribute__((visibility("hidden")));
int ftrt_cxx_globs(const char *list) __attribute__((visibility("hidden")));
/* A glob list compiled (filter.c): to match many names at the cost of a
 * strcmp each where a glob is a plain name or a prefix. */
#define FTRT_GLOBS_MAX 64
enum { GLOB_EXACT, GLOB_PREFIX, GLOB_GENERAL };
struct ftrt_glob {
	char pat[256];
	size_t len;
	int neg, kind;
};
struct ftrt_globs {
	int n, plain; /* globs; those not `!` */
	struct ftrt_glob e[FTRT_GLOBS_MAX];
};
int ftrt_globs_compile(const char *list, struct ftrt_globs *g) __attribute__((visibility("hidden")));
int ftrt_globs_match(const struct ftrt_globs *g, const char *name, const char *dem) __attribute__((visibility("hidden")));

#endif
