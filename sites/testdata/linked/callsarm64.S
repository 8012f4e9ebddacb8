/*
 * A shared object whose entry sites hold, by hand, every state and call
 * form `ftpatch sites` reads on arm64 (what enabling sites writes, which
 * no compiler emits). Each function is one site, listed in the
 * __mcount_loc table at the end; the functions are local, so the table's
 * words are R_AARCH64_RELATIVE relocations.
 *
 *   nops, nops_bti     nop: the two NOPs of -fpatchable-function-entry=2
 *                      (after `bti c`)
 *   callops            traced: `mov x9, x30; bl ftrace_caller` after the
 *                      8-byte pre-function slot of =4,2 (listed in
 *                      __patchable_function_entries)
 *   callops_set        traced: `mov x9, x30; bl ftrace_ops_caller`, its
 *                      slot holding a literal (what the runtime writes
 *                      at load, here a made-up address), which
 *                      `ftpatch sites` shows
 *   direct, direct_plt direct: a user trampoline, local and global (bl to
 *                      its PLT stub, whose slot a JUMP_SLOT fills)
 *   mcount_plt         hook: `bl _mcount` after the prologue, through the
 *                      PLT
 *   mcount_nop         nop: the same site NOP'd
 *
 * The trampolines are stand-ins that return: only their names matter.
 */
	.text

	.macro	FUNC name, align=3
	.type	\name, %function
	.p2align \align
\name:
	.endm
	.macro	END name
	ret
	.size	\name, .-\name
	.endm

	FUNC nops
	nop
	nop
	END nops

	FUNC nops_bti
	bti	c
bti_site:
	nop
	nop
	END nops_bti

	.p2align 3
callops_pre:
	nop				/* the ops literal: 8 bytes, 8-aligned */
	nop
	FUNC callops, 2
	mov	x9, x30
	bl	ftrace_caller
	END callops

	.p2align 3
callops_set_pre:
	.quad	0x4000123458		/* the literal: an ops record's address */
	FUNC callops_set, 2
	mov	x9, x30
	bl	ftrace_ops_caller
	END callops_set

	FUNC direct
	mov	x9, x30
	bl	my_tramp
	END direct

	FUNC direct_plt
	mov	x9, x30
	bl	user_tramp
	END direct_plt

	FUNC mcount_plt
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	mov	x0, x30
mcount_site:
	bl	_mcount
	ldp	x29, x30, [sp], #16
	END mcount_plt

	FUNC mcount_nop
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	mov	x0, x30
mcount_nop_site:
	nop
	ldp	x29, x30, [sp], #16
	END mcount_nop

	/* The trampolines. */
	.hidden	ftrace_caller, ftrace_ops_caller, my_tramp
	.globl	ftrace_caller, ftrace_ops_caller, my_tramp, user_tramp
	FUNC ftrace_caller
	END ftrace_caller
	FUNC ftrace_ops_caller
	END ftrace_ops_caller
	FUNC my_tramp
	END my_tramp
	FUNC user_tramp
	END user_tramp

	.section __patchable_function_entries, "awo", %progbits, callops_pre
	.p2align 3
	.quad	callops_pre
	.section __patchable_function_entries, "awo", %progbits, callops_set_pre
	.p2align 3
	.quad	callops_set_pre

	.section __mcount_loc, "aw"
	.p2align 3
	.quad	nops, bti_site, callops, callops_set, direct, direct_plt, mcount_site, mcount_nop_site

	.section .note.GNU-stack, "", %progbits
