/*
 * Subtree filters at record time, as the kernel's set_graph_function
 * and set_graph_notrace: which graphed calls are recorded.
 *
 *   FTRACE_GRAPH_FUNCS=glob,...    record only calls made while a chosen
 *                                  function runs on the stack: the chosen
 *                                  call itself and everything it calls,
 *                                  however deep; nothing outside
 *   FTRACE_GRAPH_NOTRACE=glob,...  record neither a named function's
 *                                  call nor anything it calls (it wins
 *                                  over FTRACE_GRAPH_FUNCS inside it)
 *
 * Globs and `!` exclusions are FTRACE_FILTER's, matched by filter.c at the
 * load-time pass (also of a file pre-patched by ftpatch enable, whose
 * sites it only reads), which marks each traced site of a named function
 * (MARK_CHOSEN or MARK_NOTRACE, layout.h) in a table per module kept
 * here. The tracer (graph.c's ftrt_graph_push) asks for a site's mark at each
 * call it sees (ftrt_subtree_mark) and keeps, per shadow stack, how many
 * chosen and notrace calls are live on it (struct shadow_stack's chosen
 * and notrace): a count, not a flag, so that recursion and a chosen
 * function called inside another work. Each shadow entry carries its
 * mark, and every pop gives it back, whatever pops it: a return, a
 * longjmp seen at the next call (unwind_to), an exception's landing pad
 * (drop_to), the thread's exit. So the decision of a call needs nothing
 * but its stack's counts and its own mark:
 *
 *   inside a notrace call (notrace > 0)         not graphed
 *   a notrace site                              graphed, unrecorded: its return
 *                                               must be seen to end the silence
 *   a chosen site                               graphed and recorded
 *   anything else, FTRACE_GRAPH_FUNCS set,      not graphed: it runs as if
 *   no chosen call live (chosen == 0)           untraced, nothing pushed
 *   anything else                               graphed and recorded
 *
 * Nothing outside a chosen call is pushed but notrace calls, and nothing
 * at all inside one of those, so while a chosen call is live on a stack
 * the outermost is the stack's first entry: FTRACE_DEPTH, which bounds a
 * stack's entries, counts from it. A context made by makecontext has a
 * shadow stack, and so counts, of its own.
 *
 * The assembly fast paths cannot search the tables. They test a bit per
 * site instead, ftrt_subtree_maybe[(site >> 4) % SUBTREE_BITS], set for
 * every marked site (and never cleared: a module unloaded leaves its bits,
 * which only send other sites to C): a site whose bit is clear is not
 * marked, and its call is decided by the counts alone; any other goes to
 * the C path, which looks it up.
 *
 * A table is made at its module's pass, before any of its sites is
 * enabled, published by a release store, and read without a lock by the
 * tracer, in signal handlers too. It goes when its module is unloaded
 * (dlclose): a reader looks at a table's sites only when the call's site
 * lies in the table's module, whose code no thread runs after dlclose.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "core/ftrt.h"
#include "record/stack.h"
#include "subtree.h"

__attribute__((visibility("hidden"), aligned(64))) uint64_t ftrt_subtree_maybe[SUBTREE_BITS / 64];
_Static_assert((SUBTREE_BITS & (SUBTREE_BITS - 1)) == 0 && SUBTREE_BITS % 64 == 0,
	       "entry.S takes a site's bit by masks and shifts");

/* A module's marked sites: n addresses, sorted, then their n marks. */
struct marked {
	size_t n, bytes; /* bytes: the mapping's size */
	uintptr_t ip[];  /* then unsigned char mark[n] */
};

/* One table per module record (registry.c), by its owner number - 1. lo
 * and hi are its module's extent; t is published last. */
static struct {
	_Atomic uintptr_t lo, hi;
	_Atomic(struct marked *) t;
} tables[FTRT_MOD_MAX];
static _Atomic int ntables; /* tables[0, ntables) may have been published */
/* Each module's marked library-call slots (patch/libcall.c: a slot's
 * address is what a library call is recorded under), in the same
 * layout, looked up when its sites' table has not the address. */
static _Atomic(struct marked *) slot_tables[FTRT_MOD_MAX];

/* A table of n marks, writable, its marks at *mk: NULL when none can be
 * made. */
static struct marked *table_new(size_t n, unsigned char **mk)
{
	size_t bytes = sizeof(struct marked) + n * (sizeof(uintptr_t) + 1);
	struct marked *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return NULL;
	t->n = n;
	t->bytes = bytes;
	*mk = (unsigned char *)(t->ip + n);
	return t;
}

/* Mark i of t is ip's: its bit set for the fast paths. */
static void table_put(struct marked *t, unsigned char *mk, size_t i, uintptr_t ip, unsigned char mark)
{
	t->ip[i] = ip;
	mk[i] = mark;
	uintptr_t bit = (ip >> 4) % SUBTREE_BITS;
	__atomic_fetch_or(&ftrt_subtree_maybe[bit / 64], 1ull << (bit % 64), __ATOMIC_RELAXED);
}

/* t, filled, published as module owner's (its extent [lo, hi)) in *at:
 * read-only from now, and read without a lock; what *at held before
 * goes (a module's pass runs once: never). */
static void table_publish(int owner, uintptr_t lo, uintptr_t hi, struct marked *t, _Atomic(struct marked *) *at)
{
	mprotect(t, t->bytes, PROT_READ);
	int k = owner - 1;
	atomic_store_explicit(&tables[k].lo, lo, memory_order_relaxed);
	atomic_store_explicit(&tables[k].hi, hi, memory_order_relaxed);
	struct marked *was = atomic_exchange_explicit(at, t, memory_order_acq_rel);
	if (was)
		munmap(was, was->bytes);
	int have = atomic_load_explicit(&ntables, memory_order_relaxed);
	while (have < owner && !atomic_compare_exchange_weak_explicit(&ntables, &have, owner, memory_order_release, memory_order_relaxed))
		;
}

int ftrt_subtree_add(int owner, uintptr_t lo, uintptr_t hi, const uintptr_t *s, const unsigned char *want,
		     const unsigned char *marks, size_t m)
{
	if (owner < 1 || owner > FTRT_MOD_MAX)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < m; i++)
		n += marks[i] && want[i] != WANT_NOP;
	if (n == 0)
		return 0;
	unsigned char *mk;
	struct marked *t = table_new(n, &mk);
	if (!t)
		return -1;
	for (size_t i = 0, j = 0; i < m; i++)
		if (marks[i] && want[i] != WANT_NOP)
			table_put(t, mk, j++, s[i], marks[i]);
	table_publish(owner, lo, hi, t, &tables[owner - 1].t);
	return 0;
}

int ftrt_subtree_add_slots(int owner, uintptr_t lo, uintptr_t hi, const uintptr_t *ips, const unsigned char *marks, size_t n)
{
	if (owner < 1 || owner > FTRT_MOD_MAX)
		return -1;
	if (n == 0)
		return 0;
	unsigned char *mk;
	struct marked *t = table_new(n, &mk);
	if (!t)
		return -1;
	for (size_t i = 0; i < n; i++)
		table_put(t, mk, i, ips[i], marks[i]);
	table_publish(owner, lo, hi, t, &slot_tables[owner - 1]);
	return 0;
}

void ftrt_subtree_release(int owner)
{
	if (owner < 1 || owner > FTRT_MOD_MAX)
		return;
	struct marked *t = atomic_exchange_explicit(&tables[owner - 1].t, NULL, memory_order_acq_rel);
	if (t)
		munmap(t, t->bytes);
	t = atomic_exchange_explicit(&slot_tables[owner - 1], NULL, memory_order_acq_rel);
	if (t)
		munmap(t, t->bytes);
}

/* ip's mark in t, or 0. */
static int find_mark(const struct marked *t, uintptr_t ip)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->ip[mid] < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->n && t->ip[lo] == ip)
		return ((const unsigned char *)(t->ip + t->n))[lo];
	return 0;
}

int ftrt_subtree_lookup(uintptr_t ip)
{
	int n = atomic_load_explicit(&ntables, memory_order_acquire);
	for (int k = 0; k < n; k++) {
		struct marked *t = atomic_load_explicit(&tables[k].t, memory_order_acquire);
		struct marked *st = atomic_load_explicit(&slot_tables[k], memory_order_acquire);
		if ((!t && !st) || ip < atomic_load_explicit(&tables[k].lo, memory_order_relaxed) ||
		    ip >= atomic_load_explicit(&tables[k].hi, memory_order_relaxed))
			continue;
		int mark = t ? find_mark(t, ip) : 0;
		return mark ? mark : st ? find_mark(st, ip) : 0;
	}
	return 0;
}

