/*
 * arm64's pre-function literal (literal.c): which patchable areas have
 * one, and the ops records a literal may point at.
 */
#ifndef FTRT_ARM64_LITERAL_H
#define FTRT_ARM64_LITERAL_H

#include <stdint.h>


/* What the patchable area at an entry site is (ftrt_arm64_area). */
enum {
	AREA_NONE,       /* no area the compiler listed: a -pg site, or a module built without the list */
	AREA_PLAIN,      /* an area without a slot before the function: =2 */
	AREA_LITERAL,    /* =4,2 with its slot 8-byte aligned: the literal */
	AREA_MISALIGNED, /* =4,2 with its slot not 8-byte aligned: the shared path */
};
/* What the area at the entry site ip is; sets *lit to the literal's
 * address for AREA_LITERAL. Needs the module's areas (ftrt_arch_areas). */
int ftrt_arm64_area(uintptr_t ip, uintptr_t *lit) __attribute__((visibility("hidden")));
/* The literal of the entry site ip, 0 when it has none. */
uintptr_t ftrt_arm64_literal(uintptr_t ip) __attribute__((visibility("hidden")));
/* The ops record the literal at lit points at when it is one of the
 * runtime's, else NULL. */
const struct ftrt_ops *ftrt_arm64_literal_ops(uintptr_t lit) __attribute__((visibility("hidden")));
/* The runtime's ops record for tracer (FTRT_FUNCTION, FTRT_GRAPH;
 * ftrt_ops_nop for any other). */
const struct ftrt_ops *ftrt_arm64_tracer_ops(int tracer) __attribute__((visibility("hidden")));

#endif
