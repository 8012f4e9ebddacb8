/*
 * Entry hooks and call-site trampolines for arm64.
 *
 * Call-site shapes (see sites/ for how recordmcount finds them, site.c
 * for what the runtime writes):
 *   -fpatchable-function-entry=2    two NOPs at the function's entry
 *   (or =4,2)                       (after bti c), enabled as
 *                                       mov x9, x30
 *                                       bl  ftrace_caller
 *                                   before the frame is built: x9 holds
 *                                   the caller's return address (the
 *                                   parent ip), x30 the return into the
 *                                   function (site + 8)
 *   -pg                             `mov x0, x30; bl _mcount` after the
 *                                   prologue (stp x29, x30, [sp, #-N]!;
 *                                   mov x29, sp), enabled as
 *                                       bl  ftrace_mcount_caller
 *                                   x0 holds the parent ip, x30 the return
 *                                   into the function (site + 4), and the
 *                                   function's frame record its saved x30
 *                                   at 8(x29)
 * Every argument register (x0-x7, x8 for an indirect result) is live at
 * an entry site and must be preserved; x9-x15 are temporaries no caller
 * keeps anything in across a call, x16 and x17 may be changed by any
 * branch (veneers, PLT stubs). The C side is built -mgeneral-regs-only,
 * so the vector registers (q0-q7: floating-point arguments) are never
 * touched and need no saving.
 *
 * Each entry point starts with `bti c` (hint #34: a NOP without BTI), so
 * a module stub's indirect branch may land on it in a program built with
 * -mbranch-protection=standard.
 */
#include "abi.h"
#include "arch/arm64/args.h"
#include "arch/arm64/regs.h"

	.text

/* _mcount: -pg's hook; returns at once, touching nothing, until the
 * load-time pass turns the site into a NOP or a call of a tracer. */
	ENTRY	_mcount
	ret
	END	_mcount

/*
 * The frame of the entry trampolines, ftrace_caller and ftrace_ops_caller
 * (FRAME bytes below the site's sp; a frame record at its bottom, so the
 * unwinder and a debugger see the call):
 *     16-127  struct ftrace_regs (regs.h), at REGS, its first
 *               FREGS_BASE bytes: x0-x8 at 16-80 (SAVE_ARGS), fp at
 *               88, lr at 96 (the parent ip: function_graph writes
 *               return_to_handler there), sp at 104 (the site's), pc at
 *               112 (the return into the function); padding at 120
 *       8     x30: the return into the function (site + 8)
 *       0     x29
 * On entry to either:
 *     x9   the parent ip (the caller's return address, as the function
 *          got it in x30)
 *     x30  the return into the function (site + 8)
 *     sp   the function's at entry (16-byte aligned), nothing pushed
 * x10 is a temporary (no caller keeps anything in x9-x15 across the
 * call the site is). On the way out every argument register, x29 and
 * x30 are the ftrace_regs' (x30: lr, the parent ip or
 * return_to_handler), and the function goes on at pc.
 */
#define REGS 16
#define FRAME (REGS + ((FREGS_BASE + 15) & ~15))
.if REGS + FREGS_X0 != 16
.error "SAVE_ARGS puts x0 at 16(sp): the ftrace_regs must start there"
.endif

.macro SAVE_REGS
	stp	x29, x30, [sp, #-FRAME]!
	.cfi_def_cfa_offset FRAME
	.cfi_offset x29, -FRAME
	.cfi_offset x30, -FRAME + 8
	SAVE_ARGS				/* x0-x8 at 16-80 */
	add	x10, sp, #FRAME			/* the site's sp */
	stp	x29, x9, [sp, #REGS + FREGS_FP]	/* fp, lr: the parent ip */
	stp	x10, x30, [sp, #REGS + FREGS_SP]	/* sp, pc: the return into the function */
	mov	x29, sp
.endm

.macro RESTORE_REGS_RET
	RESTORE_ARGS
	ldp	x29, x30, [sp, #REGS + FREGS_FP]	/* fp; lr: the parent ip, or return_to_handler */
	ldr	x9, [sp, #REGS + FREGS_PC]	/* where the function goes on */
	add	sp, sp, #FRAME
	.cfi_def_cfa_offset 0
	ret	x9
.endm

/*
 * ftrace_caller: where an enabled patchable site calls (the shared path:
 * every tracer's). ftrt_entry_regs(ip, fregs) with ip = x30 - 8, the
 * site.
 */
	ENTRY	ftrace_caller
	SAVE_REGS
	sub	x0, x30, #8			/* arg 1: ip = the site */
	add	x1, sp, #REGS			/* arg 2: the ftrace_regs */
	bl	ftrt_entry_regs			/* ftrt_entry_regs(ip, fregs) */
	RESTORE_REGS_RET
	END	ftrace_caller

/*
 * ftrace_ops_caller: where an enabled patchable site with a pre-function
 * literal calls (literal.c). As ftrace_caller, and:
 *     x30 & ~7 - 16   the function's literal: an ops record's address,
 *                     8-byte aligned, read with one load (the pass
 *                     stores it with one before it writes the bl). The
 *                     bl is at F+4, or F+8 after bti c, F 8-byte
 *                     aligned: x30 is F+8 or F+12, and either way the
 *                     literal is at F-8.
 * The record's handler is called as the kernel calls an ops's,
 * ops->func(ip, parent_ip, ops, fregs) (function.c), so the tracer is
 * the function's own choice, made by its literal. x10 holds the
 * literal's address, x16 the handler (blr: the runtime's C is not built
 * with landing pads, and a program linking it is not BTI-guarded).
 */
	ENTRY	ftrace_ops_caller
	SAVE_REGS
	and	x10, x30, #~7			/* the literal: (x30 & ~7) - 16 */
	ldur	x2, [x10, #-16]			/* arg 3: the ops record */
	ldr	x16, [x2]			/* its handler: ops->func */
	sub	x0, x30, #8			/* arg 1: ip = the site */
	mov	x1, x9				/* arg 2: the parent ip */
	add	x3, sp, #REGS			/* arg 4: the ftrace_regs */
	blr	x16				/* ops->func(ip, parent_ip, ops, fregs) */
	RESTORE_REGS_RET
	END	ftrace_ops_caller

/*
 * ftrace_mcount_caller: where an enabled -pg site calls. On entry x30 is
 * the return into the function (site + 4) and x29 the function's frame
 * record, whose saved x30 at 8(x29) is the function's return address:
 * the parent ip. (gcc also puts it in x0 with `mov x0, x30`; clang does
 * not.) With -mbranch-protection=standard the saved copy is signed
 * (paciasp before the prologue's stp): it is read into x30 and its
 * authentication code stripped (xpaclri, hint #7: a NOP on a CPU without
 * pointer authentication). ftrt_entry_frame (mcount.c) records the call,
 * or, at function_graph, pushes it and writes the hook into the frame
 * record itself, signed as the prologue signed what it replaces. The
 * argument registers are saved as at ftrace_caller (the compiler takes
 * the call of _mcount for an ordinary call, but keeping them costs
 * little and holds for every compiler).
 *
 * Frame (MFRAME bytes, a frame record at its bottom):
 *     16-88 x0-x8 (x0 at 16)
 *       8  x30: the return into the function
 *       0  x29: the function's frame record
 * ftrt_entry_frame(ip, fp, parent) with ip = x30 - 4, the site; fp the
 * function's x29; parent the stripped return address.
 */
#define MFRAME 96
	ENTRY	ftrace_mcount_caller
	stp	x29, x30, [sp, #-MFRAME]!
	.cfi_def_cfa_offset MFRAME
	.cfi_offset x29, -MFRAME
	.cfi_offset x30, -MFRAME + 8
	SAVE_ARGS				/* x0-x8 at 16-80 */
	sub	x0, x30, #4			/* arg 1: ip = the site */
	mov	x1, x29				/* arg 2: the function's frame record */
	ldr	x30, [x29, #8]			/* the function's saved return address, perhaps signed */
	hint	#7				/* xpaclri: x30 without its authentication code */
	mov	x2, x30				/* arg 3: the parent ip */
	mov	x29, sp
	bl	ftrt_entry_frame		/* ftrt_entry_frame(ip, fp, parent_ip) */
	RESTORE_ARGS
	ldp	x29, x30, [sp], #MFRAME
	.cfi_def_cfa_offset 0
	ret
	END	ftrace_mcount_caller

/*
 * ftrace_stub: the empty tracer (FTRACE=nop), which enabled sites call
 * directly: the cost of a patched site and nothing else. From a
 * patchable area x9 holds the function's own return address, which goes
 * back into x30; from a -pg site x30 is no longer live (the prologue
 * saved it) and x9 is a temporary, so the same three instructions serve.
 */
	ENTRY	ftrace_stub
	mov	x10, x30
	mov	x30, x9
	ret	x10
	END	ftrace_stub

/*
 * ftrace_prologue_caller: where an enabled site made from a function's
 * prologue calls (a trampoline's first two words, ftpatch instrument's
 * or record -P's). Call-site shape:
 *
 *     mov  x17, x30                 the caller's return address (the
 *                                   parent ip), in IP1: a call may
 *                                   change it anyway (veneers, PLT stubs)
 *     bl   ftrace_prologue_caller   directly, or through a veneer, which
 *                                   changes x16 alone (veneer.c)
 *
 * The function was compiled without tracing flags, so its callers may
 * keep values in any call-clobbered register across the call (gcc's
 * -fipa-ra, when it sees the function leave them alone): x9-x15 and x18
 * as well as the arguments; x9 is why the site does not use
 * ftrace_caller's `mov x9, x30`. Every general register but x16 and x17
 * comes back as it came (the vector registers are never touched: the C
 * side is built -mgeneral-regs-only). On entry:
 *     x17  the parent ip
 *     x30  the return into the trampoline (site + 8)
 *     sp   the function's at entry (16-byte aligned), nothing pushed
 *
 * Frame (PFRAME bytes below the site's sp): ftrace_caller's FRAME (a
 * frame record at 0, the struct ftrace_regs at REGS: x0-x8, fp, lr =
 * the parent ip, sp, pc), then x9-x15 and x18 above it:
 *     FRAME+0   x9, x10      FRAME+32  x13, x14
 *     FRAME+16  x11, x12     FRAME+48  x15, x18
 * ftrt_entry_regs(ip, fregs) with ip = x30 - 8; the function goes on at
 * fregs' pc through x16, with x30 = fregs' lr (the parent ip, or
 * return_to_handler).
 */
#define PFRAME (FRAME + 64)
	ENTRY	ftrace_prologue_caller
	stp	x29, x30, [sp, #-PFRAME]!
	.cfi_def_cfa_offset PFRAME
	.cfi_offset x29, -PFRAME
	.cfi_offset x30, -PFRAME + 8
	SAVE_ARGS				/* x0-x8 at 16-80 */
	stp	x9, x10, [sp, #FRAME]
	stp	x11, x12, [sp, #FRAME + 16]
	stp	x13, x14, [sp, #FRAME + 32]
	stp	x15, x18, [sp, #FRAME + 48]
	add	x16, sp, #PFRAME		/* the site's sp */
	stp	x29, x17, [sp, #REGS + FREGS_FP]	/* fp, lr: the parent ip */
	stp	x16, x30, [sp, #REGS + FREGS_SP]	/* sp, pc: the return into the function */
	mov	x29, sp
	sub	x0, x30, #8			/* arg 1: ip = the site */
	add	x1, sp, #REGS			/* arg 2: the ftrace_regs */
	bl	ftrt_entry_regs			/* ftrt_entry_regs(ip, fregs) */
	RESTORE_ARGS
	ldp	x9, x10, [sp, #FRAME]
	ldp	x11, x12, [sp, #FRAME + 16]
	ldp	x13, x14, [sp, #FRAME + 32]
	ldp	x15, x18, [sp, #FRAME + 48]
	ldp	x29, x30, [sp, #REGS + FREGS_FP]	/* fp; lr: the parent ip, or return_to_handler */
	ldr	x16, [sp, #REGS + FREGS_PC]	/* where the function goes on */
	add	sp, sp, #PFRAME
	.cfi_def_cfa_offset 0
	ret	x16
	END	ftrace_prologue_caller

/*
 * ftrace_prologue_stub: the empty tracer (FTRACE=nop) at a prologue
 * site: x17 holds the function's own return address, which goes back
 * into x30; x16 carries the return into the function. Nothing else
 * changes.
 */
	ENTRY	ftrace_prologue_stub
	mov	x16, x30
	mov	x30, x17
	ret	x16
	END	ftrace_prologue_stub

/*
 * return_to_handler: where a function graphed by ftrt_entry returns to,
 * in place of its caller: ftrace_caller handed it to the function in x30
 * (ftrt_entry wrote it into the slot), so the function saved it, signed
 * it with paciasp and authenticated it again like its own return
 * address. On entry the function has just returned: sp is
 * what it was at the function's entry, and the return value is live in
 * x0-x7 (integers, small structs), x8 (an indirect result's address) and
 * q0-q7 (floating point, HFA/HVA), which the C side never touches.
 *
 * Every other general register the C call may change is kept too
 * (x9-x15, x18), and only x30 changes: a site made from a prologue is
 * in a function compiled without tracing flags, whose callers may keep
 * values in any call-clobbered register across the call (gcc's
 * -fipa-ra); this hook serves every kind of site.
 *
 * Frame (RFRAME, 160 bytes; x0-x8 80 bytes below the stack pointer the
 * function returned with, where fregs.c's ftrt_arch_fgraph_exit_regs
 * reads them):
 *     152     padding
 *     80-144  x0-x8 (x0 at 80)
 *     16-72   x9-x15, x18 (x9 at 16)
 *     0       x29, x30 (a frame record)
 * ftrt_graph_exit(sp) records the exit and returns the original return
 * address, which becomes x30 for the ret.
 *
 * The unwinder looks a return address up by the word before it: for a
 * frame that returns here, the nop before return_to_handler, covered by
 * return_to_handler's own unwind info, whose return address is
 * undefined. A walk that frames.c does not see (a C program's forced
 * unwind: pthread_exit) so ends at the innermost graphed call, rather
 * than taking the code before for the caller and going round for ever.
 */
#define RFRAME 160
	.globl	return_to_handler
	.type	return_to_handler, %function
	.p2align 3
	.cfi_startproc
	.cfi_undefined x30			/* the unwinder cannot see past a hijacked return */
	nop					/* the word before: see above */
return_to_handler:
	hint	#34				/* bti c */
	stp	x29, x30, [sp, #-RFRAME]!
	.cfi_def_cfa_offset RFRAME
	mov	x29, sp
	stp	x9, x10, [sp, #16]
	stp	x11, x12, [sp, #32]
	stp	x13, x14, [sp, #48]
	stp	x15, x18, [sp, #64]
	stp	x0, x1, [sp, #80]
	stp	x2, x3, [sp, #96]
	stp	x4, x5, [sp, #112]
	stp	x6, x7, [sp, #128]
	str	x8, [sp, #144]
	add	x0, sp, #RFRAME			/* arg 1: the stack pointer the function returned with */
	bl	ftrt_graph_exit			/* x0 = the original return address */
	mov	x30, x0
	ldp	x9, x10, [sp, #16]
	ldp	x11, x12, [sp, #32]
	ldp	x13, x14, [sp, #48]
	ldp	x15, x18, [sp, #64]
	ldp	x0, x1, [sp, #80]
	ldp	x2, x3, [sp, #96]
	ldp	x4, x5, [sp, #112]
	ldp	x6, x7, [sp, #128]
	ldr	x8, [sp, #144]
	ldr	x29, [sp], #RFRAME
	.cfi_def_cfa_offset 0
	ret
	END	return_to_handler

	.section .note.GNU-stack, "", %progbits
