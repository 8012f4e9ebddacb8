/*
 * The ops callers of arm64: where a site that an ops wants (ftrace.h's
 * struct ftrace_ops) goes, through a trampoline made for the ops
 * (opstramp.c), within bl's reach of the site:
 *
 *     ldr  x11, .+16      the record: one ops's, or a module's list
 *     ldr  x16, .+20      the caller below for the site's kind
 *     br   x16            (x16: a landing pad's `bti c` accepts it)
 *     brk  #0             never run
 *     .quad record
 *     .quad caller
 *
 * x11 and x16 are temporaries no caller keeps anything in across the
 * call the site is. The record's handler is called as the kernel calls
 * an ops's, handler(ip, parent_ip, record, fregs), with a whole struct
 * ftrace_regs (regs.h): the handler runs a program's callback, built
 * with the full calling convention, so q0-q7 (floating-point arguments)
 * are saved besides x0-x8, and every one comes back from the
 * ftrace_regs. A handler that sets fregs->direct sends the function
 * through a direct trampoline on the way out (the kernel's arm64
 * direct calls: x16 holds it).
 *
 * Frame (FRAME bytes below the site's sp, a frame record at its bottom,
 * so the unwinder and a debugger see the call):
 *     16-271  struct ftrace_regs, at REGS: x0-x8 at 16-80, fp at 88,
 *             lr at 96, sp at 104, pc at 112, kind at 120, direct at
 *             128, q0-q7 at 144-271
 *       8     x30 on entry (the return into the function)
 *       0     x29 on entry
 */
#include "abi.h"
#include "arch/arm64/args.h"
#include "arch/arm64/regs.h"

#define REGS 16
#define FRAME (REGS + FREGS_SIZE)
.if REGS + FREGS_X0 != 16 || FRAME > 504 || (REGS + FREGS_Q) % 16
.error "the ops callers' frame: x0 at 16, q0 16-byte aligned, stp's reach"
.endif

.macro SAVE_Q
	stp	q0, q1, [sp, #REGS + FREGS_Q]
	stp	q2, q3, [sp, #REGS + FREGS_Q + 32]
	stp	q4, q5, [sp, #REGS + FREGS_Q + 64]
	stp	q6, q7, [sp, #REGS + FREGS_Q + 96]
.endm

/*
 * The rest of the ftrace_regs (kind; direct: none yet; prologue: full),
 * then the
 * record's handler, handler(ip, parent_ip, record, fregs): ip the site,
 * x30 - back (its length); x9 the parent ip, x11 the record. Back from
 * it, the argument and vector registers are the ftrace_regs'.
 */
.macro CALL_HANDLER kind, back, full=0
	mov	x10, #\kind
	stp	x10, xzr, [sp, #REGS + FREGS_KIND]	/* kind; direct: none */
	mov	x10, #\full
	str	x10, [sp, #REGS + FREGS_PROLOGUE]	/* 1: a site made from a prologue */
	mov	x29, sp
	sub	x0, x30, #\back			/* arg 1: ip = the site */
	mov	x1, x9				/* arg 2: the parent ip */
	mov	x2, x11				/* arg 3: the record */
	add	x3, sp, #REGS			/* arg 4: the ftrace_regs */
	ldr	x16, [x11]			/* record->func */
	blr	x16
	RESTORE_Q
	RESTORE_ARGS
.endm

.macro RESTORE_Q
	ldp	q0, q1, [sp, #REGS + FREGS_Q]
	ldp	q2, q3, [sp, #REGS + FREGS_Q + 32]
	ldp	q4, q5, [sp, #REGS + FREGS_Q + 64]
	ldp	q6, q7, [sp, #REGS + FREGS_Q + 96]
.endm

/*
 * ftrace_ops_regs_caller: a patchable area's site, `mov x9, x30; bl`
 * to the trampoline. On entry x9 is the parent ip, x30 the return into
 * the function (site + 8), sp the function's at entry. On the way out
 * x0-x8 and q0-q7 are the ftrace_regs', x29 its fp, x30 its lr (the
 * parent ip, or function_graph's return_to_handler), and the function
 * goes on at its pc: a callback that changed it sends the function
 * elsewhere, with its arguments and its caller.
 */
	ENTRY	ftrace_ops_regs_caller
	stp	x29, x30, [sp, #-FRAME]!
	.cfi_def_cfa_offset FRAME
	.cfi_offset x29, -FRAME
	.cfi_offset x30, -FRAME + 8
	SAVE_ARGS				/* x0-x8 at 16-80 */
	SAVE_Q
	add	x10, sp, #FRAME			/* the site's sp */
	stp	x29, x9, [sp, #REGS + FREGS_FP]	/* fp, lr: the parent ip */
	stp	x10, x30, [sp, #REGS + FREGS_SP]	/* sp, pc: the return into the function */
	CALL_HANDLER FREGS_ENTRY, 8
	ldr	x16, [sp, #REGS + FREGS_DIRECT]	/* a direct trampoline, or 0 */
	cbnz	x16, 1f
	ldp	x29, x30, [sp, #REGS + FREGS_FP]	/* fp; lr */
	ldr	x9, [sp, #REGS + FREGS_PC]	/* where the function goes on */
	add	sp, sp, #FRAME
	.cfi_def_cfa_offset 0
	ret	x9
	.cfi_def_cfa_offset FRAME
	/* The direct trampoline, entered as the site's bl would have:
	 * x30 the return into the function, x9 the parent ip (lr: the
	 * tracer of a list may have hooked it). br x16: its landing pad's
	 * `bti c` accepts it. */
1:	ldp	x29, x9, [sp, #REGS + FREGS_FP]
	ldr	x30, [sp, #REGS + FREGS_PC]
	add	sp, sp, #FRAME
	.cfi_def_cfa_offset 0
	br	x16
	END	ftrace_ops_regs_caller

/*
 * ftrace_ops_regs_mcount_caller: a -pg site, `bl` to the trampoline in
 * place of `bl _mcount`, after the prologue. On entry x30 is the return
 * into the function (site + 4) and x29 its frame record, whose saved x30
 * (8(x29), perhaps signed: xpaclri strips it) is the parent ip. The
 * ftrace_regs' fp and sp are the frame record (the function's sp at
 * entry is its own prologue's to know), lr the parent ip, pc the return
 * into the function, which does not change: every register but x29 and
 * x30 comes back from the ftrace_regs, and the function goes on after
 * the site. The tracer, from a list, hooks the return in the frame
 * record itself (mcount.c).
 */
	ENTRY	ftrace_ops_regs_mcount_caller
	stp	x29, x30, [sp, #-FRAME]!
	.cfi_def_cfa_offset FRAME
	.cfi_offset x29, -FRAME
	.cfi_offset x30, -FRAME + 8
	SAVE_ARGS
	SAVE_Q
	ldr	x9, [x29, #8]			/* the function's saved return address */
	mov	x10, x30
	mov	x30, x9
	hint	#7				/* xpaclri: x30 without its authentication code */
	mov	x9, x30
	mov	x30, x10
	stp	x29, x9, [sp, #REGS + FREGS_FP]	/* fp: the frame record; lr: the parent ip */
	stp	x29, x30, [sp, #REGS + FREGS_SP]	/* sp: the frame record too; pc */
	CALL_HANDLER FREGS_MCOUNT, 4
	ldp	x29, x30, [sp], #FRAME		/* x29, x30 as on entry */
	.cfi_def_cfa_offset 0
	ret
	END	ftrace_ops_regs_mcount_caller

/*
 * ftrace_ops_prologue_caller: a site made from a function's prologue
 * (ftpatch instrument, record -P), `mov x17, x30; bl` to a trampoline of
 * the other form (opstramp.c):
 *
 *     str  x11, [sp, #-16]!   the function's callers may keep a value there
 *     ldr  x11, .+12          the record
 *     ldr  x16, .+16          this caller
 *     br   x16
 *
 * The function was compiled without tracing flags, so its callers may
 * keep values in any call-clobbered register across the call (gcc's
 * -fipa-ra, when it sees the function leave them alone): x9-x15 and x18
 * as well as the arguments, and v16-v31 and the upper halves of v8-v15,
 * which a callback built with the full calling convention may change.
 * All of them come back as they came; x16 and x17 alone change (a
 * veneer may change them anyway). On entry:
 *     x11  the record; the function's x11 at 0(sp)
 *     x17  the parent ip
 *     x30  the return into the trampoline (site + 8)
 *     sp   the function's at entry, less 16
 *
 * Frame (PFRAME bytes below the trampoline's push, a frame record at its
 * bottom): the ftrace_regs at REGS as the other callers' (lr = x17),
 * then
 *     FRAME+0    x9, x10       FRAME+32  x13, x14
 *     FRAME+16   x11, x12      FRAME+48  x15, x18   (x11 the record's)
 *     FRAME+64   q8-q31, 384 bytes
 *     PFRAME     the function's x11 (the trampoline's push)
 * On the way out x0-x8 and q0-q7 are the ftrace_regs', x29 its fp, x30
 * its lr, the function goes on at its pc through x16, and x11 comes from
 * the trampoline's slot. A direct trampoline is entered as the site's bl
 * would have entered it: x30 the return into the function, x17 the
 * parent ip (lr: the tracer of a list may have hooked it), x16 itself.
 */
#define PFRAME (FRAME + 64 + 384)
.if PFRAME % 16 || FRAME + 64 + 368 > 1008
.error "the prologue ops caller's frame: 16-byte aligned, q31 in stp's reach"
.endif
	ENTRY	ftrace_ops_prologue_caller
	.cfi_def_cfa_offset 16			/* the trampoline's push of x11 */
	sub	sp, sp, #PFRAME
	.cfi_def_cfa_offset PFRAME + 16
	stp	x29, x30, [sp]
	.cfi_offset x29, -PFRAME - 16
	.cfi_offset x30, -PFRAME - 8
	SAVE_ARGS				/* x0-x8 at 16-80 */
	SAVE_Q
	stp	x9, x10, [sp, #FRAME]
	stp	x11, x12, [sp, #FRAME + 16]
	stp	x13, x14, [sp, #FRAME + 32]
	stp	x15, x18, [sp, #FRAME + 48]
	stp	q8, q9, [sp, #FRAME + 64]
	stp	q10, q11, [sp, #FRAME + 64 + 32]
	stp	q12, q13, [sp, #FRAME + 64 + 64]
	stp	q14, q15, [sp, #FRAME + 64 + 96]
	stp	q16, q17, [sp, #FRAME + 64 + 128]
	stp	q18, q19, [sp, #FRAME + 64 + 160]
	stp	q20, q21, [sp, #FRAME + 64 + 192]
	stp	q22, q23, [sp, #FRAME + 64 + 224]
	stp	q24, q25, [sp, #FRAME + 64 + 256]
	stp	q26, q27, [sp, #FRAME + 64 + 288]
	stp	q28, q29, [sp, #FRAME + 64 + 320]
	stp	q30, q31, [sp, #FRAME + 64 + 352]
	add	x10, sp, #PFRAME + 16		/* the site's sp */
	stp	x29, x17, [sp, #REGS + FREGS_FP]	/* fp, lr: the parent ip */
	stp	x10, x30, [sp, #REGS + FREGS_SP]	/* sp, pc: the return into the function */
	mov	x9, x17				/* the parent ip, where CALL_HANDLER takes it */
	CALL_HANDLER FREGS_ENTRY, 8, 1
	ldp	q8, q9, [sp, #FRAME + 64]
	ldp	q10, q11, [sp, #FRAME + 64 + 32]
	ldp	q12, q13, [sp, #FRAME + 64 + 64]
	ldp	q14, q15, [sp, #FRAME + 64 + 96]
	ldp	q16, q17, [sp, #FRAME + 64 + 128]
	ldp	q18, q19, [sp, #FRAME + 64 + 160]
	ldp	q20, q21, [sp, #FRAME + 64 + 192]
	ldp	q22, q23, [sp, #FRAME + 64 + 224]
	ldp	q24, q25, [sp, #FRAME + 64 + 256]
	ldp	q26, q27, [sp, #FRAME + 64 + 288]
	ldp	q28, q29, [sp, #FRAME + 64 + 320]
	ldp	q30, q31, [sp, #FRAME + 64 + 352]
	ldp	x9, x10, [sp, #FRAME]
	ldr	x12, [sp, #FRAME + 24]
	ldp	x13, x14, [sp, #FRAME + 32]
	ldp	x15, x18, [sp, #FRAME + 48]
	ldr	x11, [sp, #PFRAME]		/* the function's x11 */
	ldr	x16, [sp, #REGS + FREGS_DIRECT]	/* a direct trampoline, or 0 */
	cbnz	x16, 1f
	ldp	x29, x30, [sp, #REGS + FREGS_FP]	/* fp; lr */
	ldr	x16, [sp, #REGS + FREGS_PC]	/* where the function goes on */
	add	sp, sp, #PFRAME + 16
	.cfi_def_cfa_offset 0
	ret	x16
	.cfi_def_cfa_offset PFRAME + 16
1:	ldp	x29, x17, [sp, #REGS + FREGS_FP]
	ldr	x30, [sp, #REGS + FREGS_PC]
	add	sp, sp, #PFRAME + 16
	.cfi_def_cfa_offset 0
	br	x16
	END	ftrace_ops_prologue_caller

/*
 * ftrt_ops_return: where a function made to return at once goes on
 * (ftrace_override_function_with_return): its `ret`, to x30, the lr the
 * ops caller restored (the caller's return address, or, the tracer having
 * hooked the call, return_to_handler, which closes it).
 */
	.globl	ftrt_ops_return
	.hidden	ftrt_ops_return
	.type	ftrt_ops_return, %function
	.p2align 2
ftrt_ops_return:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	ftrt_ops_return, .-ftrt_ops_return

	.section .note.GNU-stack, "", %progbits
