/*
 * The makecontext wrapper for arm64, in a file of its own: it is pulled
 * out of the archive only by the program's reference to it, which the
 * link flag --wrap=makecontext makes, so a program linked without that
 * flag has no reference to __real_makecontext to resolve.
 *
 * __wrap_makecontext: the program's calls of makecontext, so that
 * function_graph knows each context's stack (context.c) before the
 * context can run. makecontext(ucp, func, argc, ...): x0 = ucp, x1 =
 * func, w2 = argc, the arguments for func in x3-x7 and on the stack, as
 * many as argc says. The wrapper saves x0-x7 and x30 (32 bytes a pair:
 * 80 bytes, 16-aligned), calls ftrt_context_made(ucp), restores them and
 * branches to the C library's makecontext with the stack as it found it.
 */
	.text
	.globl	__wrap_makecontext
	.type	__wrap_makecontext, %function
	.p2align 2
__wrap_makecontext:
	.cfi_startproc
	hint	#34
	stp	x29, x30, [sp, #-80]!
	.cfi_def_cfa_offset 80
	.cfi_offset x29, -80
	.cfi_offset x30, -72
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	bl	ftrt_context_made		/* ftrt_context_made(ucp): x0 is ucp already */
	ldp	x0, x1, [sp, #16]
	ldp	x2, x3, [sp, #32]
	ldp	x4, x5, [sp, #48]
	ldp	x6, x7, [sp, #64]
	ldp	x29, x30, [sp], #80
	.cfi_def_cfa_offset 0
	b	__real_makecontext		/* as if called directly */
	.cfi_endproc
	.size	__wrap_makecontext, .-__wrap_makecontext

	.section .note.GNU-stack, "", %progbits
