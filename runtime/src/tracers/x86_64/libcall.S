/*
 * ftrace_libcall: where a library call's stub goes (arch/libstub.h:
 * endbr64; mov $idx, %r11d; jmp *entry(%rip)), on its way from a
 * module's call through a redirected GOT slot to the function.
 *
 * Call shapes: `call *slot(%rip)` (-fno-plt), or `call f@plt` whose PLT
 * stub does `jmp *slot(%rip)`: either way, on entry here
 *
 *      0(%rsp)  return address into the caller (the parent ip)
 *      r11d     the slot's index in patch/libcall.c's table
 *
 * and the function's arguments are live, as at its own entry: every
 * argument register (rdi rsi rdx rcx r8 r9; rax = vector registers of a
 * varargs call; r10 = a static chain) and xmm0-7. r11 is the psABI's
 * scratch register, which a PLT stub or a lazy binding may clobber too:
 * the stub's to use. The C part is built -mgeneral-regs-only: the vector
 * registers need no saving.
 *
 * Frame (rsp was 8 mod 16 on entry; eight pushes and 8 bytes of padding
 * align it for the C call):
 *
 *     72(%rsp) return address into the caller: function_graph may
 *              replace it with return_to_handler, so the function
 *              returns through the graph's exit
 *     64(%rsp) rax
 *     56(%rsp) rdi ... 8(%rsp) r10 (PUSH_ARGS)
 *      0(%rsp) padding
 *
 * ftrt_libcall_entry(idx, &return address, rsp after the return)
 * returns the function, which is entered by a jump with the arguments
 * as they came and the return address (or its hook) on top: as if the
 * slot had held the function.
 */
#include "arch/x86_64/args.h"

	.text
	.globl	ftrace_libcall
	.hidden	ftrace_libcall
	.type	ftrace_libcall, @function
	.p2align 4
ftrace_libcall:
	.cfi_startproc
	endbr64
	PUSH_ARGS
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	movl	%r11d, %edi			/* arg 1: the slot's index */
	leaq	72(%rsp), %rsi			/* arg 2: where the return address is */
	leaq	80(%rsp), %rdx			/* arg 3: rsp once the function returns */
	call	ftrt_libcall_entry		/* rax = the function */
	movq	%rax, %r11
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	POP_ARGS
	jmp	*%r11
	.cfi_endproc
	.size	ftrace_libcall, .-ftrace_libcall

	.section .note.GNU-stack, "", @progbits
