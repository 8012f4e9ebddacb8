/*
 * The patch layer's interface. patch/ owns changing the program's sites:
 * the load-time pass over each module's site table (patch.c, and
 * sites.c's walk that classifies and writes each site; pass.h what they
 * share), and live changes while the program's threads run them (live.c:
 * enable, disable, change tracer, pause, by function name; liveindex.c:
 * every module's sites by function name; live.h what the live part
 * shares with arch/'s poke.c and text.c and process/trap.c). The bytes
 * of a site, and how a change is written into running code, are each
 * ISA's (arch/).
 *
 * It may call record/, core/, arch/ and abi.h. Today it still reaches
 * up, and the next steps of the runtime's layering remove each of these
 * (runtime/layers.txt counts them):
 *   - live.c tells tracers/ops.c of a site changed or a module added
 *     (ftrt_ops_site, ftrt_ops_direct_known, ftrt_ops_added,
 *     ftrt_ops_registered), and installs process/trap.c's SIGTRAP
 *     handler (ftrt_trap_install) before its first batch;
 *   - patch.c adds a module's subtree filters (tracers/subtree.c's
 *     ftrt_subtree_add); it and sites.c include tracers/graph.h.
 */
#ifndef FTRT_PATCH_H
#define FTRT_PATCH_H

#include "live.h"
#include "liveindex.h"
#include "pass.h"

#endif
