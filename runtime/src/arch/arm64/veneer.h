/*
 * Veneers: the runtime's stubs that take a site's bl to a trampoline
 * beyond bl's reach (veneer.c). Calls nothing.
 */
#ifndef FTRT_ARM64_VENEER_H
#define FTRT_ARM64_VENEER_H

#include <stdint.h>

/* A veneer to target within bl's reach of from (a site's bl), made on
 * first use; 0 when none can be placed there. Under the registry's
 * lock: the load-time pass, and live changes (poke.c), which threads
 * may race only to the page once it is executable, and through a site
 * written after. */
uintptr_t ftrt_arm64_veneer(uintptr_t from, uintptr_t target) __attribute__((visibility("hidden")));

/* `bl target` at `at`, through a veneer when target is beyond its reach;
 * 0 when none can be placed. */
uint32_t ftrt_arm64_bl_to(uintptr_t at, uintptr_t target) __attribute__((visibility("hidden")));

/* A page (4096 bytes) within bl's reach of from, mapped read-write (a
 * veneer page, or ops trampolines': opstramp.c); 0 when none can be. */
uintptr_t ftrt_arm64_map_near(uintptr_t from) __attribute__((visibility("hidden")));
/* Whether a bl at from reaches to. */
int ftrt_arm64_reaches(uintptr_t from, uintptr_t to) __attribute__((visibility("hidden")));

#endif
