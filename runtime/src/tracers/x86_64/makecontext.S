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
 * register (PUSH_ARGS), calls ftrt_context_made(ucp), restores them and
 * jumps to the C library's makecontext (__real_makecontext) with the
 * stack as it found it: the arguments reach it untouched, however many.
 *
 * Frame, below the return address (rsp was 8 mod 16 at entry; eight
 * pushes and 8 bytes of padding make it 0 for the C call):
 *
 *     72(%rsp) return into the caller of makecontext
 *     64(%rsp) rax
 *     56(%rsp) rdi  (ucp)
 *     48(%rsp) rsi  (func)
 *     40(%rsp) rdx  (argc)
 *     32(%rsp) rcx
 *     24(%rsp) r8
 *     16(%rsp) r9
 *      8(%rsp) r10
 *      0(%rsp) padding
 */
#include "arch/x86_64/args.h"

	.text
	.globl	__wrap_makecontext
	.type	__wrap_makecontext, @function
	.p2align 4
__wrap_makecontext:
	.cfi_startproc
	PUSH_ARGS
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	call	ftrt_context_made		/* ftrt_context_made(ucp): rdi is ucp already */
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	POP_ARGS
	jmp	__real_makecontext		/* as if called directly */
	.cfi_endproc
	.size	__wrap_makecontext, .-__wrap_makecontext

#ifdef FTRT_PRELOAD
/*
 * Preloaded (runtime.SharedLibName), with no linker's --wrap: the C
 * library's makecontext is the wrapper, whichever module calls it, and
 * __real_makecontext branches to the C library's through
 * ftrt_next_makecontext, which ftrt_context_made (context.c) looks up
 * before the wrapper branches there.
 */
	.globl	makecontext
	.type	makecontext, %function
	.set	makecontext, __wrap_makecontext

	.globl	__real_makecontext
	.hidden	__real_makecontext
	.type	__real_makecontext, @function
	.p2align 4
__real_makecontext:
	.cfi_startproc
	jmp	*ftrt_next_makecontext(%rip)	/* the C library's, every argument register untouched */
	.cfi_endproc
	.size	__real_makecontext, .-__real_makecontext
#endif

	.section .note.GNU-stack, "", @progbits
