/*
 * Sites whose function the load-time pass must find from the symbol
 * table (x86-64, GNU as; link -no-pie; the site table written by hand),
 * one per rule of runtime/src/core/symbols.c:
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
 *   sym_area    five 90s (a patchable area), then call __fentry__: at the
 *               entry, as the stack goes
 *   sym_area_endbr  endbr64, clang's long NOP, then call __fentry__: the same
 *   sym_chain   a nested function as gcc builds it: push %r10, call
 *               __fentry__, pop %r10 (a chain site, whose return address
 *               is a word above the top of the stack at the call); then
 *               the static chain is read
 *   sym_chain_endbr  the same with gcc 12's endbr64 after the push
 *   sym_chain6  the same with the 6-byte call the linker relaxes gcc's
 *               PIE call to (addr32 call)
 *
 * Each returns a number that symsites.c prints; the chain sites return
 * what their static chain points at, plus 0, 1 or 2, so a chain not kept
 * across the site (a word of the stack taken for the return address)
 * shows in the output. sym_chain_call(f) calls f as gcc's code calls a
 * nested function: r10 = the chain (chain_value's address).
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

	.globl	sym_area
	.type	sym_area, @function
	.p2align 4
sym_area:
	.byte	0x90, 0x90, 0x90, 0x90, 0x90	/* nop x5: gcc's patchable area */
1:	call	__fentry__
	movl	$8, %eax
	ret
	.size	sym_area, .-sym_area
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	sym_area_endbr
	.type	sym_area_endbr, @function
	.p2align 4
sym_area_endbr:
	endbr64
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x08	/* nopl 0x8(%rax,%rax,1): clang's patchable area */
1:	call	__fentry__
	movl	$9, %eax
	ret
	.size	sym_area_endbr, .-sym_area_endbr
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	sym_chain
	.type	sym_chain, @function
	.p2align 4
sym_chain:
	pushq	%r10
1:	call	__fentry__
	popq	%r10
	movl	(%r10), %eax			/* the static chain's variable */
	ret
	.size	sym_chain, .-sym_chain
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	sym_chain_endbr
	.type	sym_chain_endbr, @function
	.p2align 4
sym_chain_endbr:
	pushq	%r10
	endbr64
1:	call	__fentry__
	popq	%r10
	movl	(%r10), %eax
	addl	$1, %eax
	ret
	.size	sym_chain_endbr, .-sym_chain_endbr
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	.globl	sym_chain6
	.type	sym_chain6, @function
	.p2align 4
sym_chain6:
	pushq	%r10
1:	.byte	0x67			/* addr32 (as refuses the prefix on a call) */
	call	__fentry__
	popq	%r10
	movl	(%r10), %eax
	addl	$2, %eax
	ret
	.size	sym_chain6, .-sym_chain6
	.pushsection __mcount_loc, "a", @progbits
	.quad	1b
	.popsection

	/* int sym_chain_call(int (*f)(void)): f called with its static chain. */
	.globl	sym_chain_call
	.type	sym_chain_call, @function
	.p2align 4
sym_chain_call:
	leaq	chain_value(%rip), %r10
	jmp	*%rdi				/* f returns to our caller */
	.size	sym_chain_call, .-sym_chain_call

	.data
	.p2align 2
chain_value:
	.long	5

	.section .note.GNU-stack, "", @progbits
