/*
 * ops (ftrace.h's struct ftrace_ops): the program's own callbacks at the
 * functions each chooses, as the kernel's ftrace_ops.
 *
 * Each ops structure the program registers gets a record of the
 * runtime's (struct ops_rec), kept for the life of the process and
 * reused when the same structure is registered again: a site that an
 * ops alone wants calls a trampoline made for its record (live.h's
 * ftrt_arch_live_ops), whose handler (direct) calls the ops's callback.
 * A site that several ops want, or an ops and the tracer, calls its
 * module's list record instead, whose handler (list) finds in the
 * current view which ops want the site and calls each, then the tracer
 * when the record says so. So an ops costs nothing to a function it
 * does not choose, and one alone costs its trampoline and its callback.
 *
 * The view (struct view) is what the lists read: the registered
 * records by slot (a bit each), and per module and site the bits of the
 * ops that choose it. It is made anew at each change, under the
 * registry's lock, and published with one store; the old one is
 * unmapped after a grace period (grace.h), as is a record's ops after
 * unregister: a handler reads both inside a walk. A record's ops is
 * cleared before the grace period, and the record never goes away, so a
 * thread that reaches it later (it was between a site and its walk)
 * finds no ops and calls nothing; but for a thread held there across an
 * unregister and a register of the same structure, which calls the ops
 * once for the site it came from, chosen or not by its new filter.
 *
 * Calls live.c (index, names, batches), grace.c and the C library's
 * allocator (the filters' strings, outside the hot path).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/opslayout.h"
#include "core/grace.h"
#include "ftrace.h"
#include "live.h"
#include "liveindex.h"
#include "ops.h"
#include "pass.h"
#include "patch.h"
#include "record/tracer.h"

/* Registered at once: a bit each in a site's mask. */
#define OPS_MAX 64
/* ops structures registered over the life of the process. */
#define RECS_MAX 256

struct ops_rec {
	struct ftrt_ops head;             /* handler: direct */
	struct ftrace_ops *user;          /* while registered; NULL else (atomic) */
	const struct ftrace_ops *key;     /* the structure this record is for */
	unsigned long flags;              /* the ops's, as registered */
	char *filter, *notrace;           /* globs (malloc); NULL: none */
	int slot;                         /* its bit while registered; -1 */
	int (*choose)(int o, size_t i);   /* chooses site i of module o + 1 in place of the filters (ftrt_ops_choose); NULL: none */
	int self_owner;                   /* the module of the callback's own function, */
	const char *self;                 /* and its name: never called back for it; NULL: none */
};
_Static_assert(offsetof(struct ops_rec, user) == OPSREC_USER && offsetof(struct ops_rec, flags) == OPSREC_FLAGS &&
		       OPSREC_SLOW_FLAGS == (FTRACE_OPS_FL_RECURSION | FTRACE_OPS_FL_DIRECT),
	       "opslayout.h: struct ops_rec");
static struct ops_rec recs[RECS_MAX];
static int nrecs;

/* A module's list: with the tracer (1) or without (0). */
struct list_rec {
	struct ftrt_ops head; /* handler: list */
	int owner;
	int tracer;
};
static struct list_rec lists[FTRT_MOD_MAX][2];

struct view {
	struct ops_rec *slot[OPS_MAX];
	const struct ftrt_mod *md[FTRT_MOD_MAX]; /* the module its masks are of */
	const uintptr_t *site[FTRT_MOD_MAX];     /* its sites (live_mod's, sorted) */
	size_t n[FTRT_MOD_MAX];
	uint64_t *mask[FTRT_MOD_MAX];            /* per site: the slots that choose it */
	size_t bytes;                            /* of the mapping, masks included */
};
static struct view *view; /* atomic: read by the lists without a lock */
static uint64_t used;     /* slots of registered ops */

static __thread int recursing __attribute__((tls_model("initial-exec")));

/* Call the ops of record r back, if it still has one; a direct ops's
 * trampoline is where the ops caller goes next (at an entry site). */
static inline void call(struct ops_rec *r, uintptr_t ip, uintptr_t parent_ip, struct ftrace_regs *fregs)
{
	struct ftrace_ops *ops = __atomic_load_n(&r->user, __ATOMIC_ACQUIRE);
	if (!ops)
		return;
	if (__builtin_expect(r->flags & FTRACE_OPS_FL_DIRECT, 0)) {
		unsigned long d = __atomic_load_n(&ops->direct_call, __ATOMIC_RELAXED);
		if (fregs->kind != FREGS_MCOUNT)
			fregs->direct = d;
		if (!ops->func)
			return;
	}
	if (!(r->flags & FTRACE_OPS_FL_RECURSION)) {
		ops->func(ip, parent_ip, ops, fregs);
		return;
	}
	if (recursing)
		return;
	recursing = 1;
	ops->func(ip, parent_ip, ops, fregs);
	recursing = 0;
}

/* The handler of a site that one ops alone wants (the ops callers run
 * its common case inline: arch/x86_64/ops.S). */
void ftrt_ops_direct_handler(uintptr_t ip, uintptr_t parent_ip, const struct ftrt_ops *rec, struct ftrace_regs *fregs)
	__attribute__((visibility("hidden")));
void ftrt_ops_direct_handler(uintptr_t ip, uintptr_t parent_ip, const struct ftrt_ops *rec, struct ftrace_regs *fregs)
{
	struct ftrt_grace *g = ftrt_grace_enter();
	call((struct ops_rec *)rec, ip, parent_ip, fregs);
	ftrt_grace_exit(g);
}

/* The handler of a site that several want: each ops the view says
 * chooses it, in slot order, then the tracer. */
static void list(uintptr_t ip, uintptr_t parent_ip, const struct ftrt_ops *rec, struct ftrace_regs *fregs)
{
	const struct list_rec *lr = (const struct list_rec *)rec;
	struct ftrt_grace *g = ftrt_grace_enter();
	const struct view *v = __atomic_load_n(&view, __ATOMIC_ACQUIRE);
	int o = lr->owner - 1;
	uint64_t m = 0;
	if (v && v->n[o]) {
		const uintptr_t *s = v->site[o];
		size_t lo = ftrt_lower_bound(s, v->n[o], ip);
		m = lo < v->n[o] && s[lo] == ip ? v->mask[o][lo] : 0;
		for (uint64_t k = m; k;) {
			struct ops_rec *r = v->slot[__builtin_ctzll(k)];
			k &= k - 1;
			if (!(r->flags & FTRT_OPS_FL_AFTER))
				call(r, ip, parent_ip, fregs);
		}
	}
	if (lr->tracer)
		ftrt_patch_up.tracer(ip, fregs);
	/* Graph users after the tracer: a call it pushed is theirs too. */
	for (uint64_t k = m; k;) {
		struct ops_rec *r = v->slot[__builtin_ctzll(k)];
		k &= k - 1;
		if (r->flags & FTRT_OPS_FL_AFTER)
			call(r, ip, parent_ip, fregs);
	}
	ftrt_grace_exit(g);
}

int ftrt_ops_registered(void)
{
	return used != 0;
}

const struct ftrt_ops *ftrt_ops_site(const struct live_mod *l, size_t i, uintptr_t *direct)
{
	const struct view *v = view;
	int o = l->md->owner - 1;
	uint64_t m = v && v->md[o] == l->md && i < v->n[o] ? v->mask[o][i] : 0;
	*direct = 0;
	if (!m)
		return NULL;
	if (!(m & (m - 1)) && !l->traced[i]) {
		struct ops_rec *r = v->slot[__builtin_ctzll(m)];
		struct ftrace_ops *ops = r->user;
		if (ops && (r->flags & FTRACE_OPS_FL_DIRECT) && !ops->func)
			*direct = ops->direct_call;
		return &r->head;
	}
	struct list_rec *lr = &lists[o][l->traced[i] ? 1 : 0];
	lr->head.func = list;
	lr->owner = l->md->owner;
	lr->tracer = l->traced[i];
	return &lr->head;
}

static struct ftrt_globs gf, gn;

/* Whether record r's filters choose the function name. */
static int picks(const struct ops_rec *r, const char *name, int fcxx, int ncxx)
{
	if (r->filter && *r->filter && !ftrt_live_chooses(r->filter, fcxx < 0 ? NULL : &gf, name, fcxx > 0))
		return 0;
	return !(r->notrace && *r->notrace && ftrt_live_chooses(r->notrace, ncxx < 0 ? NULL : &gn, name, ncxx > 0));
}

/* Compile r's filters into gf and gn: how picks reads them (-1: not
 * compiled, matched by its list; else whether it is C++'s). */
static void compile(const struct ops_rec *r, int *fcxx, int *ncxx)
{
	*fcxx = *ncxx = 0;
	if (r->filter && *r->filter)
		*fcxx = ftrt_cxx_globs(r->filter) ? 1 : ftrt_globs_compile(r->filter, &gf) == 0 ? 0 : -1;
	if (r->notrace && *r->notrace)
		*ncxx = ftrt_cxx_globs(r->notrace) ? 1 : ftrt_globs_compile(r->notrace, &gn) == 0 ? 0 : -1;
}

/* How many sites of every indexed module r's filters choose. */
static size_t count(const struct ops_rec *r)
{
	int fcxx, ncxx;
	size_t k = 0;
	compile(r, &fcxx, &ncxx);
	for (int o = 0; o < FTRT_MOD_MAX; o++) {
		const struct live_mod *l = &ftrt_live_mods[o];
		if (!l->md || !l->md->live)
			continue;
		for (size_t i = 0; i < l->n; i++)
			k += r->choose ? r->choose(o, i) != 0 : l->name[i] != NONAME && picks(r, l->names + l->name[i], fcxx, ncxx);
	}
	return k;
}

/* A new view of the registered records over every indexed module, or
 * NULL (no memory; none registered). */
static struct view *build(void)
{
	if (!used)
		return NULL;
	size_t sites = 0;
	for (int o = 0; o < FTRT_MOD_MAX; o++)
		if (ftrt_live_mods[o].md && ftrt_live_mods[o].md->live)
			sites += ftrt_live_mods[o].n;
	size_t bytes = sizeof(struct view) + sites * sizeof(uint64_t);
	struct view *v = live_zalloc(bytes);
	if (!v)
		return NULL;
	v->bytes = bytes;
	uint64_t *m = (uint64_t *)(v + 1);
	for (int o = 0; o < FTRT_MOD_MAX; o++) {
		const struct live_mod *l = &ftrt_live_mods[o];
		if (!l->md || !l->md->live)
			continue;
		v->md[o] = l->md, v->site[o] = l->site, v->n[o] = l->n, v->mask[o] = m;
		m += l->n;
	}
	for (int k = 0; k < OPS_MAX; k++) {
		if (!(used >> k & 1))
			continue;
		struct ops_rec *r = NULL;
		for (int j = 0; j < nrecs && !r; j++)
			if (recs[j].slot == k)
				r = &recs[j];
		v->slot[k] = r;
		int fcxx, ncxx;
		compile(r, &fcxx, &ncxx);
		for (int o = 0; o < FTRT_MOD_MAX; o++) {
			const struct live_mod *l = &ftrt_live_mods[o];
			const char *self = r->self_owner == o + 1 ? r->self : NULL;
			for (size_t i = 0; v->md[o] && i < l->n; i++)
				if (l->name[i] != NONAME && (r->choose ? r->choose(o, i) : picks(r, l->names + l->name[i], fcxx, ncxx)) &&
				    !(self && strcmp(self, l->names + l->name[i]) == 0))
					v->mask[o][i] |= 1ull << k;
		}
	}
	return v;
}

/* Whether a site of the view v is chosen by two direct ops. */
static int direct_clash(const struct view *v)
{
	uint64_t d = 0;
	for (int k = 0; k < OPS_MAX; k++)
		if (v->slot[k] && (v->slot[k]->flags & FTRACE_OPS_FL_DIRECT))
			d |= 1ull << k;
	if (!(d & (d - 1)))
		return 0;
	for (int o = 0; o < FTRT_MOD_MAX; o++)
		for (size_t i = 0; v->md[o] && i < v->n[o]; i++) {
			uint64_t m = v->mask[o][i] & d;
			if (m & (m - 1))
				return 1;
		}
	return 0;
}

/* Put a new view in place and the sites of module owner (0: every
 * module) where it says, then unmap the old view after a grace period.
 * The records changed before are seen by every walk after this. 0, or
 * -errno (the sites half changed: each calls the old record or the new,
 * and a record without ops calls nothing). */
static int update(int owner)
{
	struct view *old = view, *v = build();
	if (used && !v)
		return -ENOMEM;
	if (v && direct_clash(v)) {
		munmap(v, v->bytes);
		return -EBUSY;
	}
	__atomic_store_n(&view, v, __ATOMIC_RELEASE);
	int err = ftrt_live_resite(owner);
	ftrt_grace_wait();
	if (old)
		munmap(old, old->bytes);
	return err;
}

static const char *why = "";

const char *ftrt_ops_why(void)
{
	return why;
}

/* ops's record, made when make says so (NULL: none, or no room). */
static struct ops_rec *rec_of(const struct ftrace_ops *ops, int make)
{
	for (int i = 0; i < nrecs; i++)
		if (recs[i].key == ops)
			return &recs[i];
	if (!make || nrecs == RECS_MAX)
		return NULL;
	struct ops_rec *r = &recs[nrecs++];
	r->head.func = ftrt_ops_direct_handler;
	r->key = ops;
	r->slot = -1;
	return r;
}

/* Start: the registry locked and every module indexed. */
static int begin(void)
{
	ftrt_modules_lock();
	int err = ftrt_live_prepare();
	if (err) {
		why = ftrt_live_why();
		ftrt_modules_release();
	}
	return err;
}

static int fail(int err, const char *w)
{
	why = w;
	ftrt_modules_release();
	return err;
}

/* Register ops (direct: with its direct trampoline, addr). */
static int reg(struct ftrace_ops *ops, int direct, unsigned long addr)
{
	if (!ops || (!ops->func && !direct)) {
		why = ops ? "the ops has no callback" : "no ops";
		return -EINVAL;
	}
	if (direct && !addr) {
		why = "no direct trampoline";
		return -EINVAL;
	}
	int err = begin();
	if (err)
		return err;
	ftrt_grace_init();
	struct ops_rec *r = rec_of(ops, 1);
	if (!r)
		return fail(-ENOSPC, "256 ops structures were registered already");
	if (r->user)
		return fail(-EBUSY, "the ops is registered already");
	if (!~used)
		return fail(-ENOSPC, "64 ops are registered already");
	if (direct && ftrt_arch_direct_note(addr) != 0)
		return fail(-ENOSPC, "512 direct trampolines were registered already");
	if (direct) {
		ops->direct_call = addr;
		ops->flags |= FTRACE_OPS_FL_DIRECT;
	}
	r->slot = __builtin_ctzll(~used);
	r->flags = ops->flags;
	/* The callback's own function, when it has a site: calling the ops
	 * back there would recurse for ever (the kernel's callbacks are
	 * notrace; a program's are often built with sites). */
	r->self = NULL, r->self_owner = 0;
	for (int o = 0; o < FTRT_MOD_MAX; o++) {
		const struct live_mod *l = &ftrt_live_mods[o];
		uintptr_t f = (uintptr_t)ops->func;
		if (l->md && l->md->live && f >= l->md->lo && f < l->md->hi) {
			r->self = ftrt_live_name_at(l, f);
			r->self_owner = o + 1;
			break;
		}
	}
	used |= 1ull << r->slot;
	ops->flags |= FTRACE_OPS_FL_ENABLED;
	__atomic_store_n(&r->user, ops, __ATOMIC_RELEASE);
	err = update(0);
	if (err == -EBUSY) {
		/* Another direct trampoline has one of its functions: undone. */
		__atomic_store_n(&r->user, NULL, __ATOMIC_RELEASE);
		used &= ~(1ull << r->slot);
		r->slot = -1;
		ops->flags &= ~(FTRACE_OPS_FL_ENABLED | (direct ? FTRACE_OPS_FL_DIRECT : 0));
		why = "another direct trampoline is registered at one of its functions";
	} else if (err) {
		why = ftrt_live_why();
	}
	ftrt_modules_release();
	return err;
}

int ftrt_ops_register(struct ftrace_ops *ops)
{
	return reg(ops, 0, 0);
}

int ftrt_ops_direct(struct ftrace_ops *ops, unsigned long addr)
{
	return reg(ops, 1, addr);
}

int ftrt_ops_direct_modify(struct ftrace_ops *ops, unsigned long addr)
{
	if (!ops || !addr) {
		why = "no ops, or no trampoline";
		return -EINVAL;
	}
	int err = begin();
	if (err)
		return err;
	struct ops_rec *r = rec_of(ops, 0);
	if (!r || !r->user || !(r->flags & FTRACE_OPS_FL_DIRECT))
		return fail(-EINVAL, "the ops is not a registered direct one");
	if (ftrt_arch_direct_note(addr) != 0)
		return fail(-ENOSPC, "512 direct trampolines were registered already");
	/* The lists and trampolines read it at each call; the sites that
	 * call the old one directly are rewritten. */
	__atomic_store_n(&ops->direct_call, addr, __ATOMIC_RELEASE);
	err = ftrt_live_resite(0);
	if (err)
		why = ftrt_live_why();
	ftrt_modules_release();
	return err;
}

int ftrt_ops_direct_unregister(struct ftrace_ops *ops, unsigned long addr, int free)
{
	if (!ops || !(ops->flags & FTRACE_OPS_FL_DIRECT) || ops->direct_call != addr) {
		why = "the ops is not registered with that direct trampoline";
		return -EINVAL;
	}
	int err = ftrt_ops_unregister(ops);
	if (err)
		return err;
	ops->flags &= ~FTRACE_OPS_FL_DIRECT;
	if (free) {
		ftrt_ops_filter(ops, NULL, 1, 0);
		ftrt_ops_filter(ops, NULL, 1, 1);
	}
	return 0;
}

int ftrt_ops_unregister(struct ftrace_ops *ops)
{
	int err = begin();
	if (err)
		return err;
	struct ops_rec *r = rec_of(ops, 0);
	if (!r || !r->user)
		return fail(-EINVAL, "the ops is not registered");
	__atomic_store_n(&r->user, NULL, __ATOMIC_RELEASE);
	used &= ~(1ull << r->slot);
	r->slot = -1;
	err = update(0); /* waits for the walks that may have read r->user */
	ops->flags &= ~FTRACE_OPS_FL_ENABLED;
	if (err)
		why = ftrt_live_why();
	ftrt_modules_release();
	return err;
}

/* Set or add to one of r's glob lists. 0, or -ENOMEM. */
static int set_list(char **list, const char *globs, int reset)
{
	if (!globs)
		globs = "";
	if (reset || !*list || !**list) {
		char *c = strdup(globs);
		if (!c)
			return -ENOMEM;
		free(*list);
		*list = c;
		return 0;
	}
	if (!*globs)
		return 0;
	size_t a = strlen(*list), b = strlen(globs);
	char *c = malloc(a + b + 2);
	if (!c)
		return -ENOMEM;
	memcpy(c, *list, a);
	c[a] = ',';
	memcpy(c + a + 1, globs, b + 1);
	free(*list);
	*list = c;
	return 0;
}

int ftrt_ops_filter(struct ftrace_ops *ops, const char *globs, int reset, int notrace)
{
	if (!ops) {
		why = "no ops";
		return -EINVAL;
	}
	int err = begin();
	if (err)
		return err;
	struct ops_rec *r = rec_of(ops, 1);
	if (!r)
		return fail(-ENOSPC, "256 ops structures were registered already");
	if (set_list(notrace ? &r->notrace : &r->filter, globs, reset) != 0)
		return fail(-ENOMEM, "no memory for the filter");
	if (r->user)
		err = update(0);
	if (err) {
		why = ftrt_live_why();
		ftrt_modules_release();
		return err;
	}
	size_t k = count(r);
	ftrt_modules_release();
	return k > INT32_MAX ? INT32_MAX : (int)k;
}

int ftrt_ops_choose(struct ftrace_ops *ops, int (*choose)(int o, size_t i))
{
	if (!ops || !choose) {
		why = "no ops, or no chooser";
		return -EINVAL;
	}
	int err = begin();
	if (err)
		return err;
	struct ops_rec *r = rec_of(ops, 1);
	if (!r)
		return fail(-ENOSPC, "256 ops structures were registered already");
	r->choose = choose;
	if (r->user)
		err = update(0);
	if (err)
		why = ftrt_live_why();
	ftrt_modules_release();
	return err;
}

void ftrt_ops_added(const struct ftrt_mod *md)
{
	if (used) {
		/* The capture's table first: its chooser reads it (ftrt_ops_choose). */
		if (ftrt_patch_up.added)
			ftrt_patch_up.added(md);
		update(md->owner);
	}
}
