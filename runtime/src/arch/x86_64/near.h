/*
 * x86-64's PLT, as site.c reads it through near.c (which also makes the
 * preloaded runtime's pages of jumps near a module's code).
 */
#ifndef FTRT_X86_64_NEAR_H
#define FTRT_X86_64_NEAR_H

#include <stdint.h>

/* What the PLT entry at t jumps to through its GOT slot; 0 when t is no
 * PLT entry inside the segment being walked. */
uintptr_t ftrt_x86_plt_target(uintptr_t t) __attribute__((visibility("hidden")));

#endif
