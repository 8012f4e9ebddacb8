/*
 * The process layer's interface. process/ owns the process around the
 * trace: when tracing begins and ends (lifetime.c: .preinit_array, and
 * after the last destructor; it wires the layers below together), exec
 * and spawn (exec.c), _exit and _Exit (exit.c), the signals the runtime
 * takes first (trap.c: SIGTRAP for live changes, faults under the flight
 * recorder), the control socket ftpatch ctl talks to (ctl.c), and the
 * public API (src/ftrace.h, installed for the programs that link the
 * runtime; api.c).
 *
 * It may call every layer below it: tracers/, patch/, record/, core/,
 * arch/ and abi.h. It is the top layer: nothing below reaches it but
 * through what lifetime.c registers with each layer at start (the
 * registry's calls, ftrt_patch_calls, ftrt_trace_arm, and through the
 * tracers' ftrt_tracers_wire the record layer's and arch's). The public
 * API's header, ftrace.h, lies beside abi.h, below every layer: its
 * types are the tracers' and the ISA's too.
 */
#ifndef FTRT_PROCESS_H
#define FTRT_PROCESS_H

#include <stdint.h>

#include "ftrace.h"

/* trap.c. Take SIGTRAP (once): the program's action, as it was, is kept
 * and run for every trap that is not the runtime's. 0, or -errno. */
int ftrt_trap_install(void) __attribute__((visibility("hidden")));
/* After ftpatch record -p's end, every site back as it was (no int3 of
 * the runtime's left in code): SIGTRAP's action the program's again,
 * unless the runtime holds it from the start (the program links the API
 * or listens) or a thread has a SIGTRAP still pending. 0 given back (or
 * nothing to give), -EBUSY kept. */
int ftrt_trap_release(void) __attribute__((visibility("hidden")));
/* Take the signals a fault raises, and SIGABRT (the flight recorder,
 * at the trace's start): a death of one writes the rings first. */
void ftrt_trap_fatal(void) __attribute__((visibility("hidden")));
/* At start, before any thread: arm the wrappers when the program links
 * the API. */
void ftrt_trap_start(void) __attribute__((visibility("hidden")));

/* preload.c (the preloaded runtime alone). Describe the module whose
 * file is path, loaded so that inside is an address in it: its tables
 * (core/tables.c, into *t) and targets. 0, or -1 when its file cannot be
 * read (m then has no table). */
struct ftrt_module;
struct ftrt_tables;
int ftrt_preload_describe(struct ftrt_module *m, const char *path, uintptr_t inside, struct ftrt_tables *t)
	__attribute__((visibility("hidden")));
/* Whether this runtime was loaded into the process after its start (a
 * dlopen: ftpatch's attach), not with it: its file is named in neither
 * of the lists the loader preloads at a start (LD_PRELOAD, read only
 * outside secure execution; /etc/ld.so.preload). No program lists it as needed: it is only ever
 * preloaded or loaded so. */
int ftrt_preload_late(void) __attribute__((visibility("hidden")));
/* Register every loaded shared object with sites that neither links the
 * module stub nor is registered yet (at start). */
void ftrt_preload_scan(void) __attribute__((visibility("hidden")));
/* The loader's list changed (a dlopen mapped objects it has not
 * relocated yet, or a dlclose unmapped some; loader.c, under the
 * loader's lock): unregister the served objects gone, serve the new
 * ones. */
void ftrt_preload_rescan(void) __attribute__((visibility("hidden")));
/* loader.c (the preloaded runtime alone): at start, have the loader's
 * changes to its list of objects call ftrt_preload_rescan. */
void ftrt_loader_watch(void) __attribute__((visibility("hidden")));

#endif
