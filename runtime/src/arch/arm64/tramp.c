/*
 * arm64's calls into the runtime that a pre-patched site may hold
 * (sites.c asks). Calls nothing.
 */
#include <stdint.h>
#include <string.h>

#include "arch/site.h"
#include "insn.h"
#include "literal.h"

/*
 * Calls into the module's trampolines (ftrt_targets) as the runtime, or
 * `ftpatch enable`, writes them (see site.c):
 *   mov x9, x30; bl ftrace_caller / ftrace_stub    a patchable area, 8 bytes
 *   mov x9, x30; bl ftrace_ops_caller              one with a literal, 8,
 *                                                  the literal pointing at
 *                                                  the tracer's ops record
 *   bl ftrace_mcount_caller / ftrace_stub           a -pg site, 4
 * (directly, or through a veneer from code beyond bl's reach). Whether
 * the site at ip holds one that a site of the tracer `mode` may call
 * (mode 0: any of them); sets *len.
 */
int ftrt_arch_tramp_call(const unsigned char *ip, int *len, int mode)
{
	if ((uintptr_t)ip & 3)
		return 0; /* no instruction starts there */
	uint32_t w0 = arm64_word(ip), w1 = arm64_word(ip + 4);
	const uintptr_t *t = ftrt_targets;
	uintptr_t at = (uintptr_t)ip;
	uint32_t w = w0;
	*len = 4;
	if (w0 == ARM64_MOV_X9_X30 || w0 == ARM64_MOV_X17_X30) {
		at += 4, w = w1;
		*len = 8;
	}
	if (!arm64_is_bl(w))
		return 0;
	uintptr_t target = arm64_through_veneer(arm64_bl_target(at, w)); /* veneer.c's, for code far away */
	if (w0 == ARM64_MOV_X17_X30) /* a prologue site's */
		return target == ftrt_arch_entries.prologue_stub ? mode == 0 || mode == FTRT_NOP
		     : target == ftrt_arch_entries.prologue_caller && mode != FTRT_NOP;
	if (target == t[FTRT_T_STUB])
		return mode == 0 || mode == FTRT_NOP;
	if (mode == FTRT_NOP)
		return 0;
	if (*len == 8 && target == t[FTRT_T_OPS]) {
		uintptr_t lit = ftrt_arm64_literal(at - 4);
		const struct ftrt_ops *ops = lit ? ftrt_arm64_literal_ops(lit) : NULL;
		if (!ops)
			return 0; /* no literal, or one pointing elsewhere: never ours */
		return mode == 0 || ops == ftrt_arm64_tracer_ops(mode);
	}
	return target == (*len == 8 ? t[FTRT_T_CALLER] : t[FTRT_T_MCALLER]);
}
