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
 * use. The C part is built -mgeneral-regs-only: the vector registers
 * need no saving.
 *
 * Frame (96 bytes, sp stays 16-aligned):
 *
 *     88(sp)  (padding)
 *     80(sp)  x8
 *     16(sp)  x0 ... x7
 *      8(sp)  x30: the return address, which function_graph may replace
 *             with return_to_handler, so the function returns through
 *             the graph's exit
 *      0(sp)  x29 (a frame record, for unwinders and debuggers)
 *
 * ftrt_libcall_entry(idx, &saved x30, sp once the function returns)
 * returns the function, which is entered by `br x16` with the
 * arguments as they came and x30 (or its hook) as the return address:
 * as if the slot had held the function. A return address hooked here
 * is unsigned: the function's own prologue signs it (pac-ret) as it
 * would its caller's.
 */
	.text
	.globl	ftrace_libcall
	.hidden	ftrace_libcall
	.type	ftrace_libcall, %function
	.p2align 3
ftrace_libcall:
	.cfi_startproc
	hint	#34				/* bti c: the stub's br x16 lands here */
	stp	x29, x30, [sp, #-96]!
	.cfi_def_cfa_offset 96
	.cfi_offset 29, -96
	.cfi_offset 30, -88
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	str	x8, [sp, #80]
	mov	w0, w17				/* arg 1: the slot's index */
	add	x1, sp, #8			/* arg 2: where the return address is */
	add	x2, sp, #96			/* arg 3: sp once the function returns */
	bl	ftrt_libcall_entry		/* x0 = the function */
	mov	x16, x0
	ldp	x0, x1, [sp, #16]
	ldp	x2, x3, [sp, #32]
	ldp	x4, x5, [sp, #48]
	ldp	x6, x7, [sp, #64]
	ldr	x8, [sp, #80]
	ldp	x29, x30, [sp], #96
	.cfi_def_cfa_offset 0
	.cfi_restore 29
	.cfi_restore 30
	br	x16
	.cfi_endproc
	.size	ftrace_libcall, .-ftrace_libcall

	.section .note.GNU-stack, "", %progbits
