/*
 * record -P's sites made at load from functions' prologues (prologue.c).
 */
#ifndef FTRT_PROLOGUE_H
#define FTRT_PROLOGUE_H

#include <stdint.h>

#include "core/ftrt.h"

/* Make the sites the server on FTRACE_PROLOGUE_SOCKET plans for the
 * module at path (its build-id build_id, "" for none), loaded at bias
 * with its code in [lo, hi), and add them to its description m (start,
 * stop, areas, prologues, prologue_funcs). Returns how many were made;
 * 0 when FTRACE_PROLOGUE_SOCKET is not set, or none was. */
int ftrt_prologue_make(struct ftrt_module *m, const char *path, const char *build_id, uintptr_t bias, uintptr_t lo, uintptr_t hi)
	__attribute__((visibility("hidden")));

/* Whether a lies in the trampolines' mapping of sites made from
 * prologues, which no module's segment holds: 1 with its extent in
 * [*lo, *hi), read-only and executable; 0 otherwise. */
int ftrt_prologue_region(uintptr_t a, uintptr_t *lo, uintptr_t *hi) __attribute__((visibility("hidden")));

#endif
