/*
 * The subtree filters (subtree.c): which sites the load-time pass marked
 * chosen or notrace by FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE (as
 * the kernel's set_graph_function and set_graph_notrace), kept by
 * module for the graph tracer's lookups (tracers/graph.c, and the
 * assembly's fast test of ftrt_subtree_maybe).
 */
#ifndef FTRT_SUBTREE_H
#define FTRT_SUBTREE_H

#include <stddef.h>
#include <stdint.h>

#include "arch/layout.h"

/* Which filters are on (ftrt_subtree) and their settings are
 * record/tracer.h's: the state the fast paths and the metadata read. A
 * site whose bit here is clear has no mark (the fast paths' test). */
extern uint64_t ftrt_subtree_maybe[SUBTREE_BITS / 64] __attribute__((visibility("hidden")));

/* The load-time pass of module `owner` (registry.c's number, 1..) marked
 * its sorted sites s[0, m) (marks[i]: MARK_CHOSEN, MARK_NOTRACE or 0);
 * those it enables (want[i] not WANT_NOP) are kept for lookups, in a
 * table of the module's, whose code lies in [lo, hi). Before the sites
 * are enabled. 0, or -1 when the table could not be made. */
int ftrt_subtree_add(int owner, uintptr_t lo, uintptr_t hi, const uintptr_t *s, const unsigned char *want,
		     const unsigned char *marks, size_t m) __attribute__((visibility("hidden")));
/* The module `owner` is unloaded: its table goes. */
/* The marks of module owner's library-call slots (n addresses, sorted,
 * each with its mark): looked up as its sites' are. */
int ftrt_subtree_add_slots(int owner, uintptr_t lo, uintptr_t hi, const uintptr_t *ips, const unsigned char *marks, size_t n)
	__attribute__((visibility("hidden")));
void ftrt_subtree_release(int owner) __attribute__((visibility("hidden")));
/* The mark of the site ip: a search of the tables. */
int ftrt_subtree_lookup(uintptr_t ip) __attribute__((visibility("hidden")));

/* The mark of the site ip (MARK_*, or 0), for the tracer: a site whose
 * bit in ftrt_subtree_maybe is clear has none (the test the assembly
 * fast paths make, see entry.S); the others are looked up. Lock-free. */
static inline int ftrt_subtree_mark(uintptr_t ip)
{
	uintptr_t bit = (ip >> 4) % SUBTREE_BITS;
	if (!(__atomic_load_n(&ftrt_subtree_maybe[bit / 64], __ATOMIC_RELAXED) >> (bit % 64) & 1))
		return 0;
	return ftrt_subtree_lookup(ip);
}

#endif
