/*
 * arm64: what the preloaded runtime (runtime.SharedLibName) gives a
 * module that no stub describes (site.h: ftrt_arch_targets_near,
 * ftrt_arch_area_site), and how a -pg site's call through the module's
 * PLT is known for a call of the hook.
 *
 * A module's targets are the runtime's own: a site beyond bl's reach of
 * them calls a veneer placed within it (veneer.c), as in a program whose
 * code spans more than bl reaches.
 */
#include <stdint.h>
#include <string.h>

#include "arch/site.h"
#include "insn.h"

int ftrt_arch_targets_near(uintptr_t near, const uintptr_t runtime[FTRT_T_N], uintptr_t targets[FTRT_T_N])
{
	(void)near;
	memcpy(targets, runtime, FTRT_T_N * sizeof *targets);
	return 0;
}

/*
 * A patchable area of -fpatchable-function-entry=N,M starts M words
 * before the function: =2 (M 0) is the site itself, after a `bti c`
 * where the area begins with one; =4,2 (M 2) has two NOPs before the
 * function, which begins with the site (after its `bti c`). Told apart
 * by the words: four NOPs in a row (or two, bti c, two) are an area with
 * words before the function.
 */
uintptr_t ftrt_arch_area_site(uintptr_t area)
{
	const unsigned char *p = (const unsigned char *)area;
	if (area & 3)
		return 0;
	uint32_t w[5];
	for (int i = 0; i < 5; i++)
		w[i] = arm64_word(p + 4 * i);
	if (w[0] == ARM64_NOP && w[1] == ARM64_NOP) {
		if (w[2] == ARM64_NOP && w[3] == ARM64_NOP)
			return area + 8;
		if ((w[2] == ARM64_BTI_C || w[2] == ARM64_BTI_JC) && w[3] == ARM64_NOP && w[4] == ARM64_NOP)
			return area + 12;
		return area;
	}
	if ((w[0] == ARM64_BTI_C || w[0] == ARM64_BTI_JC) && w[1] == ARM64_NOP && w[2] == ARM64_NOP)
		return area + 4;
	return 0;
}

/*
 * What the PLT entry at t branches to: the word in its GOT slot, for a
 * -pg site's `bl _mcount@plt` in a module linked without the runtime (the
 * loader binds the slot to the preloaded runtime's _mcount, and the
 * load-time pass binds a lazy one first). The entry, as GNU ld and lld
 * write it:
 *
 *   [bti c]
 *   adrp x16, slot's page        90000010 | immhi:immlo
 *   ldr  x17, [x16, #lo]         f9400211 | imm12 (words)
 *   add  x16, x16, #lo
 *   br   x17                     d61f0220
 *
 * 0 when t is no PLT entry inside the segment being walked.
 */
uintptr_t ftrt_arm64_plt_target(uintptr_t t)
{
	if (t & 3 || t < ftrt_walk_seg_lo || t >= ftrt_walk_seg_hi || ftrt_walk_seg_hi - t < 20)
		return 0;
	const unsigned char *p = (const unsigned char *)t;
	if (arm64_word(p) == ARM64_BTI_C)
		p += 4;
	uint32_t w0 = arm64_word(p), w1 = arm64_word(p + 4);
	if ((w0 & 0x9f00001fu) != 0x90000010u || (w1 & 0xffc003ffu) != 0xf9400211u || arm64_word(p + 12) != 0xd61f0220u)
		return 0;
	uint64_t imm = (uint64_t)((((w0 >> 5) & 0x7ffffu) << 2) | ((w0 >> 29) & 3u));
	int64_t pages = (int64_t)(imm << 43) >> 43;
	uintptr_t slot = ((uintptr_t)p & ~(uintptr_t)0xfff) + (uintptr_t)(pages * 4096) + (((w1 >> 10) & 0xfffu) << 3);
	return *(const uintptr_t *)slot;
}
