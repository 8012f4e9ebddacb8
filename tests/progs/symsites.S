/*
 * Sites whose function the load-time pass must find from the symbol
 * table (x86-64, GNU as; link -no-pie; the site table written by hand),
 * one per rule of runtime/src/symbols.c:
 *
 *   sym_entry   call __fentry__ first: at the function's entry
 *   sym_endbr   endbr64, then call __fentry__: at the entry too
 *   sym_pg      push %rbp; mov %rsp, %rbp; call mcount: after the
 *               prologue (-pg)
 *   sym_outer   the same, with a zero-size function symbol (sym_label)
 *               between the prologue and the site: the site is
 *               sym_outer's, the one symbol that covers it
 *   (no name)   call __fentry__ in code no function symbol covers: never
 *               enabled; never run either
 *
 * Each returns a number that symsites.c prints.
 */
	.text

	.globl	sym_entry
	.type	sym_entry, @function
	.p2align 4
sym_entry:
1:	call	__fentry__
	movl	$1, %eax
	ret
	.size	sym_entry, .-sym_entry
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	/* Code no symbol covers (as a discarded weak definition leaves). */
	.p2align 4
1:	call	__fentry__
	movl	$9, %eax
	ret
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	sym_endbr
	.type	sym_endbr, @function
	.p2align 4
sym_endbr:
	endbr64
1:	call	__fentry__
	movl	$2, %eax
	ret
	.size	sym_endbr, .-sym_endbr
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	sym_pg
	.type	sym_pg, @function
	.p2align 4
sym_pg:
	pushq	%rbp
	movq	%rsp, %rbp
1:	call	mcount
	movl	$3, %eax
	popq	%rbp
	ret
	.size	sym_pg, .-sym_pg
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	sym_outer
	.type	sym_outer, @function
	.p2align 4
sym_outer:
	pushq	%rbp
	movq	%rsp, %rbp
	.globl	sym_label
	.type	sym_label, @function
sym_label:				/* no .size: it covers its own address only */
	nop
1:	call	mcount
	movl	$4, %eax
	popq	%rbp
	ret
	.size	sym_outer, .-sym_outer
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.section .note.GNU-stack, "", @progbits
