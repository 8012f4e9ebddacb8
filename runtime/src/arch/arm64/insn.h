/*
 * The arm64 instructions the runtime reads and writes at sites, as 32-bit
 * words: the same as the Go package isa/arm64's, which checks them
 * against golang.org/x/arch (runtime_test.go checks these against that
 * package). Calls nothing.
 */
#ifndef FTRT_ARM64_INSN_H
#define FTRT_ARM64_INSN_H

#include <stdint.h>
#include <string.h>

#define ARM64_NOP 0xd503201fu        /* nop (hint #0) */
#define ARM64_MOV_X9_X30 0xaa1e03e9u /* mov x9, x30 (orr x9, xzr, x30) */
#define ARM64_MOV_X17_X30 0xaa1e03f1u /* mov x17, x30: a prologue site's first word */
#define ARM64_MOV_X0_X30 0xaa1e03e0u /* mov x0, x30: what gcc -pg puts before bl _mcount */
#define ARM64_BTI_C 0xd503245fu      /* bti c (hint #34) */
#define ARM64_BTI_JC 0xd50324dfu     /* bti jc (hint #38) */
#define ARM64_BL_OP 0x94000000u      /* bl: the opcode; the low 26 bits count words, signed */
#define ARM64_BL_MASK 0xfc000000u

/* The word at p (any alignment). */
static inline uint32_t arm64_word(const unsigned char *p)
{
	uint32_t w;
	memcpy(&w, p, 4);
	return w;
}

/* Whether w is a bl. */
static inline int arm64_is_bl(uint32_t w)
{
	return (w & ARM64_BL_MASK) == ARM64_BL_OP;
}

/* Where the bl w at ip goes: imm26 words from ip, signed. */
static inline uintptr_t arm64_bl_target(uintptr_t ip, uint32_t w)
{
	return ip + (uintptr_t)((intptr_t)((int32_t)(w << 6) >> 6) * 4);
}

/*
 * Where a branch to t really goes when t is a veneer, a stub that takes
 * a bl beyond its reach the rest of the way through x16:
 *   adrp x16, T; add x16, x16, #:lo12:T; br x16    the linkers' (ld, lld)
 *   ldr x16, .+8; br x16; .quad T                  the runtime's (veneer.c)
 * T then; t itself when it holds neither.
 */
#define ARM64_BR_X16 0xd61f0200u      /* br x16 */
#define ARM64_LDR_X16_8 0x58000050u   /* ldr x16, .+8 (a literal 8 bytes on) */
static inline uintptr_t arm64_through_veneer(uintptr_t t)
{
	/* Each word is read only when those before it are a veneer's: a
	 * branch target may be a function one word long at a mapping's end. */
	const unsigned char *p = (const unsigned char *)t;
	uint32_t w0 = arm64_word(p);
	if (w0 == ARM64_LDR_X16_8 && arm64_word(p + 4) == ARM64_BR_X16) {
		uint64_t to;
		memcpy(&to, p + 8, 8);
		return (uintptr_t)to;
	}
	if ((w0 & 0x9f00001fu) == 0x90000010u && (arm64_word(p + 4) & 0xff8003ffu) == 0x91000210u &&
	    arm64_word(p + 8) == ARM64_BR_X16) {
		uint32_t w1 = arm64_word(p + 4);
		/* adrp: a signed 21-bit count of 4 KiB pages from t's page */
		uint64_t imm = (uint64_t)((((w0 >> 5) & 0x7ffffu) << 2) | ((w0 >> 29) & 3u));
		int64_t pages = (int64_t)(imm << 43) >> 43;
		uintptr_t lo = ((w1 >> 10) & 0xfffu) << ((w1 >> 22) & 1 ? 12 : 0);
		return (t & ~(uintptr_t)0xfff) + (uintptr_t)(pages * 4096) + lo;
	}
	return t;
}

/* What the PLT entry at t branches to through its GOT slot; 0 when t
 * is none (near.c). */
uintptr_t ftrt_arm64_plt_target(uintptr_t t) __attribute__((visibility("hidden")));

/* `bl target` at ip, or 0 when target is beyond bl's ±128 MiB (or not a
 * word apart). */
static inline uint32_t arm64_bl(uintptr_t ip, uintptr_t target)
{
	int64_t d = (int64_t)(target - ip);
	if (d & 3 || d < -(1ll << 27) || d >= (1ll << 27))
		return 0;
	return ARM64_BL_OP | ((uint32_t)(d >> 2) & 0x3ffffffu);
}

#endif
