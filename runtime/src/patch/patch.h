/*
 * The patch layer's interface. patch/ owns changing the program's sites,
 * as the kernel's ftrace core does: the load-time pass over each
 * module's site table (patch.c, and sites.c's walk that classifies and
 * writes each site; options.c, the environment and the process-wide
 * choices it makes; pass.h what they share); the subtree filters the
 * pass marks (subtree.c, subtree.h); live changes while the program's
 * threads run them (live.c: enable, disable, change tracer, pause, by
 * function name; liveindex.c: every module's sites by function name;
 * live.h); ftrace_ops, the callbacks registered on functions and the
 * site each calls (ops.c, ops.h); and library calls, a module's GOT
 * slots redirected to stubs the tracers' entry records (libcall.c,
 * libcall.h). The bytes of a site, and how a
 * change is written into running code, are each ISA's (arch/).
 *
 * It may call record/, core/, arch/ and abi.h. What it needs of the
 * layers above (SIGTRAP's handler, the tracer as one of a list of ops,
 * argument capture's table of a module, whether the unwinder is hooked)
 * it calls through ftrt_patch_up, below, which process/lifetime.c wires.
 */
#ifndef FTRT_PATCH_H
#define FTRT_PATCH_H

#include <stdint.h>

#include "libcall.h"
#include "live.h"
#include "liveindex.h"
#include "pass.h"
#include "subtree.h"

/*
 * What the layers above give the patch layer, which it calls through
 * these, never by name (lifetime.c wires them, before the program's
 * pass): the SIGTRAP handler's installation before a live batch, and its
 * release after ftpatch record -p's end (process/trap.c); the tracer as one of a site's list of ops, with the
 * registers the ops caller saved (tracers/<isa>/fregs.c); a module's
 * pass done, before the ops get its functions (tracers/capture.c's
 * table, which its chooser reads); whether a throw reaches the tracers'
 * unwinder hooks (tracers/unwind.c's, weak: NULL where no C++ catch
 * linked it), which function_graph needs.
 */
struct ftrace_regs;
struct ftrt_mod;
struct ftrt_patch_calls {
	int (*trap_install)(void);
	int (*trap_release)(void);
	void (*tracer)(uintptr_t ip, struct ftrace_regs *fregs);
	void (*added)(const struct ftrt_mod *md);
	int (*unwind_hooked)(void);
	void (*libcall_entry)(void); /* tracers/<isa>/libcall.S's ftrace_libcall: where a library call's stub goes */
};
extern struct ftrt_patch_calls ftrt_patch_up __attribute__((visibility("hidden")));
void ftrt_patch_wire(const struct ftrt_patch_calls *c) __attribute__((visibility("hidden")));

#endif
