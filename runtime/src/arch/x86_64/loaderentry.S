/*
 * x86-64: ftrt_loader_entry, where the loader's debugger hook leads
 * (arch/loader.h, loader.c): r_brk's `ret` became a jump to a page near
 * the loader, which jumps here. On entry:
 *
 *     0(%rsp)  the return into the loader (its call of r_brk)
 *     rsp      8 mod 16, as at any function's entry
 *
 * The loader is compiled with gcc -O2, whose -fipa-ra sees that r_brk
 * changes no register: its callers may keep values in any of them
 * across the call, the flags aside (a call clobbers them). So every
 * register comes back as it came: the general ones the C call may
 * change are pushed, the callee-saved ones (rbx, rbp, r12-r15) it
 * keeps itself; the x87, SSE, AVX and AVX-512 state with XSAVE (mask
 * XSAVE_MASK, the features the C library's code may use: what glibc's
 * own lazy-binding trampoline saves) in an area of ftrt_loader_xsave
 * bytes, or with fxsave (512 bytes) on a CPU without it. The flags are
 * kept too (pushfq), at no cost worth saving.
 *
 * Frame (rbp: the frame pointer; the area 64-byte aligned below):
 *
 *      8(%rbp)  return into the loader
 *      0(%rbp)  rbp
 *     -8(%rbp)  rflags
 *    -16(%rbp)  rax       -56(%rbp)  r8
 *    -24(%rbp)  rcx       -64(%rbp)  r9
 *    -32(%rbp)  rdx       -72(%rbp)  r10
 *    -40(%rbp)  rsi       -80(%rbp)  r11
 *    -48(%rbp)  rdi
 *       (%rsp)  the XSAVE (or fxsave) area, 64-byte aligned; its header
 *               (bytes 512-575) zeroed first, as XRSTOR requires
 *
 * ftrt_loader_call() is called with rsp 64-byte aligned.
 */
#define XSAVE_MASK 0xe7 /* x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM */

	.text
	.globl	ftrt_loader_entry
	.hidden	ftrt_loader_entry
	.type	ftrt_loader_entry, @function
	.p2align 4
ftrt_loader_entry:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushfq
	pushq	%rax
	pushq	%rcx
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	andq	$-64, %rsp
	movl	ftrt_loader_xsave(%rip), %eax
	testl	%eax, %eax
	jz	1f
	subq	%rax, %rsp			/* the XSAVE area */
	xorl	%ecx, %ecx
	movq	%rcx, 512(%rsp)			/* its header: XSTATE_BV, XCOMP_BV, reserved */
	movq	%rcx, 520(%rsp)
	movq	%rcx, 528(%rsp)
	movq	%rcx, 536(%rsp)
	movq	%rcx, 544(%rsp)
	movq	%rcx, 552(%rsp)
	movq	%rcx, 560(%rsp)
	movq	%rcx, 568(%rsp)
	movl	$XSAVE_MASK, %eax
	xorl	%edx, %edx
	xsave64	(%rsp)
	jmp	2f
1:	subq	$512, %rsp			/* the fxsave area */
	fxsave64 (%rsp)
2:	call	*ftrt_loader_call(%rip)		/* ftrt_loader_call() */
	movl	ftrt_loader_xsave(%rip), %eax
	testl	%eax, %eax
	jz	3f
	movl	$XSAVE_MASK, %eax
	xorl	%edx, %edx
	xrstor64 (%rsp)
	jmp	4f
3:	fxrstor64 (%rsp)
4:	leaq	-80(%rbp), %rsp
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	popq	%rax
	popfq
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret					/* r_brk's own ret */
	.cfi_endproc
	.size	ftrt_loader_entry, .-ftrt_loader_entry

	.section .note.GNU-stack, "", @progbits
