// The prologue sites of isa/arm64's tests: one function per case of
// PlanPrologue, each named after it (TestPlanPrologue's table lists what
// each must give). The functions a plan accepts also compute something
// run.c prints, so that TestPrologueRun can compare a patched program's
// output with the original's. Every function is a global symbol with
// its type and size, as a compiler's are; the literals and tables lie
// outside them, as a literal pool or .rodata does.
//
// Calling convention: AAPCS64. x0 is the argument and the result.

	.macro	func name
	.text
	.p2align 3
	.globl	\name
	.type	\name, %function
\name:
	.endm
	.macro	endfunc name
	.size	\name, . - \name
	.endm

// Accepted: the moved word is copied.

	func	copy			// x0 + 1, through a frame
	stp	x29, x30, [sp, #-16]!	// moved: not PC-relative
	mov	x29, sp
	add	x0, x0, #1
	ldp	x29, x30, [sp], #16
	ret
	endfunc	copy

	func	bti_kept		// x0 + 2
	bti	c			// stays: indirect calls land here
	add	x0, x0, #2		// moved
	ret
	endfunc	bti_kept

	func	pac			// x0 + 3
	paciasp				// moved (Authorize): the site runs before it
	stp	x29, x30, [sp, #-16]!
	add	x0, x0, #3
	ldp	x29, x30, [sp], #16
	autiasp
	ret
	endfunc	pac

	func	bti_pac			// x0 + 4
	bti	c
	pacibsp				// moved after the kept bti
	add	x0, x0, #4
	autibsp
	ret
	endfunc	bti_pac

	func	bti_jc			// x0 + 5
	bti	jc
	add	x0, x0, #5
	ret
	endfunc	bti_jc

// Branches.

	func	recurse			// recurse(x0 & 7): 2 * (x0 & 7), by recursion
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	and	x0, x0, #7
	cbz	x0, 1f
	sub	x0, x0, #1
	bl	recurse			// a call to the start: the site counts it
	add	x0, x0, #2
1:	ldp	x29, x30, [sp], #16
	ret
	endfunc	recurse

	func	tail			// tail call: callee(x0) = x0 * 2
	b	callee
	endfunc	tail

// call and ret_addr start with their bl, before anything could save
// x30: their wrappers hand them the return address in x15 instead.

	func	call_w
	stp	x29, x30, [sp, #-16]!
	adr	x15, 1f
	b	call
1:	ldp	x29, x30, [sp], #16
	ret
	endfunc	call_w

	func	call			// callee(x0) + 1, returning to x15
	bl	callee			// moved: x30 = the word after it, in the function
	add	x0, x0, #1
	br	x15
	endfunc	call

	func	ret_addr_w
	stp	x29, x30, [sp, #-16]!
	adr	x15, 1f
	b	ret_addr
1:	ldp	x29, x30, [sp], #16
	ret
	endfunc	ret_addr_w

	func	ret_addr		// the address its bl returns to, less its own, returning to x15
	bl	lr_of			// moved
	adr	x1, ret_addr
	sub	x0, x0, x1		// 4, wherever the bl runs from
	br	x15
	endfunc	ret_addr

	func	lr_of			// x0 = x30
	mov	x0, x30
	ret
	endfunc	lr_of

	func	callee
	lsl	x0, x0, #1
	ret
	endfunc	callee

	func	bcond			// flags from the caller: x0 == 0 ? 10 : 20
	cmp	x0, #0
	b	bcond_tail
	endfunc	bcond

	func	bcond_tail
	b.eq	1f			// moved: the flags come from bcond
	mov	x0, #20
	ret
1:	mov	x0, #10
	ret
	endfunc	bcond_tail

	func	bal			// x0 + 6 (b.al: always taken)
	b.al	1f
	mov	x0, #0
1:	add	x0, x0, #6
	ret
	endfunc	bal

	func	cbz			// x0 == 0 ? 11 : 21
	cbz	x0, 1f
	mov	x0, #21
	ret
1:	mov	x0, #11
	ret
	endfunc	cbz

	func	cbnz			// w0 != 0 ? 12 : 22
	cbnz	w0, 1f
	mov	x0, #22
	ret
1:	mov	x0, #12
	ret
	endfunc	cbnz

	func	tbnz			// bit 3 of x0 ? 13 : 23
	tbnz	w0, #3, 1f
	mov	x0, #23
	ret
1:	mov	x0, #13
	ret
	endfunc	tbnz

	func	tbz			// bit 40 of x0 clear ? 14 : 24
	tbz	x0, #40, 1f
	mov	x0, #24
	ret
1:	mov	x0, #14
	ret
	endfunc	tbz

// Instructions arm64asm does not decode, which compilers and the C
// library use (outline atomics, SVE string functions): known not to be
// branches.

	.arch	armv8.2-a+lse+sve
	func	lse			// x0 + 9, added in memory by ldadd
	sub	sp, sp, #16		// moved
	str	x0, [sp]
	mov	x1, #9
	mov	x2, sp
	ldadd	x1, x3, [x2]
	ldr	x0, [sp]
	add	sp, sp, #16
	ret
	endfunc	lse

	func	sve			// the moved word is SVE: copied (not run: its result is the vector length)
	cntb	x0
	ret
	endfunc	sve

// PC-relative operands.

	func	adr			// the byte at lit_b + x0
	adr	x1, lit_b		// moved
	ldrb	w0, [x1, x0]
	ret
	endfunc	adr

	func	adrp			// the 8 bytes at far_data
	adrp	x1, far_data		// moved: the page made again from the trampoline
	ldr	x0, [x1, #:lo12:far_data]
	ret
	endfunc	adrp

	func	ldr_x			// the 8-byte literal
	ldr	x0, lit_x
	ret
	endfunc	ldr_x

	func	ldr_x4			// the 8-byte literal at an address 4 mod 8
	ldr	x0, lit_x4
	ret
	endfunc	ldr_x4

	func	ldr_w			// the 4-byte literal, zero-extended
	ldr	w0, lit_w
	ret
	endfunc	ldr_w

	func	ldrsw			// the 4-byte literal, sign-extended
	ldrsw	x0, lit_w
	ret
	endfunc	ldrsw

	func	ldr_d			// the 8-byte literal through d0
	ldr	d0, lit_x
	fmov	x0, d0
	ret
	endfunc	ldr_d

	func	ldr_s			// the 4-byte literal through s1
	ldr	s1, lit_w
	fmov	w0, s1
	ret
	endfunc	ldr_s

	func	ldr_q			// the high half of the 16-byte literal through q2
	ldr	q2, lit_q
	mov	x0, v2.d[1]
	ret
	endfunc	ldr_q

	func	prfm			// x0 + 7: the prefetch dropped
	prfm	pldl1keep, lit_x
	add	x0, x0, #7
	ret
	endfunc	prfm

// Jump tables: gcc's dispatch (ldrb; adr; add sxtb #2; br) and clang's
// (ldrb with a register index after a mov; add lsl #2; ldrsw from a
// table of offsets from itself).

	func	jt_gcc			// x0 in 0..2: 30 + x0; else 0
	bti	c
	cmp	w0, #2			// moved: no table entry leads here
	b.hi	9f
	adrp	x1, jt_gcc_tab
	add	x1, x1, #:lo12:jt_gcc_tab
	ldrb	w1, [x1, w0, uxtw]
	adr	x2, 2f
	add	x1, x2, w1, sxtb #2
	br	x1
2:	mov	x0, #30
	ret
3:	mov	x0, #31
	ret
4:	mov	x0, #32
	ret
9:	mov	x0, #0
	ret
	endfunc	jt_gcc
	.section .rodata
jt_gcc_tab:
	.byte	(2b - 2b) / 4, (3b - 2b) / 4, (4b - 2b) / 4

	func	jt_clang		// x0 in 0..3: 40 + x0; else 0
	cmp	w0, #3
	b.hi	9f
	adrp	x9, jt_clang_tab
	mov	w8, w0
	add	x9, x9, #:lo12:jt_clang_tab
	adr	x10, 2f
	ldrb	w11, [x9, x8]
	add	x10, x10, x11, lsl #2
	br	x10
2:	mov	x0, #40
	ret
3:	mov	x0, #41
	ret
4:	mov	x0, #42
	ret
5:	mov	x0, #43
	ret
9:	mov	x0, #0
	ret
	endfunc	jt_clang
	.section .rodata
jt_clang_tab:
	.byte	(2b - 2b) / 4, (3b - 2b) / 4, (4b - 2b) / 4, (5b - 2b) / 4

	func	jt_rel			// x0 in 0..1: 50 + x0; else 0
	cmp	x0, #1
	b.hi	9f
	adrp	x9, jt_rel_tab
	add	x9, x9, #:lo12:jt_rel_tab
	ldrsw	x10, [x9, x0, lsl #2]
	add	x9, x9, x10
	br	x9
2:	mov	x0, #50
	ret
3:	mov	x0, #51
	ret
9:	mov	x0, #0
	ret
	endfunc	jt_rel
	.section .rodata
	.p2align 2
jt_rel_tab:
	.word	2b - jt_rel_tab, 3b - jt_rel_tab

	func	jt_outline		// x0 in 0..2: 60 + x0; else 0: the dispatch out of line, far from its check
	stp	x29, x30, [sp, #-16]!	// moved
	mov	w9, w0			// the index copied before the check of the original
	cmp	w0, #2
	b.ls	5f
	mov	x0, #0
	ldp	x29, x30, [sp], #16
	ret
	.rept	80			// more than the backward search from the load reaches
	nop
	.endr
5:	adrp	x1, jt_outline_tab
	add	x1, x1, #:lo12:jt_outline_tab
	ldrb	w1, [x1, w9, uxtw]
	adr	x2, 2f
	add	x1, x2, w1, sxtb #2
	br	x1
2:	mov	x0, #60
	b	8f
3:	mov	x0, #61
	b	8f
4:	mov	x0, #62
8:	ldp	x29, x30, [sp], #16
	ret
	endfunc	jt_outline
	.section .rodata
jt_outline_tab:
	.byte	(2b - 2b) / 4, (3b - 2b) / 4, (4b - 2b) / 4

// Refused.

	func	jt_into			// a table entry leads to the moved word
	bti	c
1:	cmp	w0, #2
	b.hi	9f
	adrp	x1, jt_into_tab
	add	x1, x1, #:lo12:jt_into_tab
	ldrb	w1, [x1, w0, uxtw]
	adr	x2, 2f
	add	x1, x2, w1, sxtb #2
	br	x1
2:	sub	w0, w0, #1
	b	3f
3:	ret
9:	ret
	endfunc	jt_into
	.section .rodata
jt_into_tab:
	.byte	(2b - 2b) / 4, (1b - 2b) / 4 & 0xff, (3b - 2b) / 4

	func	jt_start		// a table entry leads to the function's start
	cmp	w0, #1
	b.hi	9f
	adrp	x1, jt_start_tab
	add	x1, x1, #:lo12:jt_start_tab
	ldrh	w1, [x1, w0, uxtw #1]
	adr	x2, 2f
	add	x1, x2, w1, sxth #2
	sub	w0, w0, #1
	br	x1
2:	ret
9:	ret
	endfunc	jt_start
	.section .rodata
	.p2align 1
jt_start_tab:
	.hword	(2b - 2b) / 4, (jt_start - 2b) / 4 & 0xffff

	func	jt_unbounded		// no bounds check on the index: the table cannot be read
	adrp	x1, jt_gcc_tab
	add	x1, x1, #:lo12:jt_gcc_tab
	ldrb	w1, [x1, w0, uxtw]
	adr	x2, 2f
	add	x1, x2, w1, sxtb #2
	br	x1
2:	ret
	endfunc	jt_unbounded

	func	into_moved		// a loop back to the moved word
	bti	c
1:	subs	x0, x0, #1
	b.ne	1b
	ret
	endfunc	into_moved

	func	into_start		// a loop back to the function's start (its bti)
	bti	c
	subs	x0, x0, #1
	cbz	x0, 1f
	b	into_start
1:	ret
	endfunc	into_start

	func	bl_moved		// a call to the moved word, after the bti
	bti	c
1:	mov	x0, #1
	bl	1b
	ret
	endfunc	bl_moved

	func	adr_moved		// the moved word's address taken (a computed goto's label)
	bti	c
1:	mov	x0, #1
	adr	x1, 1b
	br	x1
	endfunc	adr_moved

	func	undecodable		// a word that is no instruction, inside the function
	add	x0, x0, #1
	ret
	.word	0
	endfunc	undecodable

	func	unmovable		// the moved word itself does not decode
	.word	0
	ret
	endfunc	unmovable

	func	too_short		// nothing after the bti
	bti	c
	endfunc	too_short

	func	empty
	endfunc	empty

// Literals, outside every function, within ldr's ±1 MiB.
	.text
	.p2align 4
lit_q:	.quad	0x0123456789abcdef, 0x1122334455667788
lit_x:	.quad	0x8877665544332211
	.word	0
lit_x4:	.quad	0x0a0b0c0d0e0f1011	// 4 mod 8
lit_w:	.word	0x89abcdef		// negative as an int32
lit_b:	.byte	61, 62, 63, 64

	.data
	.p2align 3
	.space	4000			// far_data on another page than its neighbours
far_data:
	.quad	0x7766554433221100
