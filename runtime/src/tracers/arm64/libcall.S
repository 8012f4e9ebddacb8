/*
 * ftrace_libcall: where a library call's stub goes (arch/libstub.h:
 * bti c; movz/movk w17, idx; ldr x16, entry; br x16), on its way from a
 * module's call through a redirected GOT slot to the function.
 *
 * Call shapes: `adrp; ldr; blr` through the slot (-fno-plt), or `bl
 * f@plt` whose PLT stub loads the slot into x17 and does `br x17`:
 * either way, on entry here
 *
 *      x30   return address into the caller (the parent ip)
 *      w17   the slot's index in patch/libcall.c's table
 *      sp    the caller's, as at the function's entry
 *
 * and the function's arguments are live (x0-x7, x8 for an indirect
 * result, q0-q7). x16 and x17 are the intra-procedure-call scratch
 * registers any branch may clobber (veneers, PLT stubs): the stub's to
 * use. The C part is built -mgeneral-regs-only, and ftrt_libcall_entry
 * calls nothing that touches the vector registers: they need saving
 * only for the capture (below), which may call the C library's memcpy.
 *
 * Frame: a struct ftrace_regs (arch/arm64/regs.h, FREGS_SIZE bytes, sp
 * stays 16-aligned), as the ops callers save a site's:
 *
 *   FREGS_Q(sp)       q0-q7: saved for a capture only
 *   FREGS_DIRECT      0 (a capture's: nothing to branch to)
 *   FREGS_KIND        FREGS_ENTRY (a capture's)
 *   FREGS_PC          the function (a capture's): where it goes on
 *   FREGS_SP          sp as at the function's entry (always)
 *   FREGS_LR          x30: the return address, which function_graph may
 *                     replace with return_to_handler, so the function
 *                     returns through the graph's exit (always)
 *   FREGS_FP          x29 (always); with FREGS_LR, a frame record that
 *                     x29 points at, for unwinders and debuggers
 *   FREGS_X0 ...      x0-x8 (always)
 *
 * ftrt_libcall_entry(idx, fregs) records the call and returns, in x0,
 * the function and, in x1, 0 or the slot, when the call's arguments or
 * return value are captured: then the vector registers are saved, pc
 * and kind set, and ftrt_libcall_capture(fregs, slot) called. The
 * function is entered by `br x16` with the arguments as they came and
 * x30 (or its hook) as the return address: as if the slot had held it.
 * A return address hooked here is unsigned: the function's own
 * prologue signs it (pac-ret) as it would its caller's.
 */
#include "arch/arm64/regs.h"

	.text
	.globl	ftrace_libcall
	.hidden	ftrace_libcall
	.type	ftrace_libcall, %function
	.p2align 3
ftrace_libcall:
	.cfi_startproc
	hint	#34				/* bti c: the stub's br x16 lands here */
	sub	sp, sp, #FREGS_SIZE
	.cfi_def_cfa_offset FREGS_SIZE
	stp	x29, x30, [sp, #FREGS_FP]
	.cfi_offset 29, FREGS_FP - FREGS_SIZE
	.cfi_offset 30, FREGS_LR - FREGS_SIZE
	add	x29, sp, #FREGS_FP		/* the frame record */
	stp	x0, x1, [sp, #FREGS_X0 + 0]
	stp	x2, x3, [sp, #FREGS_X0 + 16]
	stp	x4, x5, [sp, #FREGS_X0 + 32]
	stp	x6, x7, [sp, #FREGS_X0 + 48]
	str	x8, [sp, #FREGS_X0 + 64]
	add	x16, sp, #FREGS_SIZE
	str	x16, [sp, #FREGS_SP]		/* fregs->sp = sp at the function's entry */
	mov	w0, w17				/* arg 1: the slot's index */
	mov	x1, sp				/* arg 2: fregs */
	bl	ftrt_libcall_entry		/* x0 = the function, x1 = the slot to capture, or 0 */
	cbnz	x1, 2f
1:	mov	x16, x0
	ldp	x0, x1, [sp, #FREGS_X0 + 0]
	ldp	x2, x3, [sp, #FREGS_X0 + 16]
	ldp	x4, x5, [sp, #FREGS_X0 + 32]
	ldp	x6, x7, [sp, #FREGS_X0 + 48]
	ldr	x8, [sp, #FREGS_X0 + 64]
	ldp	x29, x30, [sp, #FREGS_FP]
	add	sp, sp, #FREGS_SIZE
	.cfi_remember_state
	.cfi_def_cfa_offset 0
	.cfi_restore 29
	.cfi_restore 30
	br	x16

	/* The capture: the rest of the struct, then the C part, then the
	 * function it leaves in pc, with the vector registers as they came. */
	.cfi_restore_state
2:	str	x0, [sp, #FREGS_PC]
	stp	xzr, xzr, [sp, #FREGS_KIND]	/* kind FREGS_ENTRY (0), direct 0 */
	stp	q0, q1, [sp, #FREGS_Q + 0]
	stp	q2, q3, [sp, #FREGS_Q + 32]
	stp	q4, q5, [sp, #FREGS_Q + 64]
	stp	q6, q7, [sp, #FREGS_Q + 96]
	mov	x0, sp				/* arg 1: fregs (arg 2, x1: the slot) */
	bl	ftrt_libcall_capture
	ldp	q0, q1, [sp, #FREGS_Q + 0]
	ldp	q2, q3, [sp, #FREGS_Q + 32]
	ldp	q4, q5, [sp, #FREGS_Q + 64]
	ldp	q6, q7, [sp, #FREGS_Q + 96]
	ldr	x0, [sp, #FREGS_PC]
	b	1b
	.cfi_endproc
	.size	ftrace_libcall, .-ftrace_libcall

	.section .note.GNU-stack, "", %progbits
