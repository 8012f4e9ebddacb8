/*
 * Stand-in hooks for linking test programs before the runtime exists:
 * every entry hook returns at once, preserving every register.
 *   __fentry__  called first thing in a function (-pg -mfentry)
 *   mcount      called after the prologue (-pg)
 */
	.text
	.globl	__fentry__
	.type	__fentry__, @function
__fentry__:
	ret
	.size	__fentry__, .-__fentry__

	.globl	mcount
	.type	mcount, @function
mcount:
	ret
	.size	mcount, .-mcount

	.section .note.GNU-stack,"",@progbits
