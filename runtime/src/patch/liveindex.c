/*
 * The live part's index of every module's sites by function name
 * (live.c's, live.h says who does what): each module's table sorted,
 * each site's function name (from the module's symbol table, kept in a
 * pool of its own) and whether the site is at the function's entry or
 * after its prologue, and the named sites sorted by name, so that a
 * plain name is found by binary search. Built under the registry's lock
 * at the first live call (or a module's load, when calls came before);
 * read without it by the trap handler (ftrt_live_is_site).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/ftrt.h"
#include "live.h"
#include "liveindex.h"
#include "pass.h"
#include "record/tracer.h"

struct live_mod ftrt_live_mods[FTRT_MOD_MAX]; /* by owner - 1 */


static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b, void *arg)
{
	const struct live_mod *l = arg;
	return strcmp(l->names + l->name[*(const uint32_t *)a], l->names + l->name[*(const uint32_t *)b]);
}

static int pick_all(const char *name)
{
	(void)name;
	return PICK_TRACE;
}

/* Index module md's sites into l: 0, or -errno. */
int ftrt_live_index(const struct ftrt_mod *md, struct live_mod *l)
{
	const struct ftrt_module *mod = md->desc;
	size_t n = mod->start && mod->stop > mod->start ? (size_t)(mod->stop - mod->start) : 0;
	uintptr_t *s = live_zalloc(n * sizeof *s);
	unsigned char *kind = live_zalloc(n);
	const char **nm = live_zalloc(n * sizeof *nm);
	int err = -ENOMEM;
	if (!s || !kind || !nm)
		goto out;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (mod->start[i])
			s[m++] = mod->start[i];
	qsort(s, m, sizeof *s, cmp_addr);
	size_t k = 0;
	for (size_t i = 0; i < m; i++)
		if (k == 0 || s[k - 1] != s[i])
			s[k++] = s[i];
	m = k;
	err = -ENOENT;
	if (ftrt_symbols_open(md->path ? md->path : "/proc/self/exe") != 0)
		goto out;
	err = ftrt_symbols_mark_mod(md, s, m, kind, NULL, pick_all, nm) == 0 ? 0 : -ENOMEM;
	size_t pool = 0, named = 0;
	for (size_t i = 0; i < m && !err; i++)
		if (nm[i] && kind[i] != WANT_NOP)
			pool += strlen(nm[i]) + 1, named++;
	size_t bytes = m * (sizeof(uintptr_t) + 2 * sizeof(uint32_t) + 2 + 1 + 8) + pool;
	char *mem = err ? NULL : live_zalloc(bytes);
	if (!mem) {
		ftrt_symbols_close();
		err = err ? err : -ENOMEM;
		goto out;
	}
	l->mem = mem;
	l->mem_size = bytes;
	l->site = (uintptr_t *)mem;
	l->name = (uint32_t *)(l->site + m);
	l->byname = l->name + m;
	l->kind = (unsigned char *)(l->byname + m);
	l->traced = l->kind + m;
	l->orig_len = l->traced + m;
	l->orig = (unsigned char (*)[8])(l->orig_len + m);
	l->names = (char *)(l->orig + m);
	memcpy(l->site, s, m * sizeof *s);
	memcpy(l->kind, kind, m);
	/* What the tracer has now: every site enabled, as no ops has a
	 * module not indexed yet. */
	ftrt_module_use(mod);
	for (size_t i = 0; i < m; i++) {
		int len, st = ftrt_arch_live_state(s[i], &len);
		l->traced[i] = st == 1;
		/* As the process has it before any live change: a detach
		 * (ftpatch record -p's end) leaves it so again. */
		if (st == 0 && len > 0 && len <= (int)sizeof l->orig[i]) {
			l->orig_len[i] = (unsigned char)len;
			memcpy(l->orig[i], (const void *)s[i], (size_t)len);
		}
	}
	size_t off = 0, j = 0;
	for (size_t i = 0; i < m; i++) {
		l->name[i] = NONAME;
		if (!nm[i] || kind[i] == WANT_NOP)
			continue;
		size_t len = strlen(nm[i]) + 1;
		memcpy(l->names + off, nm[i], len);
		l->name[i] = (uint32_t)off;
		l->byname[j++] = (uint32_t)i;
		off += len;
	}
	ftrt_symbols_close();
	l->nnamed = j;
	qsort_r(l->byname, j, sizeof *l->byname, cmp_name, l);
	l->n = m;
	__atomic_store_n(&l->md, md, __ATOMIC_RELEASE);
out:
	if (s)
		munmap(s, n ? n * sizeof *s : 1);
	if (kind)
		munmap(kind, n ? n : 1);
	if (nm)
		munmap(nm, n ? n * sizeof *nm : 1);
	return err;
}

/* Index every loaded module not indexed yet; with the registry held. */
int ftrt_live_index_all(void)
{
	const struct ftrt_mod *md;
	for (int i = 0; (md = ftrt_module_at(i)) != NULL; i++) {
		struct live_mod *l = &ftrt_live_mods[md->owner - 1];
		if (!md->live || l->md == md)
			continue;
		int err = ftrt_live_index(md, l);
		if (err && err != -ENOENT)
			return err;
	}
	return 0;
}

const char *ftrt_live_name_at(const struct live_mod *l, uintptr_t addr)
{
	uintptr_t s[1] = { addr };
	unsigned char want[1] = { 0 };
	const char *nm[1] = { NULL };
	const char *r = NULL;
	if (!l->md || ftrt_symbols_open(l->md->path ? l->md->path : "/proc/self/exe") != 0)
		return NULL;
	if (ftrt_symbols_mark_mod(l->md, s, 1, want, NULL, pick_all, nm) == 0 && nm[0]) {
		size_t lo = 0, hi = l->nnamed;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (strcmp(l->names + l->name[l->byname[mid]], nm[0]) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < l->nnamed && strcmp(l->names + l->name[l->byname[lo]], nm[0]) == 0)
			r = l->names + l->name[l->byname[lo]];
	}
	ftrt_symbols_close();
	return r;
}

void ftrt_live_forget(int owner)
{
	struct live_mod *l = &ftrt_live_mods[owner - 1];
	if (!l->md)
		return;
	__atomic_store_n(&l->n, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&l->md, NULL, __ATOMIC_RELEASE);
	munmap(l->mem, l->mem_size);
	memset(l, 0, sizeof *l);
}

int ftrt_live_is_site(uintptr_t ip)
{
	for (int i = 0; i < FTRT_MOD_MAX; i++) {
		const struct live_mod *l = &ftrt_live_mods[i];
		size_t n = __atomic_load_n(&l->n, __ATOMIC_ACQUIRE);
		if (!n || ip < l->site[0] || ip > l->site[n - 1])
			continue;
		size_t lo = ftrt_lower_bound(l->site, n, ip);
		if (lo < n && l->site[lo] == ip)
			return 1;
	}
	return 0;
}

