/*
 * Entry hooks for x86-64.
 *
 * Call-site shapes (see sites/ for how recordmcount finds them):
 *   -pg -mfentry        call __fentry__   first instruction (after endbr64),
 *                                         before the frame is built: the
 *                                         return address into the function is
 *                                         at 0(%rsp), the caller's at 8(%rsp)
 *   -pg                 call mcount       after `push %rbp; mov %rsp,%rbp`
 * Every argument register (rdi rsi rdx rcx r8 r9, rax for varargs, xmm0-7)
 * is live at the call and must be preserved; these stubs touch nothing.
 *
 * At load time ftrt_init turns every call site into a NOP, so these stubs
 * only run for a site that is enabled, or before ftrt_init (constructors
 * of other objects that run first).
 */
	.text

	.globl	__fentry__
	.type	__fentry__, @function
	.p2align 4
__fentry__:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	__fentry__, .-__fentry__

	.globl	mcount
	.type	mcount, @function
	.p2align 4
mcount:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	mcount, .-mcount

	.section .note.GNU-stack, "", @progbits
