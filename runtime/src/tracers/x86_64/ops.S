/*
 * The ops callers of x86-64: where a site that an ops wants (ftrace.h's
 * struct ftrace_ops) goes, through a trampoline made for the ops and the
 * site's module (opstramp.c), which loads the runtime's record of the
 * ops, or of the module's list of ops, and jumps here:
 *
 *     +0   49 bb imm64     movabs $record, %r11
 *     +10  e9 rel32        jmp ftrace_ops_caller (_mcount_, _chain_), in reach
 *          (ff 25 00000000 jmp *0(%rip), through +16, beyond it)
 *     +16  .quad           the caller
 *     +24  int3 padding
 *
 * r11 is free at a function's entry (no argument is passed in it, and a
 * call may change it), and the site is always a 5-byte call: a 6-byte
 * site is enabled live as `e8 rel32; nop`. On entry here:
 *
 *     r11       the record: a struct ftrt_ops, whose handler is called
 *     0(%rsp)   the return into the function (site + 5)
 *     8(%rsp)   the parent ip (an entry site); a chain site's saved r10,
 *               the parent ip at 16(%rsp); at an mcount site (-pg) the
 *               parent ip is at 8(%rbp), the function's frame
 *
 * The handler is called as the kernel calls an ops's,
 * handler(ip, parent_ip, record, fregs), with a struct ftrace_regs
 * (regs.h) at an aligned stack pointer. It runs code of the program's
 * (an ops's callback), built with the full calling convention, so every
 * register the convention lets it change that may hold an argument is
 * saved: rdi rsi rdx rcx r8 r9 rax r10 and xmm0-7 (r11 holds nothing
 * of the function's). Flags are not live at a site.
 *
 * Frame: rbp is our frame pointer (a debugger and the unwinder see the
 * call), the ftrace_regs below it, aligned down to 16:
 *
 *     8(%rbp)   the return into the function: fregs->ip goes back here,
 *               so a callback that changes it (at an entry site) sends
 *               the function's `ret` there, with the stack as at the
 *               function's entry
 *     0(%rbp)   the function's rbp
 *     (%rsp)    struct ftrace_regs
 *
 * Every register comes back from the ftrace_regs (a callback may change
 * an argument) but rbp and rsp, which are ours to restore, and r11,
 * which holds fregs->direct on the way out: when a handler set it (a
 * direct trampoline of ops.c's), the caller jumps there instead of
 * returning, the return into the function on top of the stack, so the
 * trampoline runs as if the site had called it (the kernel's
 * ftrace_regs_caller with ORIG_RAX set). Flags are not live: the test
 * of r11 may change them.
 */
/*
 * ftrace_ops_prologue_caller: the same for a site made from a function's
 * prologue (ftpatch instrument, record -P). The function was compiled
 * without tracing flags, so its callers may keep values in any
 * call-clobbered register across the call (gcc's -fipa-ra, when it sees
 * the function leave them alone): r11, xmm8-15, the upper halves of the
 * ymm and zmm registers, zmm16-31 and k0-7 as well as the arguments.
 * Its trampoline (opstramp.c) saves r11 before it loads the record:
 *
 *     +0   41 53           push %r11
 *     +2   49 bb imm64     movabs $record, %r11
 *     +12  e9 rel32        jmp ftrace_ops_prologue_caller, in reach
 *          (ff 25 00000006 jmp *6(%rip), through +24, beyond it)
 *     +24  .quad           the caller
 *
 * and the caller keeps the vector state a callback may change
 * (arch/x86_64/vecsave.h: xmm0-15, or ymm0-15, or zmm0-31 and k0-7, as
 * the CPU has them, and mxcsr) in an area of VS_SIZE bytes, 64-byte
 * aligned, above the ftrace_regs; rbx, saved, holds its address across
 * the call. On entry r11 is the record and
 *
 *     0(%rsp)   r11 as the function's caller left it
 *     8(%rsp)   the return into the function (site + 5)
 *     16(%rsp)  the parent ip
 *
 * Frame, from rbp:
 *
 *     24(%rbp)  the parent ip (fregs->sp points here)
 *     16(%rbp)  the return into the function: fregs->ip goes back here
 *     8(%rbp)   r11 (the trampoline's push)
 *     0(%rbp)   the function's rbp
 *     -8(%rbp)  rbx
 *     -16(%rbp) fregs->direct on the way out
 *     ...       the vector state, 64-byte aligned, at rbx
 *     (%rsp)    struct ftrace_regs, ending at rbx
 *
 * On the way out every register comes back (r11 from its slot, the
 * vector state from the area, its xmm0-7 from the ftrace_regs, which a
 * callback may change); a direct trampoline is jumped to through its
 * slot, 32 bytes below the stack pointer then (the red zone, which a
 * signal frame never overwrites), with no register changed but the
 * flags, as if the site had called it.
 */
#include "arch/opslayout.h"
#include "arch/x86_64/regs.h"
#include "arch/x86_64/vecsave.h"

	.hidden	ftrt_vec_kind

/*
 * VEC_SAVE base, regs: the vector state into the area at \base
 * (vecsave.h), by ftrt_vec_kind; eax and the flags change. regs 1: the
 * ops caller's, whose xmm0-7 go into the ftrace_regs (after this, as
 * legacy SSE stores, the upper halves clean by then), so that with SSE
 * alone xmm8-15 are saved here; regs 0 (ftrt_vec_save, after an fxsave
 * of xmm0-15): nothing with SSE alone.
 */
.macro VEC_SAVE base, regs
	movl	ftrt_vec_kind(%rip), %eax
	cmpl	$VEC_AVX, %eax
	jae	81f
.if \regs
	.irp	n, 8, 9, 10, 11, 12, 13, 14, 15
	movaps	%xmm\n, \n*64(\base)
	.endr
.endif
	jmp	89f
81:	jne	82f
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqa	%ymm\n, \n*64(\base)
	.endr
	jmp	88f
82:	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqa64 %zmm\n, \n*64(\base)
	.endr
	.irp	n, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	vmovdqa64 %zmm\n, \n*64(\base)
	.endr
	cmpl	$VEC_AVX512_F, %eax
	je	83f
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	kmovq	%k\n, VS_K+\n*8(\base)
	.endr
	jmp	88f
83:	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	kmovw	%k\n, VS_K+\n*8(\base)
	.endr
88:	vzeroupper				/* a callback's SSE code pays no transition */
89:
.endm

/*
 * VEC_RESTORE base, regs: the vector state back from the area at \base;
 * eax and the flags change. regs 1: xmm0-7 from the ftrace_regs at rsp
 * (a callback may change them): with AVX copied into the area's slots
 * first, so that every register is loaded whole by VEX code (a legacy
 * SSE load into a register whose upper half is live costs a transition
 * or a merge).
 */
.macro VEC_RESTORE base, regs
	movl	ftrt_vec_kind(%rip), %eax
	cmpl	$VEC_AVX, %eax
	jae	81f
.if \regs
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	movaps	FREGS_XMM+\n*16(%rsp), %xmm\n
	.endr
	.irp	n, 8, 9, 10, 11, 12, 13, 14, 15
	movaps	\n*64(\base), %xmm\n
	.endr
.endif
	jmp	89f
81:
.if \regs
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	vmovdqa	FREGS_XMM+\n*16(%rsp), %xmm\n
	vmovdqa	%xmm\n, \n*64(\base)
	.endr
.endif
	cmpl	$VEC_AVX, %eax
	jne	82f
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqa	\n*64(\base), %ymm\n
	.endr
	jmp	89f
82:	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqa64 \n*64(\base), %zmm\n
	.endr
	.irp	n, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	vmovdqa64 \n*64(\base), %zmm\n
	.endr
	cmpl	$VEC_AVX512_F, %eax
	je	83f
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	kmovq	VS_K+\n*8(\base), %k\n
	.endr
	jmp	89f
83:	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	kmovw	VS_K+\n*8(\base), %k\n
	.endr
89:
.endm

.macro OPS_CALLER name, kind, full=0
	.text
	.globl	\name
	.hidden	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
.if \full
	.cfi_adjust_cfa_offset 8		/* the trampoline's push of r11 */
.endif
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	movq	%rsp, %rbp
	.cfi_def_cfa_register rbp
.if \full
	pushq	%rbx
	.cfi_rel_offset rbx, -8
	leaq	-16-VS_SIZE(%rbp), %rbx		/* below rbx's slot and the direct's */
	andq	$-64, %rbx			/* rbx = the vector state's area */
	leaq	-FREGS_SIZE(%rbx), %rsp		/* the ftrace_regs below it, 16-byte aligned */
.else
	subq	$FREGS_SIZE, %rsp
	andq	$-16, %rsp
.endif
	movq	%rdi, FREGS_DI(%rsp)
	movq	%rsi, FREGS_SI(%rsp)
	movq	%rdx, FREGS_DX(%rsp)
	movq	%rcx, FREGS_CX(%rsp)
	movq	%r8, FREGS_R8(%rsp)
	movq	%r9, FREGS_R9(%rsp)
	movq	%rax, FREGS_AX(%rsp)
	movq	%r10, FREGS_R10(%rsp)
.if \full
	VEC_SAVE %rbx, 1
	stmxcsr	VS_MXCSR(%rbx)
.endif
	movaps	%xmm0, FREGS_XMM+0*16(%rsp)
	movaps	%xmm1, FREGS_XMM+1*16(%rsp)
	movaps	%xmm2, FREGS_XMM+2*16(%rsp)
	movaps	%xmm3, FREGS_XMM+3*16(%rsp)
	movaps	%xmm4, FREGS_XMM+4*16(%rsp)
	movaps	%xmm5, FREGS_XMM+5*16(%rsp)
	movaps	%xmm6, FREGS_XMM+6*16(%rsp)
	movaps	%xmm7, FREGS_XMM+7*16(%rsp)
	movq	0(%rbp), %rax			/* the function's rbp */
	movq	%rax, FREGS_BP(%rsp)
.if \full
	leaq	24(%rbp), %rsi			/* the return slot: above r11 and the return into the function */
.elseif \kind == FREGS_ENTRY
	leaq	16(%rbp), %rsi			/* the return slot: just above the return into the function */
.elseif \kind == FREGS_CHAIN
	leaq	24(%rbp), %rsi			/* above it and the saved r10 */
.else
	leaq	8(%rax), %rsi			/* 8(function's rbp) */
.endif
	movq	%rsi, FREGS_SP(%rsp)
	movq	8+8*\full(%rbp), %rdi
	movq	%rdi, FREGS_IP(%rsp)
	movl	$\kind, FREGS_KIND(%rsp)
	movl	$\full, FREGS_PROLOGUE(%rsp)
	movq	$0, FREGS_DIRECT(%rsp)
	subq	$5, %rdi			/* arg 1: ip = the site */
	movq	(%rsi), %rsi			/* arg 2: the parent ip */
	movq	%rsp, %rcx			/* arg 4: the ftrace_regs */
	/* One ops's record, its common case inline (ops.c's
	 * ftrt_ops_direct_handler does the same in C): walk in the grace
	 * slot, read the ops, call its callback, walk out. */
	leaq	ftrt_ops_direct_handler(%rip), %rax
	cmpq	%rax, (%r11)
	jne	3f				/* a list's record: its handler */
	testq	$OPSREC_SLOW_FLAGS, OPSREC_FLAGS(%r11)
	jnz	3f				/* guarded from recursion, or a direct trampoline: the handler */
	movq	ftrt_grace_mine@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rax		/* the thread's grace slot */
	testq	%rax, %rax
	jz	3f				/* the thread's first walk: the handler claims one */
	cmpl	$0, GRACE_SHARED(%rax)
	jne	3f				/* the shared slot: changed atomically, by the handler */
	addq	$1, GRACE_W(%rax)		/* in the walk: one instruction, whole to a signal handler */
	movq	%rax, FREGS_GRACE(%rsp)
	movq	OPSREC_USER(%r11), %rdx		/* arg 3: the ops, read inside the walk */
	testq	%rdx, %rdx
	jz	2f				/* unregistered since: nothing to call */
	call	*(%rdx)				/* ops->func(ip, parent_ip, ops, fregs) */
2:	movq	FREGS_GRACE(%rsp), %rax
	cmpl	$1, GRACE_W(%rax)
	je	4f
	subq	$1, GRACE_W(%rax)		/* out of a nested walk */
	jmp	5f
4:	movl	$GRACE_LEFT_LESS_ONE, %edx
	addq	%rdx, GRACE_W(%rax)		/* out of the outermost: one left */
	jmp	5f
3:	movq	%r11, %rdx			/* arg 3: the record */
	call	*(%r11)				/* record->func(ip, parent_ip, record, fregs) */
5:	movq	FREGS_IP(%rsp), %rax		/* where the function goes on */
	movq	%rax, 8+8*\full(%rbp)
.if \full
	ldmxcsr	VS_MXCSR(%rbx)
	VEC_RESTORE %rbx, 1			/* the vector state as the function got it, but xmm0-7's */
.else
	movaps	FREGS_XMM+0*16(%rsp), %xmm0
	movaps	FREGS_XMM+1*16(%rsp), %xmm1
	movaps	FREGS_XMM+2*16(%rsp), %xmm2
	movaps	FREGS_XMM+3*16(%rsp), %xmm3
	movaps	FREGS_XMM+4*16(%rsp), %xmm4
	movaps	FREGS_XMM+5*16(%rsp), %xmm5
	movaps	FREGS_XMM+6*16(%rsp), %xmm6
	movaps	FREGS_XMM+7*16(%rsp), %xmm7
.endif
	movq	FREGS_DI(%rsp), %rdi
	movq	FREGS_SI(%rsp), %rsi
	movq	FREGS_DX(%rsp), %rdx
	movq	FREGS_CX(%rsp), %rcx
	movq	FREGS_R8(%rsp), %r8
	movq	FREGS_R9(%rsp), %r9
	movq	FREGS_R10(%rsp), %r10
.if \full
	movq	FREGS_DIRECT(%rsp), %rax	/* a direct trampoline, or 0... */
	movq	%rax, -16(%rbp)			/* ...in its slot */
	movq	FREGS_AX(%rsp), %rax
	movq	-8(%rbp), %rbx
	.cfi_restore rbx
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa rsp, 16
	popq	%r11
	.cfi_def_cfa rsp, 8
	cmpq	$0, -32(%rsp)			/* the slot, in the red zone now */
	jne	1f
	ret					/* into the function (or where fregs->ip said) */
1:	jmp	*-32(%rsp)			/* the direct trampoline, as if the site had called it */
.else
	movq	FREGS_DIRECT(%rsp), %r11	/* a direct trampoline, or 0 */
	movq	FREGS_AX(%rsp), %rax
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa rsp, 8
	testq	%r11, %r11
	jnz	1f
	ret					/* into the function (or where fregs->ip said) */
1:	jmp	*%r11				/* the direct trampoline, as if the site had called it */
.endif
	.cfi_endproc
	.size	\name, .-\name
.endm

	OPS_CALLER ftrace_ops_caller, FREGS_ENTRY
	OPS_CALLER ftrace_ops_mcount_caller, FREGS_MCOUNT
	OPS_CALLER ftrace_ops_chain_caller, FREGS_CHAIN
	OPS_CALLER ftrace_ops_prologue_caller, FREGS_ENTRY, 1

/*
 * ftrt_vec_save(area), ftrt_vec_restore(area): VEC_SAVE and VEC_RESTORE
 * for C (fregs.c's ftrt_arch_fp_save, at a graph user's return from a
 * function at a site made from a prologue), after its fxsave and its
 * fxrstor of xmm0-15 and the x87 state: rdi the area, 64-byte aligned;
 * rax and the flags change, and nothing else but the vector registers
 * the restore puts back.
 */
	.text
	.globl	ftrt_vec_save
	.hidden	ftrt_vec_save
	.type	ftrt_vec_save, @function
	.p2align 4
ftrt_vec_save:
	.cfi_startproc
	VEC_SAVE %rdi, 0
	ret
	.cfi_endproc
	.size	ftrt_vec_save, .-ftrt_vec_save

	.globl	ftrt_vec_restore
	.hidden	ftrt_vec_restore
	.type	ftrt_vec_restore, @function
	.p2align 4
ftrt_vec_restore:
	.cfi_startproc
	VEC_RESTORE %rdi, 0
	ret
	.cfi_endproc
	.size	ftrt_vec_restore, .-ftrt_vec_restore

	.section .note.GNU-stack, "", @progbits
