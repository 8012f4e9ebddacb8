/*
 * x86-64's struct ftrace_regs: what the ops callers (ops.S) save of a
 * function's state at its site and hand the ops (ftrace.h's accessors,
 * fregs.c). A multiple of 16 bytes, at a 16-byte aligned stack pointer
 * (the vector registers are stored aligned).
 *
 *   di si dx cx r8 r9  the integer arguments
 *   ax                 the number of vector registers a varargs call
 *                      uses; the return value, when the function is
 *                      made to return at once
 *   r10                a GNU C nested function's static chain
 *   bp                 rbp at the site
 *   sp                 where the function's return address (the parent
 *                      ip) is: its stack pointer at its entry
 *   ip                 where the function goes on (the site's end); a
 *                      callback at an entry site may change it
 *   kind               the site's: FREGS_ENTRY (ip may change),
 *                      FREGS_MCOUNT (after the prologue), FREGS_CHAIN
 *                      (after a nested function's push %r10)
 *   prologue           1 at a site made from a prologue (ftpatch
 *                      instrument, record -P), whose ops caller keeps
 *                      every register: a graph user's return from it
 *                      keeps them too (fgraph.c)
 *   direct             0, or a direct trampoline (ops.c's handlers set
 *                      it): the ops caller jumps there on its way out,
 *                      with every register and the stack as the site's
 *                      call of it would have left them
 *   grace              the ops caller's: the thread's grace slot while
 *                      it walks inline (grace.h)
 *   xmm                xmm0-7: the floating-point arguments
 *
 * The FREGS_* offsets are for the assembly; the struct checks them.
 */
#ifndef FTRT_X86_64_REGS_H
#define FTRT_X86_64_REGS_H

#define FREGS_DI 0
#define FREGS_SI 8
#define FREGS_DX 16
#define FREGS_CX 24
#define FREGS_R8 32
#define FREGS_R9 40
#define FREGS_AX 48
#define FREGS_R10 56
#define FREGS_BP 64
#define FREGS_SP 72
#define FREGS_IP 80
#define FREGS_KIND 88
#define FREGS_PROLOGUE 92
#define FREGS_DIRECT 96
#define FREGS_GRACE 104 /* the ops caller's own: the thread's grace slot (inline path) */
#define FREGS_XMM 112
#define FREGS_SIZE 240

#define FREGS_ENTRY 0
#define FREGS_MCOUNT 1
#define FREGS_CHAIN 2

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

struct ftrace_regs {
	uint64_t di, si, dx, cx, r8, r9;
	uint64_t ax, r10, bp, sp, ip;
	uint32_t kind, prologue;
	uint64_t direct, grace;
	uint64_t xmm[8][2];
};
_Static_assert(offsetof(struct ftrace_regs, di) == FREGS_DI && offsetof(struct ftrace_regs, r9) == FREGS_R9 &&
		       offsetof(struct ftrace_regs, ax) == FREGS_AX && offsetof(struct ftrace_regs, r10) == FREGS_R10 &&
		       offsetof(struct ftrace_regs, bp) == FREGS_BP && offsetof(struct ftrace_regs, sp) == FREGS_SP &&
		       offsetof(struct ftrace_regs, ip) == FREGS_IP && offsetof(struct ftrace_regs, kind) == FREGS_KIND &&
		       offsetof(struct ftrace_regs, prologue) == FREGS_PROLOGUE &&
		       offsetof(struct ftrace_regs, direct) == FREGS_DIRECT && offsetof(struct ftrace_regs, grace) == FREGS_GRACE &&
		       offsetof(struct ftrace_regs, xmm) == FREGS_XMM && sizeof(struct ftrace_regs) == FREGS_SIZE &&
		       FREGS_SIZE % 16 == 0 && FREGS_XMM % 16 == 0,
	       "arch/x86_64/regs.h: struct ftrace_regs");
#endif

#endif
