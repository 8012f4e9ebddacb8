/*
 * ops.c's work for ftrace.h's ops functions (api.c): each 0 or more, or
 * -errno with ftrt_ops_why saying why.
 */
#ifndef FTRT_OPS_H
#define FTRT_OPS_H

struct ftrace_ops;

/* The ops of a graph user (tracers/fgraph.c): the list calls it after
 * the tracer, so a call the tracer pushed is on top when the user's
 * entry runs. */
#define FTRT_OPS_FL_AFTER (1ul << 24)

int ftrt_ops_register(struct ftrace_ops *ops) __attribute__((visibility("hidden")));
int ftrt_ops_unregister(struct ftrace_ops *ops) __attribute__((visibility("hidden")));
/* The sites ops's filter (notrace: its notrace list) now chooses. */
int ftrt_ops_filter(struct ftrace_ops *ops, const char *globs, int reset, int notrace) __attribute__((visibility("hidden")));
/* In place of ops's filters, choose(o, i) chooses site i of module
 * o + 1 (the live index's, ftrt_live_mods): called with the registry's
 * lock whenever the sites are chosen anew (capture.c's table). */
#include <stddef.h>
int ftrt_ops_choose(struct ftrace_ops *ops, int (*choose)(int o, size_t i)) __attribute__((visibility("hidden")));
/* Direct calls: register (addr the trampoline), modify (to addr),
 * unregister (addr the one registered; free: reset the filters). */
int ftrt_ops_direct(struct ftrace_ops *ops, unsigned long addr) __attribute__((visibility("hidden")));
int ftrt_ops_direct_modify(struct ftrace_ops *ops, unsigned long addr) __attribute__((visibility("hidden")));
int ftrt_ops_direct_unregister(struct ftrace_ops *ops, unsigned long addr, int free) __attribute__((visibility("hidden")));
const char *ftrt_ops_why(void) __attribute__((visibility("hidden")));

#endif
