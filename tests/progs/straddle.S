/*
 * A -pg function whose prologue straddles a page (GNU as; link -no-pie;
 * the site table written by hand): straddle's stp and str end one page,
 * its mov x29, sp begins the next. The tracer reads the prologue back
 * from the site to learn the frame, across the page boundary: the word
 * before a page is read only when it is known to be there, which the
 * module's executable segment says without a system call (qemu-user
 * has no process_vm_readv; a seccomp filter may refuse it). straddle
 * calls straddle_leaf, an ordinary -pg function, and returns its value
 * plus one. straddle_pad fills the page before and is never called.
 */
	.text

#include "sitetables.h"

	.p2align 12
	FUNC	straddle_pad
	ret
	.skip	4084			/* to the page's last 8 bytes */
	END	straddle_pad

	FUNC	straddle
	stp	x29, x30, [sp, #-32]!
	str	x19, [sp, #16]		/* the page's last word */
	mov	x29, sp			/* the next page's first */
	mov	x0, x30
1:	bl	_mcount
	bl	straddle_leaf
	add	w0, w0, #1
	ldr	x19, [sp, #16]
	ldp	x29, x30, [sp], #32
	ret
	END	straddle
	SITE	1b

	.p2align 4
	FUNC	straddle_leaf
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	mov	x0, x30
2:	bl	_mcount
	mov	w0, #41
	ldp	x29, x30, [sp], #16
	ret
	END	straddle_leaf
	SITE	2b

	.section .note.GNU-stack, "", %progbits
