/*
 * Arguments and return values in the trace (FTRACE_ARGS, FTRACE_RETVAL):
 *
 *   FTRACE_ARGS='parse@arg1,arg2/s;fmt*@fparg1,arg2/x'
 *   FTRACE_RETVAL='parse;name_of/s;ratio/f'
 *
 * Each entry of FTRACE_ARGS (separated by ';') is a glob of functions,
 * '@', and the items to record: argN (the Nth integer or pointer
 * argument, from 1) with a format, /d (signed, the default), /x (hex),
 * /p (a pointer), /s (a C string), /c (a char); or fpargN (the Nth
 * floating-point argument). Each entry of FTRACE_RETVAL is a glob with
 * the return value's format (the same, /f a double). A function takes
 * the first entry whose glob chooses it.
 *
 * The capture is a graph user of the runtime's own (fgraph.c): its
 * entryfunc runs after the tracer recorded the call's CALL or ENTRY, and
 * puts an EXT_ARGS record right before it (abi.h); its retfunc runs
 * before the tracer records the EXIT, and writes an EXT_RETVAL record.
 * Both only when the record they go with is this call's, so a reader
 * pairs them by position. Strings are read with
 * process_vm_readv, which fails on a bad pointer rather than faulting
 * (or, where it is refused, as under qemu-user, through a pipe that the
 * kernel reads them into); a bad one is recorded as unreadable, with
 * its pointer. Return values need function_graph.
 *
 * Started when the program's initialisers begin (lifetime.c), when a
 * trace is open with the function or function_graph tracer. Calls
 * fgraph.c, ops.c and the live index (liveindex.c: names by site).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fgraph.h"
#include "ftrace.h"
#include "grace.h"
#include "graph.h"
#include "live.h"
#include "liveindex.h"
#include "ops.h"
#include "record.h"
#include "tracer.h"

#define SPECS 32

struct item {
	unsigned char type; /* ARG_* */
	unsigned char fp;   /* a floating-point argument */
	unsigned char n;    /* its index, from 0 */
};
struct spec {
	char *glob;
	int nargs;
	struct item arg[ARG_MAX];
	int ret;            /* 0: no return value; else its ARG_* */
};
static struct spec specs[SPECS];
static int nspecs;

/* Each indexed module's sites' specs (index + 1; 0: none), by site as
 * live_mod's: made at the start and when a module is added. */
struct table {
	const struct ftrt_mod *md[FTRT_MOD_MAX];
	const uintptr_t *site[FTRT_MOD_MAX];
	size_t n[FTRT_MOD_MAX];
	unsigned char *spec[FTRT_MOD_MAX];
	size_t bytes;
};
static struct table *table; /* atomic */
static struct fgraph_ops user;

/* An item's format: d x p s c (f: a double, FTRACE_RETVAL's). */
static int format(char c, int fp)
{
	if (fp)
		return c == 0 || c == 'f' ? ARG_DOUBLE : 0;
	switch (c) {
	case 0:
	case 'd':
		return ARG_INT;
	case 'x':
	case 'u':
		return ARG_UINT;
	case 'p':
		return ARG_PTR;
	case 's':
		return ARG_STRING;
	case 'c':
		return ARG_CHAR;
	case 'f':
		return ARG_DOUBLE;
	}
	return 0;
}

/* One item, "argN[/f]" or "fpargN": 0, or -1 when it is none. */
static int parse_item(const char *p, const char *end, struct item *it)
{
	int fp = 0;
	if (end - p > 5 && strncmp(p, "fparg", 5) == 0)
		fp = 1, p += 5;
	else if (end - p > 3 && strncmp(p, "arg", 3) == 0)
		p += 3;
	else
		return -1;
	int n = 0;
	while (p < end && *p >= '0' && *p <= '9')
		n = n * 10 + (*p++ - '0');
	char f = 0;
	if (p < end && *p == '/') {
		if (end - p != 2)
			return -1;
		f = p[1];
		p += 2;
	}
	if (p != end || n < 1 || n > 64 || !(it->type = (unsigned char)format(f, fp)))
		return -1;
	it->fp = (unsigned char)fp;
	it->n = (unsigned char)(n - 1);
	return 0;
}

/* The spec of glob g (len bytes), made if new. */
static struct spec *spec_for(const char *g, size_t len)
{
	for (int i = 0; i < nspecs; i++)
		if (strlen(specs[i].glob) == len && strncmp(specs[i].glob, g, len) == 0)
			return &specs[i];
	if (nspecs == SPECS || len == 0)
		return NULL;
	struct spec *s = &specs[nspecs];
	if (!(s->glob = strndup(g, len)))
		return NULL;
	nspecs++;
	return s;
}

static void warn(const char *what, const char *value)
{
	static const char pre[] = "ftrt: ";
	sys(SYS_write, 2, (long)pre, sizeof pre - 1, 0, 0, 0);
	sys(SYS_write, 2, (long)what, (long)strlen(what), 0, 0, 0);
	sys(SYS_write, 2, (long)value, (long)strlen(value), 0, 0, 0);
	sys(SYS_write, 2, (long)"\n", 1, 0, 0, 0);
}

/* FTRACE_ARGS and FTRACE_RETVAL into specs; an entry that says nothing
 * sensible is skipped, with a warning. */
static void parse(const char *args, const char *ret)
{
	for (const char *p = args; p && *p;) {
		const char *end = strchr(p, ';');
		if (!end)
			end = p + strlen(p);
		const char *at = memchr(p, '@', (size_t)(end - p));
		struct spec *s = at ? spec_for(p, (size_t)(at - p)) : NULL;
		int ok = s != NULL;
		for (const char *q = at ? at + 1 : end; ok && q < end;) {
			const char *c = memchr(q, ',', (size_t)(end - q));
			if (!c)
				c = end;
			ok = s->nargs < ARG_MAX && parse_item(q, c, &s->arg[s->nargs]) == 0;
			if (ok)
				s->nargs++;
			q = c < end ? c + 1 : end;
		}
		if (!ok)
			warn("FTRACE_ARGS: an entry is not glob@argN[/d|x|p|s|c],fpargN,...: ", p);
		p = *end ? end + 1 : end;
	}
	for (const char *p = ret; p && *p;) {
		const char *end = strchr(p, ';');
		if (!end)
			end = p + strlen(p);
		const char *slash = memchr(p, '/', (size_t)(end - p));
		struct spec *s = spec_for(p, (size_t)((slash ? slash : end) - p));
		int type = slash ? (end - slash == 2 ? format(slash[1], 0) : 0) : ARG_INT;
		if (!s || !type)
			warn("FTRACE_RETVAL: an entry is not glob[/d|x|p|s|c|f]: ", p);
		else
			s->ret = type;
		p = *end ? end + 1 : end;
	}
}

/* The spec of the site ip, or NULL. Lock-free: the table and the
 * module's sites stay while the call runs (a grace walk, ops.c). */
static const struct spec *spec_at(uintptr_t ip)
{
	const struct table *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
	for (int o = 0; t && o < FTRT_MOD_MAX; o++) {
		size_t n = t->n[o];
		if (!n || ip < t->site[o][0] || ip > t->site[o][n - 1])
			continue;
		size_t i = ftrt_lower_bound(t->site[o], n, ip);
		if (i < n && t->site[o][i] == ip && t->spec[o][i])
			return &specs[t->spec[o][i] - 1];
		return NULL;
	}
	return NULL;
}

/* A new table over every indexed module; with the registry's lock. */
static struct table *build(void)
{
	size_t sites = 0;
	for (int o = 0; o < FTRT_MOD_MAX; o++)
		if (ftrt_live_mods[o].md && ftrt_live_mods[o].md->live)
			sites += ftrt_live_mods[o].n;
	size_t bytes = sizeof(struct table) + sites;
	struct table *t = live_zalloc(bytes);
	if (!t)
		return NULL;
	t->bytes = bytes;
	unsigned char *m = (unsigned char *)(t + 1);
	for (int o = 0; o < FTRT_MOD_MAX; o++) {
		const struct live_mod *l = &ftrt_live_mods[o];
		if (!l->md || !l->md->live)
			continue;
		t->md[o] = l->md, t->site[o] = l->site, t->n[o] = l->n, t->spec[o] = m;
		for (size_t i = 0; i < l->n; i++)
			for (int k = 0; l->name[i] != NONAME && k < nspecs; k++)
				if (fnmatch(specs[k].glob, l->names + l->name[i], 0) == 0) {
					m[i] = (unsigned char)(k + 1);
					break;
				}
		m += l->n;
	}
	return t;
}

/* A string at p into out (at most ARG_STRING_MAX bytes, its NUL not
 * kept): its length, or -1 when p cannot be read. */
static int pipefd[2] = { -1, -1 };
static int pipe_busy;

static long read_mem(void *dst, uintptr_t src, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)src, len };
	long n = sys(SYS_process_vm_readv, sys(SYS_getpid, 0, 0, 0, 0, 0, 0), (long)&l, 1, (long)&r, 1, 0);
	if (n != -ENOSYS && n != -EPERM)
		return n;
	/* No process_vm_readv here: the kernel copies the bytes into a pipe
	 * (EFAULT for a bad address) and back, one reader at a time. */
	if (pipefd[0] < 0 || __atomic_exchange_n(&pipe_busy, 1, __ATOMIC_ACQUIRE))
		return -EBUSY;
	n = sys(SYS_write, pipefd[1], (long)src, (long)len, 0, 0, 0);
	if (n > 0)
		n = sys(SYS_read, pipefd[0], (long)dst, n, 0, 0, 0);
	__atomic_store_n(&pipe_busy, 0, __ATOMIC_RELEASE);
	return n;
}

static int read_string(uintptr_t p, char *out, int *truncated)
{
	/* In pieces that end at a page's end: a string near the end of a
	 * readable page, before an unreadable one, is read whole. */
	int len = 0;
	*truncated = 0;
	while (len <= ARG_STRING_MAX) {
		uintptr_t at = p + (uintptr_t)len;
		size_t want = 4096 - (at & 4095);
		if (want > (size_t)(ARG_STRING_MAX + 1 - len))
			want = (size_t)(ARG_STRING_MAX + 1 - len);
		char buf[ARG_STRING_MAX + 1];
		long n = read_mem(buf, at, want);
		if (n <= 0)
			return len ? len : -1;
		for (long i = 0; i < n; i++) {
			if (!buf[i])
				return len;
			if (len == ARG_STRING_MAX) {
				*truncated = 1;
				return len;
			}
			out[len++] = buf[i];
		}
	}
	*truncated = 1;
	return ARG_STRING_MAX;
}

/* Add an item of type with value v (a string: the pointer) to w at *k,
 * which it moves past it. */
static void put_item(uint64_t *w, uint32_t *k, int type, uint64_t v)
{
	if (type != ARG_STRING) {
		w[(*k)++] = v;
		return;
	}
	char s[ARG_STRING_MAX + 1];
	int trunc, len = read_string((uintptr_t)v, s, &trunc);
	if (len < 0) {
		w[(*k)++] = ARG_UNREADABLE;
		w[(*k)++] = v;
		return;
	}
	w[(*k)++] = (uint64_t)len | (trunc ? ARG_TRUNCATED : 0);
	uint32_t words = ((uint32_t)len + 7) / 8;
	memset(&w[*k], 0, words * 8);
	memcpy(&w[*k], s, (size_t)len);
	*k += words;
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
	const struct spec *s = spec_at(e->func);
	struct tbuf *b = ftrt_fgraph_entering();
	if (!s || !b || paused())
		return 0;
	long p = s->nargs ? last_record(b, e->func) : -1;
	if (p >= 0) {
		uint64_t w[ARG_MAX * (2 + ARG_STRING_MAX / 8)], types = (uint64_t)s->nargs;
		uint32_t k = 0;
		for (int i = 0; i < s->nargs; i++) {
			const struct item *it = &s->arg[i];
			uint64_t v = it->fp ? ftrace_regs_get_fp_argument_bits(fregs, it->n) : ftrace_regs_get_argument(fregs, it->n);
			types |= (uint64_t)it->type << (ARG_TYPE_BITS * (i + 1));
			put_item(w, &k, it->type, v);
		}
		put_args(b, (uint32_t)p, e->func, types, w, k);
	}
	return s->ret && ftrt_mode == FTRT_GRAPH;
}

static void retfunc(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)g;
	const struct spec *s = spec_at(r->func);
	struct tbuf *b = ftrt_fgraph_returning();
	if (!s || !s->ret || !b || paused())
		return; /* no EXIT follows: nothing to pair with */
	uint64_t w[2 + ARG_STRING_MAX / 8];
	uint32_t k = 0;
	uint64_t v = s->ret == ARG_DOUBLE ? ftrace_regs_get_fp_argument_bits(fregs, 0) : ftrace_regs_get_return_value(fregs);
	put_item(w, &k, s->ret, v);
	put_retval(b, r->func, 1 | (uint64_t)s->ret << ARG_TYPE_BITS, w, k);
}

static void after_fork(void)
{
	if (pipefd[0] >= 0) {
		sys(SYS_close, pipefd[0], 0, 0, 0, 0, 0);
		sys(SYS_close, pipefd[1], 0, 0, 0, 0, 0);
		pipefd[0] = pipefd[1] = -1;
		if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0)
			pipefd[0] = pipefd[1] = -1;
	}
	pipe_busy = 0;
}

/* Start capturing, when asked (lifetime.c). */
void ftrt_capture_start(void)
{
	const char *args = ftrt_env(ENV_ARGS), *ret = ftrt_env(ENV_RETVAL);
	if ((!args || !*args) && (!ret || !*ret))
		return;
	if (!ftrt_tracing() || (ftrt_mode != FTRT_FUNCTION && ftrt_mode != FTRT_GRAPH)) {
		warn("FTRACE_ARGS, FTRACE_RETVAL: need the function or function_graph tracer", "");
		return;
	}
	parse(args, ret);
	if (!nspecs)
		return;
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0)
		pipefd[0] = pipefd[1] = -1;
	pthread_atfork(NULL, NULL, after_fork);
	/* The filter: every spec's glob. */
	size_t len = 0;
	for (int i = 0; i < nspecs; i++)
		len += strlen(specs[i].glob) + 1;
	char *filter = malloc(len + 1);
	if (!filter)
		return;
	filter[0] = 0;
	for (int i = 0; i < nspecs; i++) {
		if (i)
			strcat(filter, ",");
		strcat(filter, specs[i].glob);
	}
	user.entryfunc = entryfunc;
	user.retfunc = retfunc;
	int err = ftrt_ops_filter(&user.ops, filter, 1, 0);
	free(filter);
	if (err >= 0) {
		ftrt_modules_lock();
		__atomic_store_n(&table, build(), __ATOMIC_RELEASE);
		ftrt_modules_release();
		err = ftrt_fgraph_register(&user);
	}
	if (err < 0)
		warn("FTRACE_ARGS, FTRACE_RETVAL: ", err == -ENOTSUP ? ftrt_fgraph_why() : ftrt_ops_why());
}

/* A module was added (ops.c, with the registry's lock): its sites'
 * specs. */
void ftrt_capture_added(void)
{
	struct table *old = table;
	if (!old)
		return;
	__atomic_store_n(&table, build(), __ATOMIC_RELEASE);
	ftrt_grace_wait();
	munmap(old, old->bytes);
}
