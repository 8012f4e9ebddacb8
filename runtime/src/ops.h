/*
 * ops.c's work for ftrace.h's ops functions (api.c): each 0 or more, or
 * -errno with ftrt_ops_why saying why.
 */
#ifndef FTRT_OPS_H
#define FTRT_OPS_H

struct ftrace_ops;

int ftrt_ops_register(struct ftrace_ops *ops) __attribute__((visibility("hidden")));
int ftrt_ops_unregister(struct ftrace_ops *ops) __attribute__((visibility("hidden")));
/* The sites ops's filter (notrace: its notrace list) now chooses. */
int ftrt_ops_filter(struct ftrace_ops *ops, const char *globs, int reset, int notrace) __attribute__((visibility("hidden")));
const char *ftrt_ops_why(void) __attribute__((visibility("hidden")));

#endif
