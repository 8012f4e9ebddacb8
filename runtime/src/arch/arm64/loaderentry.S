/*
 * arm64: ftrt_loader_entry, where the loader's debugger hook leads
 * (arch/loader.h, loader.c): r_brk's `ret` became `b page`, whose
 * `ldr x16, #8; br x16` comes here. On entry:
 *
 *     x30  the return into the loader (its call of r_brk)
 *     x16  this address (IP0: a call may change it anyway)
 *     sp   the caller's, 16-byte aligned, nothing pushed
 *
 * The loader is compiled with gcc -O2, whose -fipa-ra sees that r_brk
 * changes no register: its callers may keep values in any of them
 * across the call but x16 and x17 (a veneer's) and the flags. So every
 * other register comes back as it came: x0-x15, x17, x18 and x30 (the
 * C call keeps x19-x29 itself), all of q0-q31 (ftrt_loader_call runs C
 * library code, which may use any of them), NZCV, FPSR and FPCR.
 *
 * Frame (FRAME bytes below the caller's sp):
 *
 *      0  x29, x30        a frame record
 *     16  x0 .. x15       (x0 at 16, x15 at 136)
 *    144  x17, x18
 *    160  NZCV, FPSR
 *    176  FPCR, -
 *    192  q0 .. q31       (q0 at 192, q31 at 688)
 */
#include "arch/arm64/args.h"

#define FRAME 704
#define Q 192

	.text
	ENTRY	ftrt_loader_entry
	.hidden	ftrt_loader_entry
	sub	sp, sp, #FRAME
	.cfi_def_cfa_offset FRAME
	stp	x29, x30, [sp]
	.cfi_offset x29, -FRAME
	.cfi_offset x30, -FRAME + 8
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	stp	x8, x9, [sp, #80]
	stp	x10, x11, [sp, #96]
	stp	x12, x13, [sp, #112]
	stp	x14, x15, [sp, #128]
	stp	x17, x18, [sp, #144]
	mrs	x0, nzcv
	mrs	x1, fpsr
	stp	x0, x1, [sp, #160]
	mrs	x0, fpcr
	str	x0, [sp, #176]
	stp	q0, q1, [sp, #Q + 0]
	stp	q2, q3, [sp, #Q + 32]
	stp	q4, q5, [sp, #Q + 64]
	stp	q6, q7, [sp, #Q + 96]
	stp	q8, q9, [sp, #Q + 128]
	stp	q10, q11, [sp, #Q + 160]
	stp	q12, q13, [sp, #Q + 192]
	stp	q14, q15, [sp, #Q + 224]
	stp	q16, q17, [sp, #Q + 256]
	stp	q18, q19, [sp, #Q + 288]
	stp	q20, q21, [sp, #Q + 320]
	stp	q22, q23, [sp, #Q + 352]
	stp	q24, q25, [sp, #Q + 384]
	stp	q26, q27, [sp, #Q + 416]
	stp	q28, q29, [sp, #Q + 448]
	stp	q30, q31, [sp, #Q + 480]
	adrp	x16, ftrt_loader_call
	ldr	x16, [x16, #:lo12:ftrt_loader_call]
	blr	x16				/* ftrt_loader_call() */
	ldp	q0, q1, [sp, #Q + 0]
	ldp	q2, q3, [sp, #Q + 32]
	ldp	q4, q5, [sp, #Q + 64]
	ldp	q6, q7, [sp, #Q + 96]
	ldp	q8, q9, [sp, #Q + 128]
	ldp	q10, q11, [sp, #Q + 160]
	ldp	q12, q13, [sp, #Q + 192]
	ldp	q14, q15, [sp, #Q + 224]
	ldp	q16, q17, [sp, #Q + 256]
	ldp	q18, q19, [sp, #Q + 288]
	ldp	q20, q21, [sp, #Q + 320]
	ldp	q22, q23, [sp, #Q + 352]
	ldp	q24, q25, [sp, #Q + 384]
	ldp	q26, q27, [sp, #Q + 416]
	ldp	q28, q29, [sp, #Q + 448]
	ldp	q30, q31, [sp, #Q + 480]
	ldr	x0, [sp, #176]
	msr	fpcr, x0
	ldp	x0, x1, [sp, #160]
	msr	nzcv, x0
	msr	fpsr, x1
	ldp	x0, x1, [sp, #16]
	ldp	x2, x3, [sp, #32]
	ldp	x4, x5, [sp, #48]
	ldp	x6, x7, [sp, #64]
	ldp	x8, x9, [sp, #80]
	ldp	x10, x11, [sp, #96]
	ldp	x12, x13, [sp, #112]
	ldp	x14, x15, [sp, #128]
	ldp	x17, x18, [sp, #144]
	ldp	x29, x30, [sp]
	add	sp, sp, #FRAME
	.cfi_def_cfa_offset 0
	ret					/* r_brk's own ret */
	END	ftrt_loader_entry

	.section .note.GNU-stack, "", @progbits
