/*
 * The core layer's interface. core/ owns what every layer above shares:
 * the process-wide state and counters the fast paths read (state.c);
 * the settings, the environment read once (env.c, options.c) and the
 * config record ftpatch enable rewrites (config.c, which the module stub
 * builds too); every warning on the program's stderr (say.c); the clock
 * of every record (clock.c); the module registry and each module's
 * function symbols (registry.c, symbols.c); glob lists (filter.c); and
 * the ops' grace periods (grace.c). ftrt.h holds the runtime's shared
 * declarations until each layer's part of it moves to that layer's
 * interface.
 *
 * It may call arch/ and abi.h. Today it still reaches up, and the next
 * steps of the runtime's layering remove each of these, through a
 * callback the higher layer registers or a declaration moved down
 * (runtime/layers.txt counts them):
 *   - registry.c releases a module's subtree filters (tracers/subtree.c's
 *     ftrt_subtree_release) when it is unloaded; options.c asks
 *     tracers/unwind.c whether the unwinder is hooked (ftrt_graph_safe);
 *     clock.c reads the clock with record/tracer.h's now and mono_ns;
 *   - its files include the headers that still declare their functions
 *     or state: record/tracer.h (clock.c, state.c), patch/pass.h
 *     (options.c, filter.c), patch/live.h (grace.c, for arch/text.c's
 *     ftrt_text_sync), tracers/graph.h (options.c, registry.c).
 */
#ifndef FTRT_CORE_H
#define FTRT_CORE_H

#include "ftrt.h"
#include "grace.h"
#include "say.h"

#endif
