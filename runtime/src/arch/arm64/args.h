#ifndef FTRT_ARM64_ARGS_H
#define FTRT_ARM64_ARGS_H

/*
 * The assembly files' shared pieces for arm64. The argument and result registers of arm64, saved and restored around
 * a C call by code that runs at a function's entry or return (entry.S's
 * trampolines and return_to_handler): included by those .S files.
 *
 * SAVE_ARGS, RESTORE_ARGS: x0-x7 (arguments, results) and x8 (an
 * indirect result's address), at 16(sp)..88(sp) of a frame whose frame
 * record (x29, x30) is at 0(sp); 88 is left for the caller. The vector
 * registers need no saving: the C side is built -mgeneral-regs-only.
 */
.macro SAVE_ARGS
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	str	x8, [sp, #80]
.endm

.macro RESTORE_ARGS
	ldp	x0, x1, [sp, #16]
	ldp	x2, x3, [sp, #32]
	ldp	x4, x5, [sp, #48]
	ldp	x6, x7, [sp, #64]
	ldr	x8, [sp, #80]
.endm

/*
 * ENTRY, END: a function of the assembly files, global, with its unwind
 * info bracketed and a `bti c` landing pad first (hint #34: a NOP
 * without BTI), so an indirect branch may land on it in a program built
 * with -mbranch-protection=standard.
 */
.macro ENTRY name
	.globl	\name
	.type	\name, %function
	.p2align 2
\name:
	.cfi_startproc
	hint	#34
.endm

.macro END name
	.cfi_endproc
	.size	\name, .-\name
.endm

#endif
