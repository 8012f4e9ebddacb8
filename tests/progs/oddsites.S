/*
 * Sites the load-time pass must handle beyond the compiler's usual ones,
 * with a site table written by hand (x86-64, GNU as; link -no-pie). In
 * address order, which is the table's order:
 *
 *   odd_nop     already a NOP (nopl): kept, never written; the table's
 *               first site, before the first one to write
 *   odd_call    call __fentry__: the usual site
 *   odd_call6   addr32 call __fentry__ (6 bytes), listed twice: at its
 *               address and, bogusly, one byte in, where the bytes read
 *               `call __fentry__` too until the site before is written
 *   odd_span    call __fentry__ across a page boundary (3 bytes + 2)
 *   odd_other   a call, but not to a hook: unexpected, never written
 *   odd_mov     movl $5, %eax: unexpected, never written; the table's
 *               last site, after the last one to write
 *
 * Each returns a number that oddsites.c prints, so a site written wrongly
 * shows in the output as well as in the bytes.
 */
	.text

	.globl	odd_nop
	.type	odd_nop, @function
	.p2align 4
odd_nop:
1:	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopl 0x0(%rax,%rax,1), as -mnop-mcount writes it (as would drop the disp8) */
	movl	$1, %eax
	ret
	.size	odd_nop, .-odd_nop
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	odd_call
	.type	odd_call, @function
	.p2align 4
odd_call:
1:	call	__fentry__
	movl	$2, %eax
	ret
	.size	odd_call, .-odd_call
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	odd_call6
	.type	odd_call6, @function
	.p2align 4
odd_call6:
1:	.byte	0x67			/* addr32 (as refuses the prefix on a call) */
	call	__fentry__
	movl	$6, %eax
	ret
	.size	odd_call6, .-odd_call6
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.quad	1b + 1
	.popsection

	/* int3 up to 3 bytes before a page boundary: never run. */
	.p2align 12
	.skip	4096 - 3, 0xcc
	.globl	odd_span
	.type	odd_span, @function
odd_span:
1:	call	__fentry__
	movl	$3, %eax
	ret
	.size	odd_span, .-odd_span
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	odd_other
	.type	odd_other, @function
	.p2align 4
odd_other:
1:	call	odd_call
	movl	$4, %eax
	ret
	.size	odd_other, .-odd_other
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	odd_mov
	.type	odd_mov, @function
	.p2align 4
odd_mov:
1:	movl	$5, %eax
	ret
	.size	odd_mov, .-odd_mov
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.section .note.GNU-stack, "", @progbits
