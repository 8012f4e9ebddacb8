/*
 * The pre-function literal (the kernel's CALL_OPS layout). With
 * -fpatchable-function-entry=4,2 and 8-byte aligned functions, the two
 * NOPs before a function are an 8-byte aligned slot:
 *       F-8   .quad ops                the literal: an ops record's address
 *       F     [bti c;] mov x9, x30     the site
 *             bl ftrace_ops_caller
 * ftrace_ops_caller finds the literal from its return address, (x30 &
 * ~7) - 16 (with or without bti c), and calls the record's handler: the
 * tracer is the function's own, chosen by one aligned 64-bit store, with
 * no process-wide switch on the way. The literal is written before the
 * bl that makes the site read it, and read only by such a site.
 *
 * What is a literal is the compiler's to say: its list of patchable
 * areas (__patchable_function_entries) holds, for a =4,2 function, the
 * slot's address. Two NOPs before a function may be alignment padding
 * or the tail of the function before; only a listed slot is written. A
 * listed slot that is not 8-byte aligned (gcc does not align cold
 * functions) cannot be stored to atomically: its function takes the
 * shared path, ftrace_caller, counted (misaligned).
 *
 * Used by the load-time pass (site.c, tramp.c), single-threaded under
 * the registry's lock; calls nothing but mmap, qsort and munmap.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/site.h"
#include "insn.h"
#include "literal.h"

/*
 * The module's patchable areas, sorted (ftrt_arch_areas): read where
 * linked when in order, else a sorted copy. Set for one module's pass.
 */
static const uintptr_t *areas;
static size_t nareas;
static uintptr_t *areas_copy;
static size_t areas_bytes;

static int cmp_area(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

void ftrt_arch_areas(const uintptr_t *start, const uintptr_t *end)
{
	if (areas_copy)
		munmap(areas_copy, areas_bytes);
	areas = NULL, nareas = 0, areas_copy = NULL;
	size_t n = start && end > start ? (size_t)(end - start) : 0;
	if (!n)
		return;
	size_t sorted = 1;
	for (size_t i = 1; i < n && sorted; i++)
		sorted = start[i - 1] <= start[i];
	if (sorted) {
		areas = start, nareas = n;
		return;
	}
	areas_bytes = n * sizeof *start;
	uintptr_t *c = mmap(NULL, areas_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return; /* no areas known: every site takes the shared path */
	memcpy(c, start, areas_bytes);
	qsort(c, n, sizeof *c, cmp_area);
	areas = areas_copy = c, nareas = n;
}

/* Whether a patchable area starts at a. */
static int area_at(uintptr_t a)
{
	size_t lo = ftrt_lower_bound(areas, nareas, a);
	return lo < nareas && areas[lo] == a;
}

/* Whether the word at p is a landing pad a function may start with. */
static int is_bti(uintptr_t p)
{
	uint32_t w = arm64_word((const unsigned char *)p);
	return w == ARM64_BTI_C || w == ARM64_BTI_JC;
}

/*
 * What the patchable area at the entry site ip is: AREA_LITERAL (its
 * literal at *lit, 8-byte aligned), AREA_MISALIGNED (a slot before the
 * function that is not 8-byte aligned), AREA_PLAIN (an area without a
 * slot: =2), or AREA_NONE (no area the compiler listed: a -pg site, or
 * a module without the list). The site is the function's first word,
 * or its second after a landing pad; an area starts at the site (=2) or
 * 8 bytes before the function (=4,2). Reads the word before the site
 * only when an area starts before it.
 */
int ftrt_arm64_area(uintptr_t ip, uintptr_t *lit)
{
	if (!nareas)
		return AREA_NONE;
	if (area_at(ip))
		return AREA_PLAIN;
	uintptr_t l = ((ip + 8) & ~(uintptr_t)7) - 16; /* where ftrace_ops_caller looks */
	if (area_at(l) && (ip == l + 8 || (ip == l + 12 && is_bti(ip - 4)))) {
		*lit = l;
		return AREA_LITERAL;
	}
	if (area_at(ip - 8) || (area_at(ip - 12) && is_bti(ip - 4)))
		return AREA_MISALIGNED;
	return AREA_NONE;
}

/* The runtime's ops record for tracer (FTRT_FUNCTION, FTRT_GRAPH;
 * ftrt_ops_nop for any other). */
const struct ftrt_ops *ftrt_arm64_tracer_ops(int tracer)
{
	return ftrt_arch_entries.tracer_ops[tracer == FTRT_GRAPH || tracer == FTRT_FUNCTION ? tracer : 0];
}

/* The ops record the literal at lit points at, when it is one of the
 * runtime's; NULL otherwise. */
const struct ftrt_ops *ftrt_arm64_literal_ops(uintptr_t lit)
{
	uintptr_t v = __atomic_load_n((const uintptr_t *)lit, __ATOMIC_RELAXED);
	for (int tracer = 0; tracer <= FTRT_NOP; tracer++)
		if (v == (uintptr_t)ftrt_arm64_tracer_ops(tracer))
			return ftrt_arm64_tracer_ops(tracer);
	return NULL;
}

/* The literal of the entry site ip, 0 when it has none. */
uintptr_t ftrt_arm64_literal(uintptr_t ip)
{
	uintptr_t lit = 0;
	return ftrt_arm64_area(ip, &lit) == AREA_LITERAL ? lit : 0;
}
