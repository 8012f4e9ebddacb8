/*
 * tailcall.S: arm64 code as -pg makes it, plus what no compiler emits but
 * hand-written code may: a tail call to _mcount.
 *
 * traced: the -pg entry sequence after the frame is set up,
 *	mov x0, x30	// the caller's return address, _mcount's argument
 *	bl _mcount	// the site: R_AARCH64_CALL26
 * notrace_mcount_thunk: `b _mcount` (R_AARCH64_JUMP26) leaves this
 * function's frame before _mcount runs, so it traces nothing of its own:
 * a note, not a site.
 */
	.text

	.globl	traced
	.type	traced, %function
	.p2align 2
traced:					// begin traced
	stp	x29, x30, [sp, #-16]!	// push the frame record
	mov	x29, sp
	mov	x0, x30
	bl	_mcount			// site
	ldp	x29, x30, [sp], #16
	ret
	.size	traced, .-traced	// end traced

	.globl	notrace_mcount_thunk
	.type	notrace_mcount_thunk, %function
	.p2align 2
notrace_mcount_thunk:			// begin notrace_mcount_thunk
	b	_mcount			// tail call: not a site
	.size	notrace_mcount_thunk, .-notrace_mcount_thunk	// end notrace_mcount_thunk

	.section .note.GNU-stack, "", %progbits
