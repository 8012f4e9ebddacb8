/*
 * The core layer's interface. core/ owns what every layer above shares:
 * the settings and the environment read once (env.c), the config record
 * ftpatch enable rewrites (config.c, which the module stub builds too);
 * every warning on the program's stderr (say.c); the clock of every
 * record (clock.h, clock.c); the module registry and each module's
 * function symbols (registry.c, symbols.c); glob lists (filter.h,
 * filter.c); and the ops' grace periods (grace.c). ftrt.h holds the
 * registry's and the runtime's shared declarations.
 *
 * It may call arch/ and abi.h. The registry tells the layers above of
 * a module's arrival, pass, change and unloading only through what they
 * give it (ftrt.h's struct ftrt_modules_calls, wired by
 * process/lifetime.c).
 */
#ifndef FTRT_CORE_H
#define FTRT_CORE_H

#include "clock.h"
#include "filter.h"
#include "ftrt.h"
#include "grace.h"
#include "say.h"

#endif
