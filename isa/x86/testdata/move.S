/*
 * Prologue-site fixtures: one function per case of isa/x86's planner
 * (move.go), each named for what TestPlanPrologue expects of it.
 * Assembled and linked at test time (gcc -c, ld -Ttext=0x401000: a
 * non-PIE, so that the non-PIC jump tables' absolute entries resolve).
 * Each function is followed by what its case needs: padding
 * (.p2align 4, NOPs), int3, or the next function at once.
 */
	.text

#define FUNC(name) .p2align 4; .type name, @function; name:
#define END(name) .size name, .-name

/* Planned: whole instructions copied as they are. */
FUNC(copy)
	push	%rbx			/* 1 */
	push	%rbp			/* 1 */
	sub	$0x18, %rsp		/* 4: covers 6 */
	mov	%edi, %eax
	add	$0x18, %rsp
	pop	%rbp
	pop	%rbx
	ret
END(copy)

/* Planned: endbr64 stays where indirect calls land, the site after it. */
FUNC(endbr)
	endbr64
	push	%r15			/* 2 */
	push	%r14			/* 2 */
	push	%r13			/* 2 */
	pop	%r13
	pop	%r14
	pop	%r15
	ret
END(endbr)

/* Planned: RIP-relative lea and mov, rewritten. */
FUNC(rip_lea)
	lea	gdata(%rip), %rax	/* 7 */
	mov	(%rax), %eax
	ret
END(rip_lea)

FUNC(rip_mov)
	endbr64
	mov	gdata+8(%rip), %rax	/* 7 */
	ret
END(rip_mov)

/* Planned: a RIP-relative operand naming an address below (a negative displacement). */
FUNC(rip_back)
	lea	copy(%rip), %rax	/* 7 */
	ret
END(rip_back)

/* Planned: RIP-relative operands followed by an immediate. */
FUNC(rip_imm)
	cmpl	$0x12345678, gdata(%rip)	/* 81 3d disp32 imm32: 10 */
	movb	$7, gdata+3(%rip)		/* c6 05 disp32 imm8 */
	ret
END(rip_imm)

FUNC(rip_imm8)
	cmpb	$1, gdata+1(%rip)	/* 80 3d disp32 imm8: 7 */
	sete	%al
	ret
END(rip_imm8)

/* Planned: a tail call through the GOT-like pointer, jmp *disp(%rip). */
FUNC(rip_jmp)
	jmp	*gptr(%rip)		/* ff 25 disp32: 6 */
END(rip_jmp)

/* Planned: jmp rel8 moved (the last), becomes jmp rel32. */
FUNC(jmp8)
	push	%rbx			/* 1 */
	mov	%edi, %ebx		/* 2 */
	jmp	1f			/* eb: 2 */
	ud2
1:	mov	%ebx, %eax
	pop	%rbx
	ret
END(jmp8)

/* Planned: jmp rel32 moved. */
FUNC(jmp32)
	nop				/* 1 */
	{disp32} jmp	1f		/* e9: 5 */
	ud2
1:	ret
END(jmp32)

/* Planned: a direct call, the last moved, emulated. */
FUNC(call_rel)
	push	%rbx			/* 1 */
	call	callee			/* e8: 5 */
	pop	%rbx
	ret
END(call_rel)

/* Planned: an indirect call through a register, the last moved. */
FUNC(call_reg)
	push	%rbx			/* 1 */
	mov	%rdi, %rax		/* 3 */
	call	*%rax			/* ff d0: 2 */
	pop	%rbx
	ret
END(call_reg)

/* Planned: an indirect call through a RIP-relative pointer. */
FUNC(call_rip)
	call	*gptr(%rip)		/* ff 15 disp32: 6 */
	ret
END(call_rip)

/* ErrUnmovable: a call that is not the last moved instruction. */
FUNC(call_not_last)
	call	*%rax			/* 2 */
	mov	$1, %eax		/* 5 */
	ret
END(call_not_last)

/* ErrUnmovable: a call through %rsp (the emulation moves %rsp). */
FUNC(call_rsp)
	push	%rbx			/* 1 */
	call	*8(%rsp)		/* ff 54 24 08: 4 */
	pop	%rbx
	ret
END(call_rsp)

/* Planned: jcc rel8 widened to jcc rel32. */
FUNC(jcc8)
	test	%edi, %edi		/* 2 */
	je	1f			/* 74: 2 */
	mov	$1, %eax		/* 5 */
	ret
1:	xor	%eax, %eax
	ret
END(jcc8)

/* Planned: jcc rel32 retargeted. */
FUNC(jcc32)
	endbr64
	test	%edi, %edi		/* 2 */
	{disp32} jne	1f		/* 0f 85: 6 */
	xor	%eax, %eax
	ret
1:	mov	$1, %eax
	ret
END(jcc32)

/* Planned: a recursive call to the function's own entry is a call. */
FUNC(recurse)
	push	%rbx			/* 1 */
	mov	%edi, %ebx		/* 2 */
	test	%edi, %edi		/* 2 */
	je	1f
	lea	-1(%rdi), %edi
	call	recurse
1:	pop	%rbx
	ret
END(recurse)

/* Planned: shorter than the jump, ends in ret: the padding takes the rest. */
FUNC(short_pad)
	xor	%eax, %eax		/* 2 */
	ret				/* 1 */
END(short_pad)

FUNC(short_endbr_pad)
	endbr64
	ret				/* 1 */
END(short_endbr_pad)

/* Planned: a 2-byte jmp tail call, then int3 padding. */
FUNC(short_jmp_int3)
	jmp	short_endbr_pad		/* eb: 2 */
END(short_jmp_int3)
	int3; int3; int3; int3; int3; int3


/* ErrTooShort: shorter than the jump, the next function right after. */
	.p2align 4
	.type short_nopad, @function
short_nopad:
	ret
END(short_nopad)
	.type short_next, @function
short_next:
	push	%rbx			/* 1 */
	mov	%edi, %ebx		/* 2 */
	mov	%ebx, %eax		/* 2 */
	pop	%rbx
	ret
END(short_next)

/* ErrTooShort: shorter than the jump, and it runs on past its end. */
FUNC(short_falls)
	test	%edi, %edi		/* 2 */
	jne	short_pad		/* 2: falls through into the padding */
END(short_falls)

/* ErrBranchInto: a branch back into the moved bytes. */
FUNC(branch_into)
	push	%rbx			/* 1 */
1:	dec	%edi			/* 2 */
	mov	%edi, %eax		/* 2 */
	jne	1b
	pop	%rbx
	ret
END(branch_into)

/* ErrBranchInto: a loop back to the start (it would enter the site again). */
FUNC(loop_start)
	endbr64
	dec	%edi			/* 2 */
	mov	%edi, %eax		/* 2 */
	add	$1, %eax		/* 3 */
	test	%edi, %edi
	jne	loop_start
	ret
END(loop_start)

/* ErrBranchInto: a call into the middle of the moved bytes. */
FUNC(call_into)
	push	%rbx			/* 1 */
	push	%rbp			/* 1: call_into+1 */
	push	%r12			/* 2 */
	pop	%r12
	pop	%rbp
	pop	%rbx
	call	call_into+1
	ret
END(call_into)

/* ErrJumpTable: a PIC table (gcc's form) with an entry at the moved bytes. */
FUNC(jt_pic_into)
	endbr64
	xor	%eax, %eax		/* 2 */
.Lpi_case0:
	add	$1, %eax		/* 3: entry 0 lands here */
	cmp	$2, %edi
	ja	.Lpi_done
	mov	%edi, %edi
	lea	.Lpi_tbl(%rip), %rdx
	movslq	(%rdx,%rdi,4), %rcx
	add	%rdx, %rcx
	notrack jmp *%rcx
.Lpi_case1:
	mov	$5, %eax
.Lpi_done:
	ret
END(jt_pic_into)

/* Planned: a PIC table (clang's form) whose entries stay past the moved bytes. */
FUNC(jt_pic_ok)
	push	%rbx			/* 1 */
	mov	$17, %eax		/* 5 */
	cmp	$2, %edi
	ja	.Lpo_done
	mov	%edi, %ecx
	lea	.Lpo_tbl(%rip), %rdx
	movslq	(%rdx,%rcx,4), %rcx
	add	%rdx, %rcx
	jmp	*%rcx
.Lpo_case0:
	mov	$1, %eax
	jmp	.Lpo_done
.Lpo_case1:
	mov	$2, %eax
.Lpo_done:
	pop	%rbx
	ret
END(jt_pic_ok)

/* ErrJumpTable: gcc -O0's PIC form, an entry at the function's start. */
FUNC(jt_o0_into)
	push	%rbp			/* 1 */
	mov	%rsp, %rbp		/* 3 */
	mov	%edi, -4(%rbp)		/* 3 */
	cmpl	$1, -4(%rbp)
	ja	.Lo0_done
	mov	-4(%rbp), %eax
	lea	0(,%rax,4), %rdx
	lea	.Lo0_tbl(%rip), %rax
	mov	(%rdx,%rax,1), %eax
	cltq
	lea	.Lo0_tbl(%rip), %rdx
	add	%rdx, %rax
	notrack jmp *%rax
.Lo0_done:
	pop	%rbp
	ret
END(jt_o0_into)

/* ErrJumpTable: a non-PIC table (jmp *tbl(,%rI,8)) with an entry at the moved bytes. */
FUNC(jt_abs_into)
	sub	$8, %rsp		/* 4 */
.Lai_case0:
	add	$8, %rsp		/* 4: entry 0 lands here */
	cmp	$1, %edi
	ja	.Lai_done
	mov	%edi, %edi
	notrack jmp *.Lai_tbl(,%rdi,8)
.Lai_done:
	ret
END(jt_abs_into)

/* Planned: a non-PIC table through a register (-O0), entries past the moved bytes. */
FUNC(jt_abs_ok)
	push	%rbp			/* 1 */
	mov	%rsp, %rbp		/* 3 */
	mov	%edi, %eax		/* 2 */
	mov	.Lao_tbl(,%rax,8), %rax
	notrack jmp *%rax
.Lao_case0:
	mov	$1, %eax
.Lao_case1:
	pop	%rbp
	ret
END(jt_abs_ok)

/* Planned: a PIC table whose base stays in a callee-saved register
 * across a call (the lea long before the jump), entries past the moved bytes. */
FUNC(jt_saved_ok)
	push	%rbx			/* 1 */
	push	%rbp			/* 1 */
	lea	.Lso_tbl(%rip), %rbx	/* 7 */
	call	callee
	cmp	$1, %edi
	ja	.Lso_done
	mov	%edi, %edi
	movslq	(%rbx,%rdi,4), %rax
	add	%rbx, %rax
	jmp	*%rax
.Lso_case0:
	nop
.Lso_done:
	pop	%rbp
	pop	%rbx
	ret
END(jt_saved_ok)

/* ErrJumpTable: a table of addresses read through a lea'd base (GNU C's
 * computed goto in PIC code), an entry at the moved bytes. */
FUNC(jt_goto_into)
	push	%rbx			/* 1 */
.Lgi_top:
	mov	%edi, %eax		/* 2: entry 0 lands here */
	and	$1, %eax		/* 3 */
	dec	%edi
	js	.Lgi_out
	lea	.Lgi_tbl(%rip), %rdx
	mov	(%rdx,%rax,8), %rax
	jmp	*%rax
.Lgi_out:
	pop	%rbx
	ret
END(jt_goto_into)

/* Planned: an indirect tail call through a register read from memory. */
FUNC(tail_reg)
	push	%rbx			/* 1 */
	pop	%rbx			/* 1 */
	mov	8(%rdi), %rax		/* 4 */
	jmp	*%rax
END(tail_reg)

/* ErrUnmovable: loop, jrcxz, syscall among the moved bytes. */
FUNC(unmov_loop)
	loop	1f			/* 2 */
	mov	$1, %eax		/* 5 */
1:	ret
END(unmov_loop)

FUNC(unmov_jrcxz)
	jrcxz	1f			/* 2 */
	mov	$1, %eax		/* 5 */
1:	ret
END(unmov_jrcxz)

FUNC(unmov_syscall)
	xor	%edi, %edi		/* 2 */
	syscall				/* 2 */
	nop				/* 1 */
	ret
END(unmov_syscall)

/* ErrUnmovable: xbegin's fallback address is relative. */
FUNC(unmov_xbegin)
	xbegin	1f			/* 6 */
	xend
1:	ret
END(unmov_xbegin)

/* ErrUnmovable: an AVX instruction among the moved bytes. */
FUNC(unmov_avx)
	vmovdqu	(%rdi), %ymm0		/* c5: 4 */
	vmovdqu	%ymm0, (%rsi)
	vzeroupper
	ret
END(unmov_avx)

/* ErrUnmovable: bytes x/arch does not decode among the moved (rdpkru). */
FUNC(unmov_rdpkru)
	xor	%ecx, %ecx		/* 2 */
	rdpkru				/* 0f 01 ee: 3 */
	ret
END(unmov_rdpkru)

/* ErrUndecodable: bytes that decode as nothing, after the moved ones. */
FUNC(undecodable)
	push	%rbx			/* 1 */
	push	%rbp			/* 1 */
	sub	$8, %rsp		/* 4 */
	.byte	0x06			/* push %es: invalid in 64-bit mode */
	add	$8, %rsp
	pop	%rbp
	pop	%rbx
	ret
END(undecodable)

/* Planned: AVX2 and AVX-512 (VEX, EVEX) code after the moved bytes,
 * vzeroupper (which has no ModRM) among it, then a branch. */
FUNC(avx)
	endbr64
	push	%rbp			/* 1 */
	mov	%rsp, %rbp		/* 3 */
	push	%rbx			/* 1 */
	vmovdqu	(%rdi), %ymm1
	vpcmpeqb (%rsi), %ymm1, %ymm0
	vpmovmskb %ymm0, %eax
	vpshufd	$0x1b, %xmm1, %xmm2
	vpalignr $4, 0x40(%rdi,%rcx,2), %ymm2, %ymm3
	vpxord	%zmm16, %zmm17, %zmm18
	vpcmpb	$0, 0x1000(%rdi), %zmm16, %k1
	kmovq	%k1, %rdx
	shlx	%rax, %rdx, %rcx
	vzeroupper
	test	%eax, %eax
	jne	1f
	vzeroall
1:	pop	%rbx
	pop	%rbp
	ret
END(avx)

/* A target for calls and jumps. */
FUNC(callee)
	ret
END(callee)

	.section .rodata
	.p2align 3
.Lpi_tbl:
	.long	.Lpi_case0-.Lpi_tbl, .Lpi_case1-.Lpi_tbl, .Lpi_done-.Lpi_tbl
.Lpo_tbl:
	.long	.Lpo_case0-.Lpo_tbl, .Lpo_case1-.Lpo_tbl, .Lpo_done-.Lpo_tbl
.Lso_tbl:
	.long	.Lso_case0-.Lso_tbl, .Lso_done-.Lso_tbl
.Lo0_tbl:
	.long	.Lo0_done-.Lo0_tbl, jt_o0_into-.Lo0_tbl
	.p2align 3
.Lai_tbl:
	.quad	.Lai_case0, .Lai_done
.Lgi_tbl:
	.quad	.Lgi_top, .Lgi_out
.Lao_tbl:
	.quad	.Lao_case0, .Lao_case1

	.data
	.p2align 3
gdata:	.quad	0, 0
gptr:	.quad	callee
