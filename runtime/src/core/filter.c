/*
 * Lists of globs, comma-separated (FTRACE_FILTER, FTRACE_GRAPH_FUNCS,
 * FTRACE_GRAPH_NOTRACE): the next glob of a list, and whether a list
 * chooses a function by its name or, C++, its demangled name. Calls only
 * the C library's fnmatch.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <string.h>

#include "filter.h"

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

/* Whether glob g (of len bytes) has fnmatch's special characters. */
static int special(const char *g, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (g[i] == '*' || g[i] == '?' || g[i] == '[' || g[i] == '\\')
			return 1;
	return 0;
}

/*
 * A list of globs compiled once, to match many names (the live API's
 * walk over every site): each glob kept as exact (no special
 * character), a prefix (`abc*`, none before), or general (fnmatch).
 * -1 when the list has more globs than fit: match it with
 * ftrt_filter_match.
 */
int ftrt_globs_compile(const char *list, struct ftrt_globs *g)
{
	g->n = 0;
	g->plain = 0;
	char glob[256];
	for (const char *p = list ? list : ""; (p = ftrt_glob_next(p, glob)) != NULL;) {
		if (!glob[0])
			continue;
		if (g->n == FTRT_GLOBS_MAX)
			return -1;
		struct ftrt_glob *e = &g->e[g->n++];
		e->neg = glob[0] == '!';
		const char *s = glob + e->neg;
		size_t len = strlen(s);
		memcpy(e->pat, s, len + 1);
		e->len = len;
		e->kind = !special(s, len) ? GLOB_EXACT : len > 0 && s[len - 1] == '*' && !special(s, len - 1) ? GLOB_PREFIX : GLOB_GENERAL;
		g->plain += !e->neg;
	}
	return 0;
}

static int glob_hit(const struct ftrt_glob *e, const char *name)
{
	switch (e->kind) {
	case GLOB_EXACT:
		return strcmp(e->pat, name) == 0;
	case GLOB_PREFIX:
		return strncmp(e->pat, name, e->len - 1) == 0;
	}
	return fnmatch(e->pat, name, 0) == 0;
}

/* ftrt_filter_match's verdict, with the list compiled. */
int ftrt_globs_match(const struct ftrt_globs *g, const char *name, const char *dem)
{
	int plain_hit = 0;
	for (int i = 0; i < g->n; i++) {
		const struct ftrt_glob *e = &g->e[i];
		if (e->neg ? 0 : plain_hit)
			continue; /* decided: only an exclusion changes it */
		int hit = glob_hit(e, name) || (dem && glob_hit(e, dem));
		if (hit && e->neg)
			return 0;
		plain_hit |= hit;
	}
	return !g->plain || plain_hit;
}
