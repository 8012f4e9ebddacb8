/*
 * x86-64's calls into the runtime that a pre-patched site may hold
 * (sites.c asks). Calls nothing.
 */
#include <stdint.h>

#include "arch/site.h"

/*
 * Calls into the runtime that `ftpatch enable` writes (x86-64; the other
 * ports have none yet), to the module's own trampolines (ftrt_targets: in
 * the program, the runtime's; in a shared object, its stub's, which jump
 * into the runtime):
 *   e8 rel32      call ftrace_caller5 / ftrace_mcount_caller5 / ftrace_chain_caller5 / ftrace_stub   5 bytes
 *   67 e8 rel32   addr32 call ftrace_caller6 / ftrace_mcount_caller6 / ftrace_chain_caller6 / ftrace_stub  6
 * ftrt_arch_classify knows only the compiler's calls to the hooks; these
 * are recognised here so that the check of a pre-patched file can accept
 * them and the normal pass can turn them back into NOPs or other calls.
 *
 * Which of caller5, mcount_caller5 and chain_caller5 a site must call
 * depends on where it is in its function, which needs the symbol table:
 * ftpatch verify checks that; here any is accepted, as all are ours.
 *
 * Whether the site at ip calls one of the module's trampolines that a
 * site of the tracer `mode` may call (mode 0: any of them); sets *len.
 */
int ftrt_arch_tramp_call(const unsigned char *ip, int *len, int mode)
{
	int32_t rel;
	uintptr_t target;
	const uintptr_t *t = ftrt_targets;
	if (ip[0] == 0xe8) { /* call rel32 */
		__builtin_memcpy(&rel, ip + 1, 4);
		*len = 5;
	} else if (ip[0] == 0x67 && ip[1] == 0xe8) { /* addr32 call rel32 */
		__builtin_memcpy(&rel, ip + 2, 4);
		*len = 6;
	} else {
		return 0;
	}
	target = (uintptr_t)ip + (uintptr_t)*len + (uintptr_t)(intptr_t)rel;
	if (target == t[FTRT_T_STUB])
		return mode == 0 || mode == FTRT_NOP;
	if (mode == FTRT_NOP)
		return 0;
	if (*len == 5)
		return target == t[FTRT_T_CALLER5] || target == t[FTRT_T_MCALLER5] || target == t[FTRT_T_CHAIN5];
	return target == t[FTRT_T_CALLER6] || target == t[FTRT_T_MCALLER6] || target == t[FTRT_T_CHAIN6];
}
