/*
 * ftrace_libcall: where a library call's stub goes (arch/libstub.h:
 * endbr64; mov $idx, %r11d; jmp *entry(%rip)), on its way from a
 * module's call through a redirected GOT slot to the function.
 *
 * Call shapes: `call *slot(%rip)` (-fno-plt), or `call f@plt` whose PLT
 * stub does `jmp *slot(%rip)`: either way, on entry here
 *
 *      0(%rsp)  return address into the caller (the parent ip)
 *      r11d     the slot's index in patch/libcall.c's table
 *
 * and the function's arguments are live, as at its own entry: every
 * argument register (rdi rsi rdx rcx r8 r9; rax = vector registers of a
 * varargs call; r10 = a static chain) and xmm0-7. r11 is the psABI's
 * scratch register, which a PLT stub or a lazy binding may clobber too:
 * the stub's to use. The C part is built -mgeneral-regs-only, and
 * ftrt_libcall_entry calls nothing that touches the vector registers:
 * they need saving only for the capture (below), which may call the C
 * library's memcpy.
 *
 * Frame: a struct ftrace_regs (arch/x86_64/regs.h), as the ops callers
 * save a site's, and 8 bytes of padding (rsp was 8 mod 16 on entry;
 * FREGS_SIZE is a multiple of 16, so the C calls find rsp aligned):
 *
 *   FREGS_SIZE+8(%rsp)  return address into the caller: function_graph
 *                       may replace it with return_to_handler, so the
 *                       function returns through the graph's exit
 *   FREGS_SIZE(%rsp)    padding
 *   FREGS_XMM(%rsp)     xmm0-7: saved for a capture only
 *   FREGS_GRACE         not used
 *   FREGS_DIRECT        0 (a capture's: nothing to branch to)
 *   FREGS_KIND          FREGS_ENTRY (a capture's: ip may change)
 *   FREGS_IP            the function (a capture's): where it goes on
 *   FREGS_SP            where the return address is (always)
 *   FREGS_BP            rbp (a capture's)
 *   FREGS_DI ... R10    rdi rsi rdx rcx r8 r9 rax r10 (always)
 *
 * ftrt_libcall_entry(idx, fregs) records the call and returns, in rax,
 * the function and, in rdx, 0 or the slot, when the call's arguments
 * or return value are captured: then the vector registers are saved,
 * ip and kind set, and ftrt_libcall_capture(fregs, slot) called. The
 * function is entered by a jump with the arguments as they came and
 * the return address (or its hook) on top: as if the slot had held it.
 */
#include "arch/x86_64/regs.h"

#define FRAME (FREGS_SIZE + 8)

	.text
	.globl	ftrace_libcall
	.hidden	ftrace_libcall
	.type	ftrace_libcall, @function
	.p2align 4
ftrace_libcall:
	.cfi_startproc
	endbr64
	subq	$FRAME, %rsp
	.cfi_adjust_cfa_offset FRAME
	movq	%rdi, FREGS_DI(%rsp)
	movq	%rsi, FREGS_SI(%rsp)
	movq	%rdx, FREGS_DX(%rsp)
	movq	%rcx, FREGS_CX(%rsp)
	movq	%r8, FREGS_R8(%rsp)
	movq	%r9, FREGS_R9(%rsp)
	movq	%rax, FREGS_AX(%rsp)
	movq	%r10, FREGS_R10(%rsp)
	leaq	FRAME(%rsp), %rdi
	movq	%rdi, FREGS_SP(%rsp)		/* fregs->sp = &return address */
	movl	%r11d, %edi			/* arg 1: the slot's index */
	movq	%rsp, %rsi			/* arg 2: fregs */
	call	ftrt_libcall_entry		/* rax = the function, rdx = the slot to capture, or 0 */
	testq	%rdx, %rdx
	jnz	2f
1:	movq	%rax, %r11
	movq	FREGS_DI(%rsp), %rdi
	movq	FREGS_SI(%rsp), %rsi
	movq	FREGS_DX(%rsp), %rdx
	movq	FREGS_CX(%rsp), %rcx
	movq	FREGS_R8(%rsp), %r8
	movq	FREGS_R9(%rsp), %r9
	movq	FREGS_AX(%rsp), %rax
	movq	FREGS_R10(%rsp), %r10
	addq	$FRAME, %rsp
	.cfi_adjust_cfa_offset -FRAME
	jmp	*%r11

	/* The capture: the rest of the struct, then the C part, then the
	 * function it leaves in ip, with the vector registers as they came. */
	.cfi_adjust_cfa_offset FRAME
2:	movq	%rax, FREGS_IP(%rsp)
	movq	%rbp, FREGS_BP(%rsp)
	movl	$FREGS_ENTRY, FREGS_KIND(%rsp)
	movq	$0, FREGS_DIRECT(%rsp)
	movaps	%xmm0, FREGS_XMM+0*16(%rsp)
	movaps	%xmm1, FREGS_XMM+1*16(%rsp)
	movaps	%xmm2, FREGS_XMM+2*16(%rsp)
	movaps	%xmm3, FREGS_XMM+3*16(%rsp)
	movaps	%xmm4, FREGS_XMM+4*16(%rsp)
	movaps	%xmm5, FREGS_XMM+5*16(%rsp)
	movaps	%xmm6, FREGS_XMM+6*16(%rsp)
	movaps	%xmm7, FREGS_XMM+7*16(%rsp)
	movq	%rsp, %rdi			/* arg 1: fregs */
	movq	%rdx, %rsi			/* arg 2: the slot */
	call	ftrt_libcall_capture
	movaps	FREGS_XMM+0*16(%rsp), %xmm0
	movaps	FREGS_XMM+1*16(%rsp), %xmm1
	movaps	FREGS_XMM+2*16(%rsp), %xmm2
	movaps	FREGS_XMM+3*16(%rsp), %xmm3
	movaps	FREGS_XMM+4*16(%rsp), %xmm4
	movaps	FREGS_XMM+5*16(%rsp), %xmm5
	movaps	FREGS_XMM+6*16(%rsp), %xmm6
	movaps	FREGS_XMM+7*16(%rsp), %xmm7
	movq	FREGS_IP(%rsp), %rax
	jmp	1b
	.cfi_endproc
	.size	ftrace_libcall, .-ftrace_libcall

	.section .note.GNU-stack, "", @progbits
