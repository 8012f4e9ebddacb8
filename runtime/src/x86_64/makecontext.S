/*
 * The makecontext wrapper for x86-64, in a file of its own: it is pulled
 * out of the archive only by the program's reference to it, which the
 * link flag --wrap=makecontext makes, so a program linked without that
 * flag has no reference to __real_makecontext to resolve.
 */

/*
 * __wrap_makecontext: the program's calls of makecontext (link flag
 * --wrap=makecontext), so that function_graph knows each context's stack
 * (context.c) before the context can run.
 *
 * makecontext(ucp, func, argc, ...): rdi = ucp, rsi = func, edx = argc,
 * then the arguments for func in rcx, r8, r9 and on the stack above our
 * return address, as many as argc says; al = the number of vector
 * registers used (a variadic call). So the wrapper saves every argument
 * register, calls ftrt_context_made(ucp), restores them and jumps to the
 * C library's makecontext (__real_makecontext) with the stack as it found
 * it: the arguments reach it untouched, however many.
 *
 * Frame, below the return address (rsp was 8 mod 16 at entry; seven
 * pushes make it 0 for the C call):
 *
 *     56(%rsp) return into the caller of makecontext
 *     48(%rsp) rax
 *     40(%rsp) rdi  (ucp)
 *     32(%rsp) rsi  (func)
 *     24(%rsp) rdx  (argc)
 *     16(%rsp) rcx
 *      8(%rsp) r8
 *      0(%rsp) r9
 */
	.text
	.globl	__wrap_makecontext
	.type	__wrap_makecontext, @function
	.p2align 4
__wrap_makecontext:
	.cfi_startproc
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
	call	ftrt_context_made		/* ftrt_context_made(ucp): rdi is ucp already */
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
	jmp	__real_makecontext		/* as if called directly */
	.cfi_endproc
	.size	__wrap_makecontext, .-__wrap_makecontext

	.section .note.GNU-stack, "", @progbits
