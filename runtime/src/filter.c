/*
 * Lists of globs, comma-separated (FTRACE_FILTER, FTRACE_GRAPH_FUNCS,
 * FTRACE_GRAPH_NOTRACE): the next glob of a list, and whether a list
 * chooses a function by its name or, C++, its demangled name. Calls only
 * the C library's fnmatch.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <string.h>

#include "pass.h"

/*
 * A list of globs, comma-separated (FTRACE_FILTER, FTRACE_GRAPH_FUNCS,
 * FTRACE_GRAPH_NOTRACE): the one at p into glob, NUL-terminated (empty
 * when it is, or is too long to match anything: skipped); returns where
 * the next begins, or NULL past the last.
 */
const char *ftrt_glob_next(const char *p, char glob[static 256])
{
	if (!*p)
		return NULL;
	const char *end = strchr(p, ',');
	size_t len = end ? (size_t)(end - p) : strlen(p);
	glob[0] = 0;
	if (len < 256) {
		memcpy(glob, p, len);
		glob[len] = 0;
	}
	return p + len + (end ? 1 : 0);
}

/*
 * Whether a list of globs (glob_next) chooses a function: it matches one
 * of the plain globs (or there are none) and none of the `!glob` ones. A
 * C++ function matches by its symbol or by its demangled name (dem, when
 * given), as ftpatch report prints it. An empty list chooses every
 * function. hits, when given, gets bit k set for each of the first 64
 * globs, k counting from 0, that is plain and matches a function the
 * list chooses.
 */
int ftrt_filter_match(const char *list, const char *name, const char *dem, uint64_t *hits)
{
	if (!list || !*list)
		return 1;
	int any_plain = 0, plain_hit = 0, excluded = 0, k = 0;
	uint64_t hit_globs = 0;
	char glob[256];
	for (const char *p = list; (p = ftrt_glob_next(p, glob)) != NULL; k++) {
		if (!glob[0])
			continue;
		const char *g = glob[0] == '!' ? glob + 1 : glob;
		int hit = fnmatch(g, name, 0) == 0 || (dem && fnmatch(g, dem, 0) == 0);
		if (glob[0] == '!') {
			excluded |= hit;
		} else {
			any_plain = 1;
			plain_hit |= hit;
			if (hit && k < 64)
				hit_globs |= 1ull << k;
		}
	}
	if (excluded)
		return 0;
	if (hits)
		*hits |= hit_globs;
	return !any_plain || plain_hit;
}

/* Whether a list of globs has C++ punctuation (`::`, `(`, `<`, `~`, a
 * space), for a demangled name to match where its symbol does not. */
int ftrt_cxx_globs(const char *list)
{
	return list && strpbrk(list, ":(<~ ") != NULL;
}
