#ifndef FTRT_X86_64_ARGS_H
#define FTRT_X86_64_ARGS_H

/*
 * The argument registers of x86-64, saved and restored around a C call
 * by code that runs at a function's entry (entry.S's trampolines, the
 * makecontext wrapper): included by those .S files.
 *
 * PUSH_ARGS, POP_ARGS: save and restore what a function's entry may hold
 * live and a C call may clobber: the argument registers rdi rsi rdx rcx r8
 * r9, rax (the number of vector registers, for varargs) and r10 (the
 * static chain). Eight pushes: 64 bytes, rax deepest. The vector
 * registers need no saving: the C side is built -mgeneral-regs-only.
 */
.macro PUSH_ARGS
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	pushq	%r8
	.cfi_adjust_cfa_offset 8
	pushq	%r9
	.cfi_adjust_cfa_offset 8
	pushq	%r10
	.cfi_adjust_cfa_offset 8
.endm

.macro POP_ARGS
	popq	%r10
	.cfi_adjust_cfa_offset -8
	popq	%r9
	.cfi_adjust_cfa_offset -8
	popq	%r8
	.cfi_adjust_cfa_offset -8
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	popq	%rax
	.cfi_adjust_cfa_offset -8
.endm

#endif
