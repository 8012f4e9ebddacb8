/*
 * The live part's work (ftrace.h's API, api.c; live.h says who does
 * what): enable and disable sites by function name while the program's
 * threads run them, change the tracer, pause and resume recording.
 *
 * The sites of each module are indexed at the first live call
 * (liveindex.c: by address and by function name), so that a plain name
 * is found by binary search and a toggle of one function costs its
 * patch alone. A glob list (FTRACE_FILTER's syntax: `a*,b,!c*`) is
 * matched against every name. A module loaded later is indexed at the
 * next live call, or at its registration when live calls chose functions
 * before (ftrt_live_added: those calls are replayed on it); its index goes
 * when it is unloaded (ftrt_live_forget).
 *
 * Every change goes through one lock, the module registry's: a module's
 * load-time pass and a live batch never write code at once, and a
 * module is never unloaded under a batch. The batch itself is the
 * architecture's (poke.c). A site enabled live calls its module's caller
 * trampoline, which serves every tracer (ftrt_entry asks which runs), so
 * a change of tracer writes no code but for the sites the load-time pass
 * gave function_graph's per-site trampolines, which go back to the
 * caller first.
 *
 * The first enable opens the trace when none is (a process started with
 * no FTRACE); the tracer is then the one asked for (ftrace_tracer), by
 * default function_graph.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/grace.h"
#include "live.h"
#include "liveindex.h"
#include "pass.h"
#include "patch.h"
#include "record/tracer.h"

/* The tracer the first enable starts, when no trace is open. */
static int want_tracer = FTRT_GRAPH;

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status) __attribute__((weak));

/* Whether a glob list is one plain name (found by binary search). */
static int plain(const char *list)
{
	return *list && !strpbrk(list, "*?[],!") && !ftrt_cxx_globs(list);
}

/* Whether the list (compiled into g when it fits, else g NULL) chooses
 * the function name (C++: or its demangled name, when the list has C++
 * punctuation: cxx). For ops.c's filters too. */
int ftrt_live_chooses(const char *list, const struct ftrt_globs *g, const char *name, int cxx)
{
	if (!cxx && g)
		return ftrt_globs_match(g, name, NULL);
	char *dem = NULL;
	int status;
	if (cxx && __cxa_demangle && name[0] == '_' && name[1] == 'Z') {
		dem = __cxa_demangle(name, NULL, NULL, &status);
		if (status != 0) {
			free(dem);
			dem = NULL;
		}
	}
	int r = g ? ftrt_globs_match(g, name, dem) : ftrt_filter_match(list, name, dem, NULL);
	free(dem);
	return r;
}

static struct ftrt_globs compiled; /* the list of the call under way (the live lock held) */

/* Sites enabled less sites disabled by the batch being built. */
static long delta;
/* ... and by every batch applied: the metadata's count of enabled sites
 * is the load-time passes' and this (meta.c). */
long ftrt_live_enabled_delta;
long ftrt_live_enabled_peak;

/* The batch being built, sorted by address (modules are disjoint and
 * visited in address order within each). */
static struct ftrt_poke *batch;
static size_t nbatch, capbatch;

static int batch_add(const struct ftrt_poke *p)
{
	if (nbatch == capbatch) {
		size_t cap = capbatch ? 2 * capbatch : 1024;
		struct ftrt_poke *b = live_zalloc(cap * sizeof *b);
		if (!b)
			return -ENOMEM;
		/* The old array is not unmapped: a trap handler may be reading
		 * the batch published last (poke.c); it is this size at most. */
		if (batch)
			memcpy(b, batch, nbatch * sizeof *b);
		batch = b;
		capbatch = cap;
	}
	batch[nbatch++] = *p;
	return 0;
}

static int cmp_poke(const void *a, const void *b)
{
	const struct ftrt_poke *x = a, *y = b;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/* Where site i of l is, for the call that enables it: at a function's
 * entry, after its prologue, after a nested function's push %r10, or
 * in a trampoline made from a function's prologue. */
static int site_kind(const struct live_mod *l, size_t i, int len)
{
	int want = l->kind[i];
	if (want == WANT_ENTRY && ftrt_site_prologue(l->site[i]))
		want = WANT_PROLOGUE;
	else if (want == WANT_ENTRY && ftrt_arch_chain(l->site[i], len, l->md->lo))
		want = WANT_CHAIN;
	return want;
}

/*
 * Add site i of l to the batch when it does not call what it should: the
 * ops record ops.c says (one ops's, or the module's list's), or, with
 * none, the tracer when l->traced says so, else nothing. A site the
 * tracer has in any of its forms (function_graph's jump to a trampoline
 * of the site's own, the empty tracer's stub) is left in it.
 */
static int resite(struct live_mod *l, size_t i)
{
	uintptr_t ip = l->site[i];
	int len, st = ftrt_arch_live_state(ip, &len);
	if (st < 0)
		return 0;
	uintptr_t direct = 0;
	const struct ftrt_ops *want = ftrt_ops_site(l, i, &direct);
	struct ftrt_poke p = { .ip = ip, .len = (unsigned char)len };
	memcpy(p.old, (const void *)ip, (size_t)len);
	if (want) {
		int kind = site_kind(l, i, len);
		if (!(direct && ftrt_arch_live_direct(ip, len, kind, direct, p.new) == 0) &&
		    ftrt_arch_live_ops(ip, len, kind, want, l->md->owner, p.new) != 0)
			return 0; /* no trampoline in reach: the site stays as it is */
		if (memcmp(p.new, p.old, (size_t)len) == 0)
			return 0;
	} else if (l->traced[i]) {
		/* Any of the tracer's forms, not an ops's. */
		if ((st == 1 && !ftrt_arch_live_ops_rec(ip, len) && !ftrt_arch_direct_known(ftrt_arch_live_target(ip, len))) ||
		    ftrt_arch_live_call(ip, len, site_kind(l, i, len), ftrt_live_whole, p.new) != 0)
			return 0;
	} else {
		if (st == 0)
			return 0;
		ftrt_arch_live_off(ip, len, p.new);
	}
	return batch_add(&p);
}

/* Site i of l traced or not (on), as a filter call says; counted in
 * *changed when it was not. */
static int want_site(struct live_mod *l, size_t i, int on, size_t *changed)
{
	if (l->traced[i] != on) {
		int len;
		if (ftrt_arch_live_state(l->site[i], &len) < 0)
			return 0;
		l->traced[i] = (unsigned char)on;
		(*changed)++;
		delta += on ? 1 : -1;
	}
	return resite(l, i);
}

/* Build the batch of op with list over module l. */
static int plan(struct live_mod *l, int op, const char *list, size_t *changed)
{
	ftrt_module_use(l->md->desc);
	int err = 0;
	if (op != OP_SET && plain(list)) {
		size_t lo = 0, hi = l->nnamed;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (strcmp(l->names + l->name[l->byname[mid]], list) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < l->nnamed && !err && strcmp(l->names + l->name[l->byname[lo]], list) == 0; lo++)
			err = want_site(l, l->byname[lo], op == OP_ENABLE, changed);
		return err;
	}
	int cxx = ftrt_cxx_globs(list);
	const struct ftrt_globs *g = ftrt_globs_compile(list, &compiled) == 0 ? &compiled : NULL;
	for (size_t i = 0; i < l->n && !err; i++) {
		if (l->name[i] == NONAME)
			continue;
		int hit = ftrt_live_chooses(list, g, l->names + l->name[i], cxx);
		if (op == OP_SET)
			err = want_site(l, i, hit, changed);
		else if (hit)
			err = want_site(l, i, op == OP_ENABLE, changed);
	}
	return err;
}

static const char *last_why = "";
int ftrt_live_whole;

const char *ftrt_live_why(void)
{
	return last_why;
}

int ftrt_live_fail(int err, const char *why)
{
	last_why = why;
	return err;
}

/* In a child after fork: the lock the parent's thread may have held,
 * and its batch finished. */
static void after_fork(void)
{
	ftrt_modules_after_fork();
	ftrt_arch_poke_after_fork();
	ftrt_grace_after_fork();
	ftrt_libcalls_after_fork();
	nbatch = 0;
	delta = 0;
}

/* At start, in a process that may patch itself (trap.c): a child forked
 * while a thread holds the lock, perhaps in the middle of a batch, gets
 * both put right (registered before any thread could hold the lock). */
void ftrt_live_arm(void)
{
	static int done;
	if (!done && pthread_atfork(NULL, NULL, after_fork) == 0)
		done = 1;
}

/* Ready to patch: SIGTRAP taken, the writer open. 0, or -errno. */
static int ready(void)
{
	ftrt_live_arm();
	if (ftrt_arch_live_refused()) {
		last_why = ftrt_arch_live_refused();
		return -ENOSYS;
	}
	int err = ftrt_patch_up.trap_install ? ftrt_patch_up.trap_install() : -ENOSYS;
	if (err) {
		last_why = "SIGTRAP's handler cannot be installed";
		return err;
	}
	err = ftrt_text_open();
	if (err)
		last_why = ftrt_text_why();
	return err;
}

/* Apply the batch built, sorted. */
static int apply(void)
{
	/* In address order already, but for modules loaded out of it. */
	for (size_t i = 1; i < nbatch; i++)
		if (batch[i - 1].ip > batch[i].ip) {
			qsort(batch, nbatch, sizeof *batch, cmp_poke);
			break;
		}
	int err = ftrt_arch_poke(batch, nbatch);
	if (err)
		last_why = ftrt_text_why();
	else if (__atomic_add_fetch(&ftrt_live_enabled_delta, delta, __ATOMIC_RELAXED) > ftrt_live_enabled_peak)
		ftrt_live_enabled_peak = ftrt_live_enabled_delta; /* under the registry's lock, as every apply */
	nbatch = 0;
	delta = 0;
	return err;
}

/*
 * The filter calls since the last set (ftrace_set_functions), in order,
 * each list once, with the latest call that gave it: what a module
 * loaded later gets (ftrt_live_added), so that a function enabled
 * before its shared object was loaded is enabled in it too. A site's
 * state is the last call whose list chooses its function (a set's
 * chooses every function, on or off), which dropping an earlier call
 * with the same list leaves as it is. Under the registry's lock.
 */
struct logged {
	int op;
	char *list;
};
static struct logged *flog;
static size_t nflog, capflog;

static void log_op(int op, const char *list)
{
	size_t j = 0;
	for (size_t i = 0; i < nflog; i++) {
		if (op == OP_SET || strcmp(flog[i].list, list) == 0)
			free(flog[i].list);
		else
			flog[j++] = flog[i];
	}
	nflog = j;
	if (nflog == capflog) {
		size_t cap = capflog ? 2 * capflog : 16;
		struct logged *f = realloc(flog, cap * sizeof *f);
		if (!f)
			return; /* a module loaded later misses this call */
		flog = f, capflog = cap;
	}
	char *copy = strdup(list);
	if (copy)
		flog[nflog++] = (struct logged){ op, copy };
}

void ftrt_live_added(const struct ftrt_mod *md)
{
	if ((!nflog && !ftrt_ops_registered()) || !md->live || md->owner < 1)
		return;
	/* Its library calls, as the calls since the last set chose them. */
	for (size_t k = 0; k < nflog; k++)
		ftrt_libcalls_live_module(md, flog[k].op, flog[k].list);
	struct live_mod *l = &ftrt_live_mods[md->owner - 1];
	if (ready() != 0 || (l->md != md && ftrt_live_index(md, l) != 0) || !l->n)
		return;
	/* Each site's state after the calls, in order: 0 as the load-time
	 * pass left it, 1 on, 2 off. */
	unsigned char *want = live_zalloc(l->n);
	if (!want)
		return;
	for (size_t k = 0; k < nflog; k++) {
		const char *list = flog[k].list;
		int cxx = ftrt_cxx_globs(list);
		const struct ftrt_globs *g = ftrt_globs_compile(list, &compiled) == 0 ? &compiled : NULL;
		for (size_t i = 0; i < l->n; i++) {
			if (l->name[i] == NONAME)
				continue;
			int hit = ftrt_live_chooses(list, g, l->names + l->name[i], cxx);
			if (flog[k].op == OP_SET)
				want[i] = hit ? 1 : 2;
			else if (hit)
				want[i] = flog[k].op == OP_ENABLE ? 1 : 2;
		}
	}
	ftrt_module_use(md->desc);
	size_t changed = 0;
	int err = 0;
	for (size_t i = 0; i < l->n && !err; i++)
		if (want[i])
			err = want_site(l, i, want[i] == 1, &changed);
	munmap(want, l->n);
	if (!err)
		apply();
	nbatch = 0;
	delta = 0;
	ftrt_ops_added(md); /* the ops that choose its functions */
}

int ftrt_live_prepare(void)
{
	int err = ready();
	return err ? err : ftrt_live_index_all();
}

int ftrt_live_resite(int owner)
{
	int err = 0;
	for (int i = 0; i < FTRT_MOD_MAX && !err; i++) {
		struct live_mod *l = &ftrt_live_mods[i];
		if (!l->md || !l->md->live || (owner && l->md->owner != owner))
			continue;
		ftrt_module_use(l->md->desc);
		for (size_t k = 0; k < l->n && !err; k++)
			err = resite(l, k);
	}
	err = err ? err : apply();
	nbatch = 0;
	delta = 0;
	return err;
}

int ftrt_live_filter(int op, const char *list)
{
	if (!list)
		list = "";
	ftrt_libcalls_live_prepare(op, list);
	ftrt_modules_lock();
	size_t changed = 0;
	int err = ready();
	if (!err)
		err = ftrt_live_index_all();
	if (!err && op != OP_DISABLE)
		err = ftrt_live_open_trace(want_tracer);
	for (int i = 0; i < FTRT_MOD_MAX && !err; i++)
		if (ftrt_live_mods[i].md && ftrt_live_mods[i].md->live)
			err = plan(&ftrt_live_mods[i], op, list, &changed);
	if (!err)
		err = apply();
	if (!err) {
		/* The library calls the list chooses (FTRACE_LIBCALL on). */
		int slots = ftrt_libcalls_live(op, list);
		if (slots < 0)
			err = slots;
		else
			changed += (size_t)slots;
	}
	if (!err)
		log_op(op, list);
	nbatch = 0;
	delta = 0;
	ftrt_modules_release();
	ftrt_libcalls_live_finish();
	return err ? err : (int)(changed > INT32_MAX ? INT32_MAX : changed);
}

int ftrt_live_set(const char *list)
{
	return ftrt_live_filter(OP_SET, list);
}

int ftrt_live_enable(const char *list)
{
	return ftrt_live_filter(OP_ENABLE, list);
}

int ftrt_live_disable(const char *list)
{
	return ftrt_live_filter(OP_DISABLE, list);
}

int ftrt_live_restore(void)
{
	ftrt_modules_lock();
	int err = ready();
	for (int i = 0; i < FTRT_MOD_MAX && !err; i++) {
		struct live_mod *l = &ftrt_live_mods[i];
		if (!l->md || !l->md->live)
			continue;
		for (size_t j = 0; j < l->n && !err; j++) {
			int len, n = l->orig_len[j];
			uintptr_t ip = l->site[j];
			/* Only where the disabled site is as long as it was: a
			 * shorter one (a 6-byte site an ops made a 5-byte call and a
			 * NOP) may have a thread still in the tracer that returns
			 * into its last byte. */
			if (!n || ftrt_arch_live_state(ip, &len) != 0 || len != n || memcmp((const void *)ip, l->orig[j], (size_t)n) == 0)
				continue;
			struct ftrt_poke p = { .ip = ip, .len = (unsigned char)n };
			memcpy(p.old, (const void *)ip, (size_t)n);
			memcpy(p.new, l->orig[j], (size_t)n);
			err = batch_add(&p);
		}
	}
	if (!err)
		err = apply();
	nbatch = 0;
	delta = 0;
	int trap = err ? 0 : ftrt_patch_up.trap_release ? ftrt_patch_up.trap_release() : 0;
	ftrt_modules_release();
	if (!err && trap)
		err = ftrt_live_fail(trap, "a thread has a SIGTRAP pending: the runtime's handler stays SIGTRAP's");
	return err;
}

/* Before a change of tracer: the enabled sites whose tracer is not the
 * process-wide one (ftrt_arch_live_shared) moved to the module's caller,
 * which serves every tracer. */
static int untrampoline(void)
{
	int err = 0;
	for (int i = 0; i < FTRT_MOD_MAX && !err; i++) {
		struct live_mod *l = &ftrt_live_mods[i];
		if (!l->md || !l->md->live)
			continue;
		ftrt_module_use(l->md->desc);
		for (size_t k = 0; k < l->n && !err; k++) {
			int len;
			uintptr_t direct;
			if (ftrt_arch_live_state(l->site[k], &len) != 1 || ftrt_arch_live_shared(l->site[k], len) ||
			    ftrt_ops_site(l, k, &direct))
				continue; /* not the tracer's, or an ops's */
			/* Enabled, not by a call of a shared caller: x86-64's jump to
			 * a trampoline of its own, arm64's call of its literal's ops,
			 * a call of the empty tracer's stub. */
			struct ftrt_poke p = { .ip = l->site[k], .len = (unsigned char)len };
			memcpy(p.old, (const void *)p.ip, (size_t)len);
			int want = l->kind[k] ? site_kind(l, k, len)
				   : ftrt_site_prologue(l->site[k]) ? WANT_PROLOGUE
										: WANT_ENTRY;
			if (ftrt_arch_live_call(p.ip, len, want, ftrt_live_whole, p.new) != 0)
				continue;
			err = batch_add(&p);
		}
	}
	return err ? err : apply();
}

int ftrt_live_tracer(const char *name)
{
	int t = !name ? 0
		: strcmp(name, FTRT_TRACER_FUNCTION) == 0 ? FTRT_FUNCTION
		: strcmp(name, FTRT_TRACER_GRAPH) == 0	  ? FTRT_GRAPH
		: strcmp(name, FTRT_TRACER_NOP) == 0	  ? FTRT_NOP
							  : 0;
	if (!t) {
		last_why = "the tracers are function, function_graph and nop";
		return -EINVAL;
	}
	if (t == FTRT_GRAPH && !ftrt_graph_safe()) {
		last_why = "function_graph cannot follow this program's C++ exceptions (its unwinder is linked in statically)";
		return -ENOTSUP;
	}
	ftrt_modules_lock();
	int err = 0;
	want_tracer = t;
	if (ftrt_mode && ftrt_mode != t) {
		err = ready();
		if (!err)
			err = ftrt_live_index_all();
		if (!err)
			err = untrampoline();
		if (!err) {
			if (ftrt_mode == FTRT_NOP && t != FTRT_NOP && !ftrt_tracing()) {
				ftrt_mode = t;
				err = ftrt_live_open_trace(want_tracer);
			}
			__atomic_store_n(&ftrt_mode, t, __ATOMIC_RELAXED);
			if (ftrt_tracing() && !ftrt_paused)
				ftrt_trace_go();
		}
	}
	ftrt_modules_release();
	return err;
}

const char *ftrt_live_tracer_name(void)
{
	int t = ftrt_mode ? ftrt_mode : want_tracer;
	return t == FTRT_FUNCTION ? FTRT_TRACER_FUNCTION : t == FTRT_GRAPH ? FTRT_TRACER_GRAPH : FTRT_TRACER_NOP;
}

/* No lock: tracing_on and tracing_off are async-signal-safe. The fast
 * paths' flags are cleared after paused is set, and ftrt_trace_go clears
 * them again when it finds paused set after writing them, so a resume
 * or a change of tracer racing a pause never leaves them on. */
void ftrt_live_pause(int pause)
{
	if (pause) {
		__atomic_store_n(&ftrt_paused, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&ftrt_fast_function, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&ftrt_fast_graph, 0, __ATOMIC_SEQ_CST);
	} else if (__atomic_exchange_n(&ftrt_paused, 0, __ATOMIC_SEQ_CST) && ftrt_tracing()) {
		ftrt_trace_go();
	}
}

size_t ftrt_live_enabled(void)
{
	ftrt_modules_lock();
	size_t k = 0;
	if (ftrt_live_index_all() == 0)
		for (int i = 0; i < FTRT_MOD_MAX; i++) {
			struct live_mod *l = &ftrt_live_mods[i];
			if (!l->md || !l->md->live)
				continue;
			for (size_t j = 0; j < l->n; j++)
				k += l->traced[j];
		}
	ftrt_modules_release();
	return k;
}
