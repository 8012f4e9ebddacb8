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
 * Values are recorded as they are in the registers: an integer of fewer
 * bits sign- or zero-extended from them (the rest of the register is
 * undefined), a char, bool or float from its low bits; an enum whole,
 * with its enum's name (the reader finds its enumerators in the trace's
 * enums file, which ftpatch record writes); a long double's 16 bytes; a
 * struct's bytes, gathered from its registers or memory, with its
 * layout's text (the reader shows the members by it).
 *
 * The stack's arguments are the caller's, above the function's entry
 * stack pointer (each architecture says where that is: fregs.c; at an
 * arm64 -pg site only when the prologue can be read, else the item is
 * not recorded, ?). Those on the page of the word just below the first
 * (the return address on x86-64, the ops caller's frame on arm64: both
 * mapped) are read as they are; any further, through the reader that
 * never faults (read_mem), so an item past a function's real arguments,
 * at the top of a stack with nothing mapped above it (a makecontext
 * stack's first function), costs a value, never the program. Memory
 * behind a pointer (a string, *argN's struct) is only ever read that
 * way. A long double returned on x86-64 is in the x87's st0, which the
 * return path saves with the vector registers (fgraph.c) before any of
 * the runtime's code runs.
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
 * Which sites the user hooks is the table's to say (ftrt_ops_choose):
 * per module and site, its arguments' entry and its return value's,
 * made at the start and when a module is added, sized then (mmap), read
 * without a lock. Exact names are found by binary search, so a module's
 * thousands of entries cost a lookup per site, not a glob match each.
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

#include "argspec.h"
#include "fgraph.h"
#include "ftrace.h"
#include "grace.h"
#include "graph.h"
#include "live.h"
#include "liveindex.h"
#include "ops.h"
#include "record.h"
#include "tracer.h"

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
static struct specs *mod_args[FTRT_MOD_MAX], *mod_ret[FTRT_MOD_MAX]; /* each module's, by owner - 1 (the registry's lock) */

/* Each indexed module's sites' entries, by site as live_mod's (NULL:
 * none): made at the start and when a module is added. */
struct table {
	const struct ftrt_mod *md[FTRT_MOD_MAX];
	const uintptr_t *site[FTRT_MOD_MAX];
	size_t n[FTRT_MOD_MAX];
	const struct arg_entry **args[FTRT_MOD_MAX], **ret[FTRT_MOD_MAX];
	size_t bytes;
};
static struct table *table; /* atomic */
static struct fgraph_ops user;
static int started;

static void warn(const char *what, const char *value)
{
	static const char pre[] = "ftrt: ";
	sys(SYS_write, 2, (long)pre, sizeof pre - 1, 0, 0, 0);
	sys(SYS_write, 2, (long)what, (long)strlen(what), 0, 0, 0);
	sys(SYS_write, 2, (long)value, (long)strlen(value), 0, 0, 0);
	sys(SYS_write, 2, (long)"\n", 1, 0, 0, 0);
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
 * (none, or no memory); what says whose, for the warnings of entries
 * the grammar refuses. */
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
	for (const char *p = text, *next; p; p = next) {
		const char *end;
		next = ftrt_argspec_next(p, &end);
		if (p == end)
			continue;
		struct arg_entry *e = &s->e[s->n];
		if (ftrt_argspec_entry(p, end, ret, e) != 0) {
			char *cut = (char *)end, c = *cut;
			*cut = 0;
			warn(ret ? "an FTRACE_RETVAL entry the grammar refuses, skipped: " : "an FTRACE_ARGS entry the grammar refuses, skipped: ", p);
			warn("  from ", what);
			*cut = c;
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

/* The entries of the site ip, or 0. Lock-free: the table and the
 * module's sites stay while the call runs (a grace walk, ops.c). */
static int entries_at(uintptr_t ip, const struct arg_entry **args, const struct arg_entry **ret)
{
	const struct table *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
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

/* A new table over every indexed module; with the registry's lock. */
static struct table *build(void)
{
	size_t sites = 0;
	for (int o = 0; o < FTRT_MOD_MAX; o++)
		if (ftrt_live_mods[o].md && ftrt_live_mods[o].md->live)
			sites += ftrt_live_mods[o].n;
	size_t bytes = sizeof(struct table) + 2 * sites * sizeof(struct arg_entry *);
	struct table *t = live_zalloc(bytes);
	if (!t)
		return NULL;
	t->bytes = bytes;
	const struct arg_entry **m = (const struct arg_entry **)(t + 1);
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

/* A string at p into out (at most ARG_STRING_MAX bytes, its NUL not
 * kept): its length, or -1 when p cannot be read. */
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

/* A string's length word and bytes, len of them from s, to w at *k. */
static void put_bytes(uint64_t *w, uint32_t *k, const char *s, int len, int trunc)
{
	w[(*k)++] = (uint64_t)len | (trunc ? ARG_TRUNCATED : 0);
	uint32_t words = ((uint32_t)len + 7) / 8;
	memset(&w[*k], 0, words * 8);
	memcpy(&w[*k], s, (size_t)len);
	*k += words;
}

/* Add item it with the register's value v to w at *k, which it moves
 * past it: a value of fewer bits extended from them (the register's
 * upper bits are undefined), a string read, an enum's name after it. */
static void put_item(uint64_t *w, uint32_t *k, const struct arg_item *it, uint64_t v)
{
	int shift = 64 - it->bits;
	switch (it->type) {
	case ARG_NONE:
		return;
	case ARG_INT:
		v = shift ? (uint64_t)((int64_t)(v << shift) >> shift) : v;
		break;
	case ARG_UINT:
	case ARG_UDEC:
		v = shift ? v << shift >> shift : v;
		break;
	case ARG_CHAR:
	case ARG_BOOL:
		v &= 0xff;
		break;
	case ARG_FLOAT:
		v &= 0xffffffff;
		break;
	case ARG_STRING: {
		char s[ARG_STRING_MAX + 1];
		int trunc, len = read_string((uintptr_t)v, s, &trunc);
		if (len < 0) {
			w[(*k)++] = ARG_UNREADABLE;
			w[(*k)++] = v;
			return;
		}
		put_bytes(w, k, s, len, trunc);
		return;
	}
	case ARG_ENUM:
		w[(*k)++] = v;
		put_bytes(w, k, it->text, it->text_len, 0);
		return;
	}
	w[(*k)++] = v;
}

/* The words an item takes in a record at most: a string's (its length
 * word and bytes) or a struct's (its bytes and its layout, each with a
 * length word). */
#define ITEM_WORDS_MAX (2 + ARG_STRING_MAX / 8)
_Static_assert(2 + ARG_STRUCT_MAX / 8 + ARG_LAYOUT_MAX / 8 <= ITEM_WORDS_MAX && 2 + ARG_ENUM_MAX / 8 <= ITEM_WORDS_MAX,
	       "a struct's or an enum's words fit an item's");

/* The call whose arguments are read: its ftrace_regs, its site, and its
 * stack arguments' address once an item needs it (0: not known). */
struct call {
	struct ftrace_regs *f;
	uintptr_t ip;
	uintptr_t stack;
	int looked;
};

/* len bytes of the call's stack arguments from off into dst: 0, or -1
 * (where they are is not known, or they cannot be read). */
static int stack_read(struct call *c, size_t off, void *dst, size_t len)
{
	if (!c->looked)
		c->stack = ftrt_arch_stack_args(c->f, c->ip), c->looked = 1;
	uintptr_t base = c->stack, at = base + off;
	if (!base)
		return -1;
	if (((base - 1) >> 12) == ((at + len - 1) >> 12)) {
		__builtin_memcpy(dst, (const void *)at, len); /* on a page known mapped */
		return 0;
	}
	return read_mem(dst, at, len) == (long)len ? 0 : -1;
}

/* The call's integer argument i, from 0: a register, or past them the
 * stack's word. 0, or -1. */
static int int_word(struct call *c, unsigned i, uint64_t *v)
{
	if (i < ARGSPEC_INT_REGS) {
		*v = ftrace_regs_get_argument(c->f, i);
		return 0;
	}
	return stack_read(c, 8 * (i - ARGSPEC_INT_REGS), v, 8);
}

/* The bytes item it takes: a word, a long double's 16, a struct's. */
static size_t item_size(const struct arg_item *it)
{
	return it->type == ARG_STRUCT ? it->size : it->type == ARG_F80 || it->type == ARG_F128 ? 16 : 8;
}

/* size bytes from vector registers n on, per bytes from each, into d. */
static void vec_bytes(struct ftrace_regs *f, unsigned n, size_t per, size_t size, unsigned char *d)
{
	for (size_t at = 0; at < size; at += per, n++) {
		uint64_t r[2];
		ftrt_arch_vec(f, n, r);
		__builtin_memcpy(d + at, r, size - at < per ? size - at : per);
	}
}

/* What argument item it reads of the call, into v: 0; -1 when it could
 * not be read (the stack's place not known, or unreadable); -2 when the
 * memory a pointer points to could not be, at *at. */
static int fetch(struct call *c, const struct arg_item *it, uint64_t v[ARG_STRUCT_MAX / 8], uintptr_t *at)
{
	size_t size = item_size(it);
	if (it->deref) {
		uint64_t p;
		if ((it->stack ? stack_read(c, it->off, &p, 8) : int_word(c, it->n, &p)) != 0)
			return -1;
		*at = p;
		return read_mem(v, p, size) == (long)size ? 0 : -2;
	}
	if (it->stack)
		return stack_read(c, it->off, v, size);
	if (it->fp) {
		vec_bytes(c->f, it->n, it->type == ARG_STRUCT ? it->per_reg : size, size, (unsigned char *)v);
		return 0;
	}
	for (unsigned i = 0, n = it->n, fpn = it->fpn; 8 * i < size; i++) {
		if (it->mixed && !(it->ints >> i & 1)) {
			vec_bytes(c->f, fpn++, 8, 8, (unsigned char *)&v[i]); /* an eightbyte of floats */
			continue;
		}
		if (int_word(c, n++, &v[i]) != 0)
			return -1;
	}
	return 0;
}

/* Add item it, whose bytes are v (got is fetch's or ret_fetch's
 * answer), to w at *k: its type, ARG_NONE when it was not read. */
static unsigned put_value(uint64_t *w, uint32_t *k, const struct arg_item *it, const uint64_t *v, int got, uintptr_t at)
{
	if (it->type == ARG_STRUCT && got == -2) {
		w[(*k)++] = ARG_UNREADABLE;
		w[(*k)++] = at;
		return it->type;
	}
	if (got != 0)
		return ARG_NONE;
	switch (it->type) {
	case ARG_F80:
	case ARG_F128:
		w[(*k)++] = v[0];
		w[(*k)++] = v[1];
		break;
	case ARG_STRUCT:
		put_bytes(w, k, (const char *)v, it->size, 0);
		put_bytes(w, k, it->text, it->text_len, 0);
		break;
	default:
		put_item(w, k, it, v[0]);
	}
	return it->type;
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
		uint64_t w[ARG_MAX * ITEM_WORDS_MAX], types = (uint64_t)args->n;
		uint32_t k = 0;
		struct call c = { fregs, e->func, 0, 0 };
		for (int i = 0; i < args->n; i++) {
			const struct arg_item *it = &args->it[i];
			unsigned type = it->type;
			if (it->reg) { /* the common case: one register, as it is */
				put_item(w, &k, it, it->fp ? ftrace_regs_get_fp_argument_bits(fregs, it->n) : ftrace_regs_get_argument(fregs, it->n));
			} else {
				uint64_t v[ARG_STRUCT_MAX / 8] = { 0 };
				uintptr_t at = 0;
				type = put_value(w, &k, it, v, type == ARG_NONE ? -1 : fetch(&c, it, v, &at), at);
			}
			types |= (uint64_t)type << (ARG_TYPE_BITS * (i + 1));
		}
		put_args(b, (uint32_t)p, e->func, types, w, k);
	}
	return ret && ftrt_mode == FTRT_GRAPH;
}

/* What return value item it reads, into v, as fetch does: the integer
 * return registers, the vector ones (it->fp; x86-64's struct: each
 * eightbyte from those of its class), the x87's st0 (f80), or the
 * struct returned in memory whose address rax holds (deref). */
static int ret_fetch(struct ftrace_regs *f, const unsigned char *fp, const struct arg_item *it, uint64_t v[ARG_STRUCT_MAX / 8], uintptr_t *at)
{
	size_t size = item_size(it);
	if (it->type == ARG_NONE)
		return -1;
	if (it->type == ARG_F80)
		return fp ? ftrt_arch_ret_x87(fp, v) : -1;
	if (it->deref) {
		*at = ftrt_arch_ret_int(f, 0);
		return read_mem(v, *at, size) == (long)size ? 0 : -2;
	}
	if (it->fp && it->type != ARG_STRUCT) {
		vec_bytes(f, 0, size, size, (unsigned char *)v);
		return 0;
	}
#if defined(__aarch64__)
	if (it->fp) {
		vec_bytes(f, 0, it->per_reg, size, (unsigned char *)v); /* an HFA: a member a register */
		return 0;
	}
	v[0] = ftrt_arch_ret_int(f, 0);
	v[1] = ftrt_arch_ret_int(f, 1);
#else
	/* Each eightbyte from the next return register of its class: rax,
	 * rdx; xmm0, xmm1. */
	for (unsigned i = 0, n = 0, fpn = 0; i < 2 && 8 * i < size; i++) {
		if (it->type == ARG_STRUCT && !(it->ints >> i & 1))
			vec_bytes(f, fpn++, 8, 8, (unsigned char *)&v[i]);
		else
			v[i] = ftrt_arch_ret_int(f, n++);
	}
#endif
	return 0;
}

static void retfunc(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)g;
	const struct arg_entry *args = NULL, *ret = NULL;
	const unsigned char *fp = NULL;
	struct tbuf *b = ftrt_fgraph_returning(&fp);
	if (!entries_at(r->func, &args, &ret) || !ret || !b || paused())
		return; /* no EXIT follows: nothing to pair with */
	const struct arg_item *it = &ret->it[0];
	uint64_t w[ITEM_WORDS_MAX], v[ARG_STRUCT_MAX / 8] = { 0 };
	uint32_t k = 0;
	uintptr_t at = 0;
	unsigned type = put_value(w, &k, it, v, ret_fetch(fregs, fp, it, v, &at), at);
	put_retval(b, r->func, 1 | (uint64_t)type << ARG_TYPE_BITS, w, k);
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
	if ((!args || !*args) && (!ret || !*ret) && (!sock || !*sock))
		return;
	if (!ftrt_tracing() || (ftrt_mode != FTRT_FUNCTION && ftrt_mode != FTRT_GRAPH)) {
		warn("FTRACE_ARGS, FTRACE_RETVAL: need the function or function_graph tracer", "");
		return;
	}
	if (args && *args)
		env_args = specs_make(args, strlen(args), 0, "the environment");
	if (ret && *ret)
		env_ret = specs_make(ret, strlen(ret), 1, "the environment");
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
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0)
		pipefd[0] = pipefd[1] = -1;
	pthread_atfork(NULL, NULL, after_fork);
	user.entryfunc = entryfunc;
	user.retfunc = retfunc;
	int err = ftrt_ops_choose(&user.ops, chosen);
	if (err >= 0) {
		ftrt_modules_lock();
		__atomic_store_n(&table, build(), __ATOMIC_RELEASE);
		ftrt_modules_release();
		err = ftrt_fgraph_register(&user);
	}
	if (err < 0)
		warn("FTRACE_ARGS, FTRACE_RETVAL: ", err == -ENOTSUP ? ftrt_fgraph_why() : ftrt_ops_why());
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
	ftrt_grace_wait();
	munmap(old, old->bytes);
	specs_free(oa);
	specs_free(or);
}
