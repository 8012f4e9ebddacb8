/*
 * Arguments and return values in the trace (FTRACE_ARGS, FTRACE_RETVAL):
 *
 *   FTRACE_ARGS='parse@arg1/i32,arg2/s;fmt*@fparg1,arg2/x'
 *   FTRACE_RETVAL='parse/i32;name_of/s;ratio/f'
 *
 * The grammar is argspec.h's (package ftpatch/argspec's comment gives it
 * whole): each entry of FTRACE_ARGS is a glob of functions, '@', and the
 * items to record: argN (the Nth integer or pointer argument, from 1: a
 * register, then the stack's words), fpargN (the Nth floating-point
 * register), stack+OFF (the stack argument at byte OFF), each with a
 * format (d i u x with their bits, p s c b, e:ENUM, f32 f64 f80 f128, a
 * struct's {...}), *argN/{...} and *stack+OFF/{...} (the struct a
 * pointer points to), argN+fpargM/{...} (x86-64's struct in both kinds
 * of registers), or "?" (a value not read); each entry of FTRACE_RETVAL
 * a glob and the return value's format. A function's arguments come from the first FTRACE_ARGS entry
 * whose glob chooses it, its return value from the first FTRACE_RETVAL
 * entry; an entry the grammar refuses is skipped, with a warning
 * (ftpatch record refuses it before the program runs).
 *
 * A module's own (FTRACE_ARGS_SOCKET): ftpatch record --auto-args
 * serves a unix socket that answers, for a module's path and build-id,
 * its functions' FTRACE_ARGS and FTRACE_RETVAL, taken from its DWARF.
 * The runtime asks for every module with sites: the program and those
 * loaded with it when capturing starts, and each module loaded later
 * when it registers, before the registry's lock is taken and before its
 * sites are chosen (ftrt_capture_adding); the answer applies to that
 * module's functions only, after the environment's entries. A socket
 * that is gone, refuses, or does not answer in time (argask.c) is
 * warned about once and the program goes on without; a secure-execution
 * process reads no FTRACE* variable, so never asks.
 *
 * What each item reads of a call and how it is written in the record
 * is argread.c's.
 *
 * The capture is a graph user of the runtime's own (fgraph.c): its
 * entryfunc runs after the tracer recorded the call's CALL or ENTRY, and
 * puts an EXT_ARGS record right before it (abi.h); its retfunc runs
 * before the tracer records the EXIT, and writes an EXT_RETVAL record.
 * Both only when the record they go with is this call's, so a reader
 * pairs them by position. Return values need function_graph.
 *
 * Which sites the user hooks is the table's to say (ftrt_ops_choose):
 * per module and site, its arguments' entry and its return value's,
 * made at the start and when a module is added, sized then (mmap), read
 * without a lock. Exact names are found by binary search, so a module's
 * thousands of entries cost a lookup per site, not a glob match each.
 *
 * Library calls (tracers/libcall.c): a redirected GOT slot's calls are
 * recorded under the slot's address; FTRACE_ARGS and FTRACE_RETVAL's
 * entries choose them by the function's name, then FTRACE_LIBARGS and
 * FTRACE_LIBRETVAL's, which apply to library calls alone (ftpatch
 * record --auto-args's prototype table of C library functions). The
 * table keeps the chosen slots sorted by address, and sets each one's
 * capture flag, so the calls of the others cost what they did: the
 * entry of one chosen hands it here (ftrt_capture_libcall) with the
 * registers ftrace_libcall saved, as an ops caller hands a site's call.
 * A slot whose return is never hooked (patch/libcall.c's plain calls)
 * gets its arguments only.
 *
 * Started when the program's initialisers begin (lifetime.c), when a
 * trace is open with the function or function_graph tracer. Calls
 * fgraph.c, ops.c and the live index (liveindex.c: names by site).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "argread.h"
#include "argspec.h"
#include "core/grace.h"
#include "core/say.h"
#include "fgraph.h"
#include "ftrace.h"
#include "graph.h"
#include "patch/libcall.h"
#include "patch/live.h"
#include "patch/liveindex.h"
#include "patch/ops.h"
#include "record/encode.h"
#include "record/tracer.h"

/* The entries of one text (FTRACE_ARGS or FTRACE_RETVAL, the
 * environment's or a module's), in one mapping: the text, copied, which
 * the entries' globs (each ended with a NUL) and enum names point into;
 * the entries in order; those of exact names (no fnmatch special
 * character), sorted by name; the others (globs), in order. */
struct specs {
	struct arg_entry *e;
	uint32_t *exact, *glob;
	size_t n, nexact, nglob;
	size_t bytes;
};

static struct specs *env_args, *env_ret;                           /* the environment's */
static struct specs *lib_args, *lib_ret;                           /* FTRACE_LIBARGS's, FTRACE_LIBRETVAL's: library calls' */
static struct specs *mod_args[FTRT_MOD_MAX], *mod_ret[FTRT_MOD_MAX]; /* each module's, by owner - 1 (the registry's lock) */

/* A library-call slot's entries (NULL: none). */
struct libentry {
	uintptr_t ip;
	const struct arg_entry *args, *ret;
};

/* Each indexed module's sites' entries, by site as live_mod's (NULL:
 * none): made at the start and when a module is added. */
struct table {
	const struct ftrt_mod *md[FTRT_MOD_MAX];
	const uintptr_t *site[FTRT_MOD_MAX];
	size_t n[FTRT_MOD_MAX];
	const struct arg_entry **args[FTRT_MOD_MAX], **ret[FTRT_MOD_MAX];
	size_t nlib;
	struct libentry *lib; /* the library-call slots with an entry, by address */
	size_t bytes;
};
static struct table *table; /* atomic */
static struct fgraph_ops user;
static int started;

/* An entry the grammar refuses, the kth of its text: its text (escaped,
 * cut), why, and whose it is (a module's path: FTRACE_ARGS_SOCKET's
 * answer about it; FTRACE_LIBARGS or FTRACE_LIBRETVAL; NULL: the
 * environment's FTRACE_ARGS or FTRACE_RETVAL). */
static void refused(int ret, const char *whose, size_t k, const char *p, const char *end, const char *why)
{
	struct say s;
	int lib = whose && (strcmp(whose, ENV_LIBARGS) == 0 || strcmp(whose, ENV_LIBRETVAL) == 0);
	ftrt_say_begin(&s);
	ftrt_say_text(&s, lib ? whose : ret ? "FTRACE_RETVAL" : "FTRACE_ARGS");
	ftrt_say_text(&s, " entry ");
	ftrt_say_num(&s, k);
	if (whose && !lib) {
		ftrt_say_text(&s, " of FTRACE_ARGS_SOCKET's answer about ");
		ftrt_say_str(&s, whose);
	}
	ftrt_say_text(&s, " skipped (");
	ftrt_say_text(&s, why);
	ftrt_say_text(&s, "): ");
	ftrt_say_value(&s, p, (size_t)(end - p));
	ftrt_say_end(&s);
}

static int special(const char *g)
{
	return strpbrk(g, "*?[\\") != NULL;
}

static const struct specs *sorting;
static int by_name(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, k = *(const uint32_t *)b;
	int c = strcmp(sorting->e[i].glob, sorting->e[k].glob);
	return c ? c : (i > k) - (i < k);
}

/* The entries of text [t, t + len) (ret: FTRACE_RETVAL's), or NULL
 * (none, or no memory); what says whose (a module's path, NULL: the
 * environment's), for the warnings of entries the grammar refuses (one
 * each, naming it, counted from 1 among the text's entries). */
static struct specs *specs_make(const char *t, size_t len, int ret, const char *what)
{
	size_t n = 1;
	for (size_t i = 0; i < len; i++)
		n += t[i] == ';';
	size_t bytes = sizeof(struct specs) + n * sizeof(struct arg_entry) + 2 * n * sizeof(uint32_t) + len + 1;
	struct specs *s = live_zalloc(bytes);
	if (!s)
		return NULL;
	s->bytes = bytes;
	s->e = (struct arg_entry *)(s + 1);
	s->exact = (uint32_t *)(s->e + n);
	s->glob = s->exact + n;
	char *text = (char *)(s->glob + n);
	memcpy(text, t, len);
	size_t k = 0;
	for (const char *p = text, *next; p; p = next) {
		const char *end, *why;
		next = ftrt_argspec_next(p, &end);
		k++;
		if (p == end)
			continue;
		struct arg_entry *e = &s->e[s->n];
		if ((why = ftrt_argspec_entry(p, end, ret, e)) != NULL) {
			refused(ret, what, k, p, end, why);
			continue;
		}
		((char *)e->glob)[e->glen] = 0; /* its '@', '/' or ';': read already */
		if (special(e->glob))
			s->glob[s->nglob++] = (uint32_t)s->n;
		else
			s->exact[s->nexact++] = (uint32_t)s->n;
		s->n++;
	}
	if (!s->n) {
		munmap(s, bytes);
		return NULL;
	}
	sorting = s;
	qsort(s->exact, s->nexact, sizeof *s->exact, by_name);
	return s;
}

static void specs_free(struct specs *s)
{
	if (s)
		munmap(s, s->bytes);
}

/* The first entry of s whose glob chooses name, or NULL. */
static const struct arg_entry *specs_find(const struct specs *s, const char *name)
{
	if (!s)
		return NULL;
	size_t lo = 0, hi = s->nexact, best = SIZE_MAX;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(s->e[s->exact[mid]].glob, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->nexact && strcmp(s->e[s->exact[lo]].glob, name) == 0)
		best = s->exact[lo];
	for (size_t i = 0; i < s->nglob && s->glob[i] < best; i++)
		if (fnmatch(s->e[s->glob[i]].glob, name, 0) == 0)
			return &s->e[s->glob[i]];
	return best == SIZE_MAX ? NULL : &s->e[best];
}

/* The entry of the library-call slot ip in t, or NULL. */
static const struct libentry *lib_at(const struct table *t, uintptr_t ip)
{
	size_t lo = 0, hi = t ? t->nlib : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->lib[mid].ip < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < (t ? t->nlib : 0) && t->lib[lo].ip == ip ? &t->lib[lo] : NULL;
}

/* The entries of the site ip, or 0. Lock-free: the table and the
 * module's sites stay while the call runs (a grace walk, ops.c). */
static int entries_at(uintptr_t ip, const struct arg_entry **args, const struct arg_entry **ret)
{
	const struct table *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
	const struct libentry *l = lib_at(t, ip);
	if (l) {
		*args = l->args, *ret = l->ret;
		return 1;
	}
	for (int o = 0; t && o < FTRT_MOD_MAX; o++) {
		size_t n = t->n[o];
		if (!n || ip < t->site[o][0] || ip > t->site[o][n - 1])
			continue;
		size_t i = ftrt_lower_bound(t->site[o], n, ip);
		if (i >= n || t->site[o][i] != ip)
			return 0;
		*args = t->args[o][i], *ret = t->ret[o][i];
		return *args || *ret;
	}
	return 0;
}

/* Whether the table chooses site i of module owner o + 1: the graph
 * user's filter (ops.c calls it with the registry's lock, when the
 * table in place is the one over the modules its view is made of). */
static int chosen(int o, size_t i)
{
	const struct table *t = table;
	return t && i < t->n[o] && (t->args[o][i] || t->ret[o][i]);
}

/* The entries of the library function name: FTRACE_ARGS's (or
 * FTRACE_RETVAL's, ret), else FTRACE_LIBARGS's (FTRACE_LIBRETVAL's). */
static const struct arg_entry *lib_find(const char *name, int ret)
{
	const struct arg_entry *e = specs_find(ret ? env_ret : env_args, name);
	return e ? e : specs_find(ret ? lib_ret : lib_args, name);
}

static int by_ip(const void *a, const void *b)
{
	uintptr_t x = ((const struct libentry *)a)->ip, y = ((const struct libentry *)b)->ip;
	return (x > y) - (x < y);
}

/* The first n library-call slots with an entry (their modules loaded),
 * into t->lib, sorted by address. */
static void build_lib(struct table *t, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct ftrt_libslot *s = ftrt_libslot(i);
		const char *name = ftrt_libslot_name(i);
		const struct arg_entry *a = name ? lib_find(name, 0) : NULL,
				       *r = name && !(ftrt_libslot_flags(s) & LIBSLOT_PLAIN) ? lib_find(name, 1) : NULL;
		if (a || r)
			t->lib[t->nlib++] = (struct libentry){ ftrt_libslot_ip(s), a, r };
	}
	qsort(t->lib, t->nlib, sizeof *t->lib, by_ip);
}

/* Each library-call slot's capture flag, as table t (in place) says;
 * with the registry's lock. */
static void flag_slots(const struct table *t)
{
	uint32_t n = ftrt_libslots_count();
	for (uint32_t i = 0; i < n; i++)
		ftrt_libslot_capture(i, ftrt_libslot_name(i) && lib_at(t, ftrt_libslot_ip(ftrt_libslot(i))));
}

/* A new table over every indexed module and library-call slot; with
 * the registry's lock. */
static struct table *build(void)
{
	size_t sites = 0;
	for (int o = 0; o < FTRT_MOD_MAX; o++)
		if (ftrt_live_mods[o].md && ftrt_live_mods[o].md->live)
			sites += ftrt_live_mods[o].n;
	uint32_t nlib = (lib_args || lib_ret || env_args || env_ret) ? ftrt_libslots_count() : 0;
	size_t bytes = sizeof(struct table) + 2 * sites * sizeof(struct arg_entry *) + nlib * sizeof(struct libentry);
	struct table *t = live_zalloc(bytes);
	if (!t)
		return NULL;
	t->bytes = bytes;
	const struct arg_entry **m = (const struct arg_entry **)(t + 1);
	t->lib = (struct libentry *)(m + 2 * sites);
	build_lib(t, nlib);
	for (int o = 0; o < FTRT_MOD_MAX; o++) {
		const struct live_mod *l = &ftrt_live_mods[o];
		if (!l->md || !l->md->live)
			continue;
		t->md[o] = l->md, t->site[o] = l->site, t->n[o] = l->n;
		t->args[o] = m, t->ret[o] = m + l->n;
		m += 2 * l->n;
		for (size_t i = 0; i < l->n; i++) {
			if (l->name[i] == NONAME)
				continue;
			const char *name = l->names + l->name[i];
			const struct arg_entry *a = specs_find(env_args, name), *r = specs_find(env_ret, name);
			t->args[o][i] = a ? a : specs_find(mod_args[o], name);
			t->ret[o][i] = r ? r : specs_find(mod_ret[o], name);
		}
	}
	return t;
}

/* A module's own entries, from FTRACE_ARGS_SOCKET (argask.c): into
 * *args and *ret (NULL: none). */
static void ask(const char *path, const char *build_id, struct specs **args, struct specs **ret)
{
	*args = *ret = NULL;
	size_t alen, rlen;
	char *a = ftrt_args_ask(path, build_id, &alen, &rlen);
	if (!a)
		return;
	*args = specs_make(a, alen, 0, path);
	*ret = specs_make(a + alen + 1, rlen, 1, path);
	free(a);
}

/* A module's answer, asked before its registration took the registry's
 * lock (ftrt_capture_adding), until ftrt_capture_added takes it. */
static struct {
	const struct ftrt_module *desc;
	struct specs *args, *ret;
} pending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

void ftrt_capture_adding(const struct ftrt_module *m)
{
	const char *sock = ftrt_env(ENV_ARGS_SOCKET);
	if (!__atomic_load_n(&started, __ATOMIC_ACQUIRE) || !sock || !*sock)
		return;
	char build_id[129];
	char *path = ftrt_module_identify((uintptr_t)m->targets[0], build_id);
	if (!path)
		return;
	struct specs *a, *r;
	ask(path, build_id, &a, &r);
	free(path);
	pthread_mutex_lock(&pending_lock);
	specs_free(pending.args);
	specs_free(pending.ret);
	pending.desc = m, pending.args = a, pending.ret = r;
	pthread_mutex_unlock(&pending_lock);
}

/* The EXT_RETVAL of site, items w[0, k) of the types in types: into b,
 * taken, right before the tracer writes the call's EXIT. */
static void put_retval(struct tbuf *b, uintptr_t site, uint64_t types, const uint64_t *w, uint32_t k)
{
	uint32_t n = room_for(b, 3 + k + REC_MAX_WORDS);
	b->words[n] = W_EXT(EXT_RETVAL, 2 + k);
	b->words[n + 1] = site;
	b->words[n + 2] = types;
	memcpy(&b->words[n + 3], w, k * sizeof *w);
	publish(b, n + 3 + k);
}

/* Where the last record in b starts, when it is the call or entry of
 * site ip (after any TIME); -1 when it is not. */
static long last_record(const struct tbuf *b, uintptr_t ip)
{
	uint32_t n = b->n;
	const uint64_t site = (1ull << REC_SITE_BITS) - 1;
	const uint64_t *w = b->words;
	/* The long call first: its site, at n - 2, would pass for a short
	 * call's first word. */
	if (n >= 3 && w[n - 3] >> REC_KIND_SHIFT == REC_EXT && EXT_SUB(w[n - 3]) == EXT_LONGCALL && w[n - 2] == ip)
		return n - 3;
	if (n >= 1 && w[n - 1] >> REC_KIND_SHIFT == REC_ENTRY && (w[n - 1] & site) == ip)
		return n - 1;
	if (n >= 2 && w[n - 2] >> REC_KIND_SHIFT == REC_EXT && EXT_SUB(w[n - 2]) == EXT_LONGENTRY && w[n - 1] == ip)
		return n - 2;
	if (n >= 2 && w[n - 2] >> REC_KIND_SHIFT == REC_CALL && w[n - 2] && (w[n - 2] & site) == ip)
		return n - 2;
	return -1;
}

/* The arguments go before the call's record, which the tracer has just
 * written: it is taken back, the EXT_ARGS written in its place, and it
 * after them (an EXT_ARGS has no time: the record's delta holds). When
 * they do not fit in the buffer, none are recorded. */
static void put_args(struct tbuf *b, uint32_t p, uintptr_t site, uint64_t types, const uint64_t *w, uint32_t k)
{
	uint32_t n = b->n, len = n - p;
	uint64_t rec[3];
	if (p + 3 + k + len > TBUF_WORDS)
		return;
	memcpy(rec, &b->words[p], len * sizeof *rec);
	publish(b, p);
	b->words[p] = W_EXT(EXT_ARGS, 2 + k);
	b->words[p + 1] = site;
	b->words[p + 2] = types;
	memcpy(&b->words[p + 3], w, k * sizeof *w);
	memcpy(&b->words[p + 3 + k], rec, len * sizeof *rec);
	publish(b, p + 3 + k + len);
}

static int entryfunc(struct ftrace_graph_ent *e, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)g;
	const struct arg_entry *args = NULL, *ret = NULL;
	struct tbuf *b = ftrt_fgraph_entering();
	if (!entries_at(e->func, &args, &ret) || !b || paused())
		return 0;
	long p = args ? last_record(b, e->func) : -1;
	if (p >= 0) {
		uint64_t w[ARG_MAX * ARG_ITEM_WORDS_MAX], types = (uint64_t)args->n;
		uint32_t k = 0;
		struct arg_call c = { fregs, e->func, 0, 0 };
		for (int i = 0; i < args->n; i++) {
			const struct arg_item *it = &args->it[i];
			unsigned type = it->type;
			if (it->reg && (it->fp || ftrt_arch_int_arg_known(fregs, it->n))) /* the common case: one register's word, as it is */
				w[k++] = ftrt_arg_word(it, it->fp ? ftrace_regs_get_fp_argument_bits(fregs, it->n) : ftrace_regs_get_argument(fregs, it->n));
			else
				type = ftrt_arg_put(w, &k, &c, it);
			types |= (uint64_t)type << (ARG_TYPE_BITS * (i + 1));
		}
		put_args(b, (uint32_t)p, e->func, types, w, k);
	}
	return ret && ftrt_mode == FTRT_GRAPH;
}

static void retfunc(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)g;
	const struct arg_entry *args = NULL, *ret = NULL;
	const unsigned char *fp = NULL;
	struct tbuf *b = ftrt_fgraph_returning(&fp);
	if (!entries_at(r->func, &args, &ret) || !ret || !b || paused())
		return; /* no EXIT follows: nothing to pair with */
	uint64_t w[ARG_ITEM_WORDS_MAX];
	uint32_t k = 0;
	unsigned type = ftrt_ret_put(w, &k, fregs, fp, &ret->it[0]);
	put_retval(b, r->func, 1 | (uint64_t)type << ARG_TYPE_BITS, w, k);
}

static void after_fork(void)
{
	pthread_mutex_init(&pending_lock, NULL);
}

/* The program's path, for the socket: /proc/self/exe's target. */
static const char *self_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return buf;
}

/* Start capturing, when asked (lifetime.c). */
void ftrt_capture_start(void)
{
	const char *args = ftrt_env(ENV_ARGS), *ret = ftrt_env(ENV_RETVAL), *sock = ftrt_env(ENV_ARGS_SOCKET);
	const char *largs = ftrt_env(ENV_LIBARGS), *lret = ftrt_env(ENV_LIBRETVAL);
	if ((!args || !*args) && (!ret || !*ret) && (!sock || !*sock) && (!largs || !*largs) && (!lret || !*lret))
		return;
	if (!ftrt_tracing() || (ftrt_mode != FTRT_FUNCTION && ftrt_mode != FTRT_GRAPH)) {
		ftrt_say("ftrt: FTRACE_ARGS, FTRACE_RETVAL: need the function or function_graph tracer\n");
		return;
	}
	if (args && *args)
		env_args = specs_make(args, strlen(args), 0, NULL);
	if (ret && *ret)
		env_ret = specs_make(ret, strlen(ret), 1, NULL);
	if (largs && *largs)
		lib_args = specs_make(largs, strlen(largs), 0, ENV_LIBARGS);
	if (lret && *lret)
		lib_ret = specs_make(lret, strlen(lret), 1, ENV_LIBRETVAL);
	/* The modules loaded so far ask here, those after when they
	 * register (ftrt_capture_adding). */
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	for (int i = 0; sock && *sock; i++) {
		const struct ftrt_mod *md = ftrt_module_at(i);
		if (!md)
			break;
		char exe[4096];
		if (md->live)
			ask(md->path ? md->path : self_path(exe, sizeof exe), md->build_id, &mod_args[i], &mod_ret[i]);
	}
	ftrt_argread_start();
	pthread_atfork(NULL, NULL, after_fork);
	user.entryfunc = entryfunc;
	user.retfunc = retfunc;
	int err = ftrt_ops_choose(&user.ops, chosen);
	if (err >= 0) {
		ftrt_modules_lock();
		__atomic_store_n(&table, build(), __ATOMIC_RELEASE);
		flag_slots(table);
		ftrt_modules_release();
		err = ftrt_fgraph_register(&user);
	}
	if (err < 0) {
		struct say s;
		ftrt_say_begin(&s);
		ftrt_say_text(&s, "FTRACE_ARGS, FTRACE_RETVAL: ");
		ftrt_say_text(&s, err == -ENOTSUP ? ftrt_fgraph_why() : ftrt_ops_why());
		ftrt_say_end(&s);
	}
}

/* A module was added (ops.c, with the registry's lock, before the ops'
 * view is made anew): its entries, the answer ftrt_capture_adding got,
 * and a new table with its sites'. */
void ftrt_capture_added(const struct ftrt_mod *md)
{
	struct table *old = table;
	if (!old)
		return;
	int o = md->owner - 1;
	struct specs *oa = mod_args[o], *or = mod_ret[o];
	mod_args[o] = mod_ret[o] = NULL;
	pthread_mutex_lock(&pending_lock);
	if (pending.desc == md->desc) {
		mod_args[o] = pending.args, mod_ret[o] = pending.ret;
		pending.desc = NULL, pending.args = pending.ret = NULL;
	}
	pthread_mutex_unlock(&pending_lock);
	__atomic_store_n(&table, build(), __ATOMIC_RELEASE);
	flag_slots(table);
	ftrt_grace_wait();
	munmap(old, old->bytes);
	specs_free(oa);
	specs_free(or);
}

void ftrt_capture_libcall(const struct ftrt_libslot *s, struct ftrace_regs *fregs)
{
	/* The graph user's entry, once registered: as the ops callers call
	 * it after the tracer, inside a grace walk (the table stays). */
	ftrace_func_t f = __atomic_load_n(&user.ops.func, __ATOMIC_ACQUIRE);
	if (!f)
		return;
	struct ftrt_grace *g = ftrt_grace_enter();
	f(ftrt_libslot_ip(s), 0, &user.ops, fregs);
	ftrt_grace_exit(g);
}
