/*
 * Veneers: the runtime's stubs that take a site's bl to a trampoline
 * beyond bl's reach (veneer.c). Calls nothing.
 */
#ifndef FTRT_ARM64_VENEER_H
#define FTRT_ARM64_VENEER_H

#include <stdint.h>

/* A veneer to target within bl's reach of from (a site's bl), made on
 * first use; 0 when none can be placed there. Load-time pass only. */
uintptr_t ftrt_arm64_veneer(uintptr_t from, uintptr_t target) __attribute__((visibility("hidden")));

#endif
