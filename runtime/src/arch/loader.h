/*
 * The loader's debugger hook (the preloaded runtime's, process/loader.c):
 * the function the loader calls at each change of its list of objects
 * (r_debug's r_brk, glibc's _dl_debug_state: a `ret` alone), made to
 * jump to ftrt_loader_entry, which calls ftrt_loader_call with every
 * register kept, and returns for it.
 *
 *   loaderentry.S (per ISA)  ftrt_loader_entry: the entry, which saves
 *                            every register the loader's code may keep
 *                            across the call (gcc's -fipa-ra sees r_brk
 *                            change none), the vector registers too
 *                            (ftrt_loader_call runs C library code)
 *   loader.c (per ISA)       the shapes r_brk may take, the jump written
 *                            over it through the code writer (text.c),
 *                            and the page within reach that leads on to
 *                            the entry
 */
#ifndef FTRT_ARCH_LOADER_H
#define FTRT_ARCH_LOADER_H

#include <stdint.h>

/* What ftrt_loader_entry calls: given by the layer that watches the
 * loader before the hook is made. */
extern void (*ftrt_loader_call)(void) __attribute__((visibility("hidden")));

/* The hook's entry (loaderentry.S): reached by a jump from r_brk's first
 * instruction, with the stack as r_brk's caller left it. */
void ftrt_loader_entry(void) __attribute__((visibility("hidden")));

/* Make r_brk (brk) jump to ftrt_loader_entry: 0, or -1 with *why said
 * (an r_brk of another shape, no page within reach, no code writer);
 * nothing is changed then. Once, at start, with one thread. */
int ftrt_arch_loader_hook(uintptr_t brk, const char **why) __attribute__((visibility("hidden")));

#endif
