/*
 * Where an ops record and a thread's grace slot lie, for the ops
 * callers' inline path (arch/x86_64/ops.S), which cannot see C's structs:
 * ops.c and grace.h check each value with _Static_assert.
 */
#ifndef FTRT_OPSLAYOUT_H
#define FTRT_OPSLAYOUT_H

/* struct ops_rec (ops.c) */
#define OPSREC_USER 8   /* struct ftrace_ops *user: NULL while not registered */
#define OPSREC_FLAGS 24 /* unsigned long flags: the ops's, as registered */
/* The flags that take the handler's path, not the inline one
 * (FTRACE_OPS_FL_RECURSION, FTRACE_OPS_FL_DIRECT). */
#define OPSREC_SLOW_FLAGS 0xa

/* struct ftrt_grace (grace.h) */
#define GRACE_W 0       /* uint64_t w: walks inside (low half), left (high) */
#define GRACE_SHARED 12 /* int shared: the slot every thread past the last shares */
#define GRACE_LEFT_LESS_ONE 0xffffffff /* GRACE_LEFT - 1: an outermost walk's leaving */

#endif
