/*
 * arm64 sites the load-time pass must handle beyond the compiler's usual
 * ones, with both tables written by hand (GNU as; link -no-pie): the
 * site table (__mcount_loc) and the compiler's list of patchable areas
 * (__patchable_function_entries), which says where a pre-function
 * literal is. In address order:
 *
 *   odd_nop       a -pg site already a NOP (after mov x0, x30): kept
 *   odd_call      bl _mcount after the prologue: the usual -pg site
 *   odd_area      a patchable area (=2) listed at the entry, with two
 *                 NOPs before the function that are no slot (padding,
 *                 not listed): enabled through ftrace_caller, and the
 *                 padding never written
 *   odd_literal   =4,2: the area listed at its 8-byte aligned slot before
 *                 the function: enabled through its literal
 *   odd_skew      =4,2 with the slot 4 bytes off 8-byte alignment: never
 *                 a literal; enabled through ftrace_caller, counted
 *                 misaligned
 *   odd_half      an entry two bytes into a word (data the function
 *                 branches over, which reads as two NOPs from there):
 *                 never a site, never written
 *   odd_other     bl to a function that is no hook: unexpected, never
 *                 written
 *   odd_mov       mov w0, #8: unexpected, never written
 *
 * Each returns its number, which oddarm64.c prints, so a site written
 * wrongly shows in the output as well as in the bytes.
 */
	.text

#include "sitetables.h"

	.p2align 4
	FUNC odd_nop
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	mov	x0, x30
1:	nop
	mov	w0, #1
	ldp	x29, x30, [sp], #16
	ret
	END odd_nop
	SITE 1b

	.p2align 4
	FUNC odd_call
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	mov	x0, x30
1:	bl	_mcount
	mov	w0, #2
	ldp	x29, x30, [sp], #16
	ret
	END odd_call
	SITE 1b

	.p2align 4
	nop				/* padding: two NOPs, 8-byte aligned, no slot */
	nop
	FUNC odd_area
	nop
	nop
	mov	w0, #3
	ret
	END odd_area
	SITE odd_area
	AREA odd_area

	.p2align 4
1:	nop				/* the slot: 8-byte aligned */
	nop
	FUNC odd_literal
	nop
	nop
	mov	w0, #4
	ret
	END odd_literal
	SITE odd_literal
	AREA 1b

	.p2align 4
	nop
1:	nop				/* the slot, 4 bytes off 8-byte alignment */
	nop
	FUNC odd_skew
	nop
	nop
	mov	w0, #5
	ret
	END odd_skew
	SITE odd_skew
	AREA 1b

	.p2align 4
	FUNC odd_half
	b	2f
1:	.hword	0
	.word	0xd503201f		/* from 1b + 2: nop, nop */
	.word	0xd503201f
	.hword	0
2:	mov	w0, #6
	ret
	END odd_half
	SITE 1b + 2

	.p2align 4
	FUNC odd_other
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	mov	x0, x30
1:	bl	odd_leaf
	mov	w0, #7
	ldp	x29, x30, [sp], #16
	ret
	END odd_other
	SITE 1b

	.p2align 4
	FUNC odd_mov
1:	mov	w0, #8
	ret
	END odd_mov
	SITE 1b

	.p2align 4
	FUNC odd_leaf
	ret
	END odd_leaf

	.section .note.GNU-stack, "", %progbits
