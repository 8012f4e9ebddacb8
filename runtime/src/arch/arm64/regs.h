/*
 * arm64's struct ftrace_regs (the kernel's name and layout for arm64):
 * what ftrace_caller and ftrace_ops_caller (entry.S) save of a function's
 * state at its entry site, before its prologue, and hand the C side. A
 * multiple of 16 bytes, so it sits in a frame with sp aligned.
 *
 *   x0-x7  the arguments (x0, x1 the result too, at a return)
 *   x8     an indirect result's address
 *   fp     x29 at the site: the caller's frame record
 *   lr     the function's return address (x9 at the site: the parent
 *          ip), which function_graph replaces with return_to_handler;
 *          the trampoline returns with x30 = lr
 *   sp     the stack pointer at the site
 *   pc     where the function goes on (x30 at the trampoline's entry:
 *          the site + 8); the trampoline returns there
 *   kind   FREGS_ENTRY (a patchable area: pc may change) or
 *          FREGS_MCOUNT (a -pg site, after the prologue: fp is the
 *          function's frame record, sp that too, and x0-x7 are not its
 *          arguments, which gcc keeps elsewhere around _mcount); set by
 *          the ops callers (ops.S) alone
 *   direct 0, or a direct trampoline (ops.c's handlers set it): the
 *          ops caller branches there on its way out, with x30 the
 *          return into the function and x9 the parent ip, as the
 *          site's bl would have entered it
 *   prologue  1 at a site made from a prologue (ftpatch instrument,
 *          record -P), whose ops caller keeps every register: a graph
 *          user's return from it keeps them too (fgraph.c)
 *   q      q0-q7: the floating-point arguments, saved by the ops
 *          callers alone (the tracer's C never touches them)
 *
 * The tracer's trampolines (entry.S) lay out the part before kind
 * (FREGS_BASE bytes, in a frame of FREGS_BASE rounded up to 16); a
 * struct ftrace_regs a program's callback sees is always an ops
 * caller's, whole. The FREGS_* offsets are for the assembly, which cannot see the struct;
 * the struct checks them.
 */
#ifndef FTRT_ARM64_REGS_H
#define FTRT_ARM64_REGS_H

#define FREGS_X0 0
#define FREGS_FP 72
#define FREGS_LR 80
#define FREGS_SP 88
#define FREGS_PC 96
#define FREGS_BASE 104 /* the part the tracer's trampolines save (entry.S), to pc */
#define FREGS_KIND 104
#define FREGS_DIRECT 112
#define FREGS_PROLOGUE 120
#define FREGS_Q 128
#define FREGS_SIZE 256

#define FREGS_ENTRY 0
#define FREGS_MCOUNT 1

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

struct ftrace_regs {
	uint64_t x[9]; /* x0-x8 */
	uint64_t fp;
	uint64_t lr;
	uint64_t sp;
	uint64_t pc;
	uint64_t kind;
	uint64_t direct, prologue;
	uint64_t q[8][2];
};
_Static_assert(offsetof(struct ftrace_regs, x) == FREGS_X0, "FREGS_X0");
_Static_assert(offsetof(struct ftrace_regs, fp) == FREGS_FP, "FREGS_FP");
_Static_assert(offsetof(struct ftrace_regs, lr) == FREGS_LR, "FREGS_LR");
_Static_assert(offsetof(struct ftrace_regs, sp) == FREGS_SP, "FREGS_SP");
_Static_assert(offsetof(struct ftrace_regs, pc) == FREGS_PC, "FREGS_PC");
_Static_assert(offsetof(struct ftrace_regs, kind) == FREGS_KIND && offsetof(struct ftrace_regs, direct) == FREGS_DIRECT &&
		       offsetof(struct ftrace_regs, prologue) == FREGS_PROLOGUE &&
		       offsetof(struct ftrace_regs, q) == FREGS_Q,
	       "FREGS_Q");
_Static_assert(sizeof(struct ftrace_regs) == FREGS_SIZE && FREGS_SIZE % 16 == 0, "FREGS_SIZE");
#endif

#endif
