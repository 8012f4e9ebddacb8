/*
 * Where a -pg function's frame is, read from its prologue: for
 * function_graph at arm64's -pg sites (mcount.c). Calls nothing.
 *
 * A -pg site (bl _mcount, gcc's after mov x0, x30) comes after the
 * prologue has built the function's frame record and pointed x29 at it:
 *
 *   [bti c] [paciasp | pacibsp]      the function's start
 *   sub  sp, sp, #M                  any number of these, and of
 *   stp  x29, x30, [sp, #-N]!        stores to the stack, with or
 *   stp  x19, x20, [sp, #K]          without writeback, in any order,
 *   sub  x9, sp, #N                  and reckonings from sp into another
 *                                    register
 *   add  x29, sp, #F                 (mov x29, sp: F = 0)
 *   ...                              (gcc: mov x0, x30; spills)
 *   bl   _mcount                     the site
 *
 * The graph tracer needs the stack pointer the function will return
 * with (its entry sp, the frame's CFA: the shadow entry's key, see
 * graph.h) and where its return address is saved (the frame record's
 * second word: x29 + 8), and, if the prologue signed it, with which key.
 * x29's distance below the entry sp is fixed by the prologue: the sum
 * of its stack pointer decrements up to the add, less F. The walk goes
 * back from the site to the add (at most FRAME_SCAN words, none of them
 * a branch), then back over the prologue's own instructions to the
 * first one that is not (the previous function's last, or padding;
 * never into a page that is not there: FRAME_READABLE),
 * and then forward, adding up. It answers only when the frame record it
 * finds stored (stp x29, x30) is where x29 points; anything else (a
 * prologue it does not know, a frame grown by a loop or by alloca
 * before the site) is "unknown", and the call is recorded as a call.
 */
#ifndef FTRT_ARM64_FRAME_H
#define FTRT_ARM64_FRAME_H

#include <stdint.h>

#include "insn.h"

#define FRAME_SCAN 32 /* words looked at either side of the add: a prologue is shorter */

/* Whether the word at a, the first of its page, may be read: the one
 * before a prologue that starts a page may be in no mapping at all (code
 * placed at a segment's start). The includer says how to ask (mcount.c:
 * a read by process_vm_readv, which fails rather than faults); 1 where
 * the code is known to be there. */
#ifndef FRAME_READABLE
#define FRAME_READABLE(a) 1
#endif

/* How a prologue signed its return address (struct frame_shape). */
enum { FRAME_UNSIGNED, FRAME_KEY_A, FRAME_KEY_B };

/* What a -pg function's prologue says (arm64_frame_shape). */
struct frame_shape {
	uintptr_t cfa; /* the entry sp less x29 */
	int key;       /* FRAME_UNSIGNED, or the key paciasp (A) or pacibsp (B) signed with */
};

#define ARM64_PACIASP 0xd503233fu /* paciasp (hint #25): sign x30 with key A, sp the modifier */
#define ARM64_PACIBSP 0xd503237fu /* pacibsp (hint #27): the same with key B */

/* add x29, sp, #imm12 (mov x29, sp when 0): the frame pointer set. */
static inline int frame_is_fp_set(uint32_t w, uintptr_t *off)
{
	if ((w & 0xffc003ffu) != 0x910003fdu)
		return 0;
	*off = (w >> 10) & 0xfff;
	return 1;
}

/* sub sp, sp, #imm12 {, lsl #12}: *dec is what it takes from sp. */
static inline int frame_is_sub_sp(uint32_t w, uintptr_t *dec)
{
	if ((w & 0xff8003ffu) != 0xd10003ffu)
		return 0;
	*dec = (uintptr_t)((w >> 10) & 0xfff) << ((w >> 22) & 1 ? 12 : 0);
	return 1;
}

/*
 * A store to the stack pointer's address, the prologue's other kind of
 * instruction: stp or str of 64-bit general or floating-point registers
 * (and stp of q registers), at [sp, #imm] or, with writeback, at
 * [sp, #imm]! (*wb: the signed change to sp, a negative one for a
 * push). *fp_rec: it is stp x29, x30 and the record lands at sp + that
 * (after any writeback), else -1.
 */
static inline int frame_is_store(uint32_t w, intptr_t *wb, intptr_t *fp_rec)
{
	*wb = 0;
	*fp_rec = -1;
	if (((w >> 5) & 31) != 31)
		return 0; /* not based on sp */
	uint32_t pair = w & 0xffc00000u;
	int scale;
	switch (pair) {
	case 0xa9000000u: /* stp x, x, [sp, #imm] */
	case 0xa9800000u: /* stp x, x, [sp, #imm]! */
	case 0x6d000000u: /* stp d, d, [sp, #imm] */
	case 0x6d800000u: /* stp d, d, [sp, #imm]! */
		scale = 8;
		break;
	case 0xad000000u: /* stp q, q, [sp, #imm] */
	case 0xad800000u: /* stp q, q, [sp, #imm]! */
		scale = 16;
		break;
	default:
		scale = 0;
	}
	if (scale) {
		intptr_t imm = (intptr_t)((int32_t)(w << 10) >> 25) * scale;
		if (pair & 0x00800000u)
			*wb = imm;
		if ((pair == 0xa9000000u || pair == 0xa9800000u) && (w & 31) == 29 && ((w >> 10) & 31) == 30)
			*fp_rec = pair & 0x00800000u ? 0 : imm;
		return 1;
	}
	if ((w & 0xffc00000u) == 0xf9000000u || (w & 0xffc00000u) == 0xfd000000u)
		return 1; /* str x / str d, [sp, #imm] */
	if ((w & 0xffe00c00u) == 0xf8000c00u || (w & 0xffe00c00u) == 0xfc000c00u) {
		*wb = (intptr_t)((int32_t)(w << 11) >> 23); /* str x / str d, [sp, #imm9]! */
		return 1;
	}
	return 0;
}

/* add or sub xN, sp, #imm12 {, lsl #12} into a register other than sp
 * and x29: a prologue's reckoning that leaves both alone (clang's of a
 * realigned frame: sub x9, sp, #N, and sp with it after x29 is set). */
static inline int frame_is_from_sp(uint32_t w)
{
	uint32_t rd = w & 31;
	return (w & 0x9f8003e0u) == 0x910003e0u && rd != 31 && rd != 29;
}

/* Whether w may lie between the add that sets x29 and the site: not a
 * branch, a return or anything else that leaves the straight line. */
static inline int frame_is_straight(uint32_t w)
{
	if ((w & 0x7c000000u) == 0x14000000u) /* b, bl */
		return 0;
	if ((w & 0xfe000000u) == 0xd6000000u) /* br, blr, ret (and their authenticating forms) */
		return 0;
	if ((w & 0x7e000000u) == 0x34000000u || (w & 0x7e000000u) == 0x36000000u ||
	    (w & 0xff000010u) == 0x54000000u) /* cbz/cbnz, tbz/tbnz, b.cond */
		return 0;
	return 1;
}

/*
 * The frame of the function whose -pg site is at site (struct
 * frame_shape); 0 when its prologue is not one this understands.
 */
static inline int arm64_frame_shape(uintptr_t site, struct frame_shape *fs)
{
	const unsigned char *p = (const unsigned char *)site;
	uintptr_t f = 0;
	int at = 0;
	for (int i = 1; i <= FRAME_SCAN; i++) {
		uint32_t w = arm64_word(p - 4 * i);
		if (frame_is_fp_set(w, &f)) {
			at = i;
			break;
		}
		if (!frame_is_straight(w))
			return 0;
	}
	if (!at)
		return 0;
	/* Back over the prologue to its first instruction. */
	int start = at, key = FRAME_UNSIGNED;
	for (int i = at + 1; i <= at + FRAME_SCAN; i++) {
		if (((uintptr_t)(p - 4 * i) & 0xfff) == 0xffc && !FRAME_READABLE((uintptr_t)(p - 4 * i)))
			break; /* the prologue starts its page, and nothing is before it */
		uint32_t w = arm64_word(p - 4 * i);
		uintptr_t dec;
		intptr_t wb, rec;
		if (w == ARM64_PACIASP || w == ARM64_PACIBSP) {
			key = w == ARM64_PACIASP ? FRAME_KEY_A : FRAME_KEY_B;
			start = i;
			break;
		}
		if (w == ARM64_BTI_C || w == ARM64_BTI_JC)
			break;
		if (!frame_is_sub_sp(w, &dec) && !frame_is_store(w, &wb, &rec) && !frame_is_from_sp(w))
			break;
		start = i;
	}
	/* Forward, the stack pointer relative to the entry's. */
	intptr_t sp = 0, record = 1; /* record: no frame record seen (an odd value) */
	for (int i = start; i > at; i--) {
		uint32_t w = arm64_word(p - 4 * i);
		uintptr_t dec;
		intptr_t wb, rec;
		if (w == ARM64_PACIASP || w == ARM64_PACIBSP)
			continue;
		if (frame_is_sub_sp(w, &dec)) {
			sp -= (intptr_t)dec;
		} else if (frame_is_store(w, &wb, &rec)) {
			sp += wb;
			if (rec >= 0)
				record = sp + rec;
		} else if (!frame_is_from_sp(w)) {
			return 0;
		}
	}
	intptr_t x29 = sp + (intptr_t)f;
	if (record != x29 || x29 >= 0)
		return 0;
	fs->cfa = (uintptr_t)-x29;
	fs->key = key;
	return 1;
}

#endif
