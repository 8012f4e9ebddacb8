/*
 * Changing arm64 sites while other threads run them (live.h).
 *
 * Every instruction is one aligned 32-bit word, and the architecture
 * lets a core run a word that another core changes, without either
 * synchronising, when the word before and the word after are both among
 * B, BL, BRK, NOP, ISB, SVC, HVC and SMC (the ARM ARM's concurrent
 * modification and execution rule): the core runs the old or the new
 * one. So a change that swaps one NOP for one BL, or one BL for another,
 * needs no breakpoint protocol. Each site of a batch changes by exactly
 * one such word:
 *
 *   -pg site                    nop  <->  bl ftrace_mcount_caller
 *   patchable area (8 bytes)    mov x9, x30; nop  <->  mov x9, x30; bl ftrace_caller
 *
 * The area's `mov x9, x30` is written before any thread could run it:
 * by the load-time pass, in a traced run and in a process that may
 * patch itself (the API linked, or FTRACE_CTL: trap.c's armed), as the
 * kernel's ftrace_init_nop does at boot. An area still `nop; nop` (a
 * module whose compiler listed no areas) would need two words changed,
 * which a thread between them could see half done (a bl with x9 not
 * holding the return address): live patching leaves it off.
 *
 * A site enabled live calls the module's shared trampoline, which reads
 * the tracer from one process-wide variable, so a change of tracer
 * writes no code. The load-time pass's sites that call the pre-function
 * literal's ftrace_ops_caller (their tracer is the literal's) are moved
 * to it first, one BL for another (ftrt_arch_live_shared).
 *
 * The words go through text.c (/proc/self/mem: the code is never
 * writable). The kernel's write there cleans the data cache and
 * invalidates the instruction cache for the lines it wrote, when the
 * mapping is executable (arm64's copy_to_user_page), and the patcher
 * does it again by the program's addresses; one membarrier SYNC_CORE
 * after the batch then makes every thread discard what it fetched
 * before (an exception return is context-synchronising), so when
 * ftrt_arch_poke returns, no thread runs a site's old word again.
 * A span that covers several sites writes the words between them with
 * the values they hold: a store of the same value changes no
 * instruction.
 *
 * No thread ever traps: ftrt_arch_trap leaves every SIGTRAP to the
 * program.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "arch/poke.h"
#include "arch/site.h"
#include "insn.h"
#include "veneer.h"

/* The batch being applied, for a child forked meanwhile. */
static const struct ftrt_poke *volatile batch;
static volatile size_t nbatch;

const char *ftrt_arch_live_refused(void)
{
	return NULL;
}

int ftrt_arch_poke(struct ftrt_poke *p, size_t n)
{
	if (n == 0)
		return 0;
	batch = p;
	nbatch = n;
	int err = ftrt_text_put_new(p, n);
	/* The kernel's write cleaned and invalidated the lines through its
	 * own mapping of the pages; this does it through the program's (dc
	 * cvau, ic ivau by address, broadcast to every core), which is what
	 * an instruction cache indexed by virtual address needs, and what
	 * an emulator watches for (qemu-user drops what it translated from
	 * a line at ic ivau, from version 10). */
	for (size_t i = 0; i < n; i++)
		__builtin___clear_cache((char *)p[i].ip, (char *)p[i].ip + p[i].len);
	/* Even after a refused write: the spans written before it. */
	ftrt_text_sync();
	nbatch = 0;
	batch = NULL;
	return err;
}

/* Each site is its old word or its new one whatever the parent's thread
 * had written when the process forked: both run. The child finishes the
 * batch, so that its sites are what the parent's live.c counted. */
void ftrt_arch_poke_after_fork(void)
{
	const struct ftrt_poke *p = batch;
	size_t n = nbatch;
	if (!p || !n || ftrt_text_open() != 0)
		return;
	ftrt_text_put_new(p, n);
	nbatch = 0;
	batch = NULL;
}

int ftrt_arch_trap(const siginfo_t *si, void *uc, int (*is_site)(uintptr_t ip))
{
	(void)si, (void)uc, (void)is_site;
	return 0;
}

/* Where the bl of a site that calls the runtime goes, through a veneer
 * (0: no bl at *at), and the bl's place in *at. */
static uintptr_t bl_target(uintptr_t ip, uintptr_t *at, int *len)
{
	uint32_t w0 = arm64_word((const unsigned char *)ip);
	*at = ip, *len = 4;
	if (w0 == ARM64_MOV_X9_X30 || w0 == ARM64_MOV_X17_X30) {
		*at = ip + 4, *len = 8;
		w0 = arm64_word((const unsigned char *)ip + 4);
	}
	if (!arm64_is_bl(w0))
		return 0;
	return arm64_through_veneer(arm64_bl_target(*at, w0));
}

/*
 * What a site holds: enabled (a bl of one of the module's trampolines,
 * after `mov x9, x30` in an area), disabled (a NOP; an area's `mov x9,
 * x30; nop` or `nop; nop`), or anything else (the compiler's bl _mcount,
 * which the load-time pass replaces in every process that patches
 * itself, among them).
 */
int ftrt_arch_live_state(uintptr_t ip, int *len)
{
	if (ip & 3)
		return -1;
	uintptr_t at;
	int l;
	if (ftrt_arch_tramp_call((const unsigned char *)ip, &l, 0)) {
		*len = l;
		return 1;
	}
	/* A call of ftrace_ops_caller, which tramp.c takes for ours only
	 * with the module's list of areas, the load-time pass's alone. */
	uintptr_t target = bl_target(ip, &at, &l);
	if (target && l == 8 && target == ftrt_targets[FTRT_T_OPS]) {
		*len = l;
		return 1;
	}
	if (target && (ftrt_arch_live_ops_rec(ip, l) || ftrt_arch_direct_known(target))) {
		*len = l; /* a call of an ops trampoline (opstramp.c), or of a direct one */
		return 1;
	}
	if (target)
		return -1;
	enum ftrt_site_state st = ftrt_arch_classify((const unsigned char *)ip, &l);
	if (st != FTRT_SITE_NOP)
		return -1;
	*len = l;
	return 0;
}

/* The words that enable the site: the shared trampoline's bl in place
 * of the NOP the site's call goes in (ftrt_arch_call's forms, without
 * the literal), only when no other word changes. */
int ftrt_arch_live_call(uintptr_t ip, int len, int want, int whole, unsigned char *buf)
{
	(void)whole; /* every arm64 site is one word */
	const uintptr_t *t = ftrt_targets;
	uint32_t w[2] = { arm64_word((const unsigned char *)ip), len == 8 ? arm64_word((const unsigned char *)ip + 4) : ARM64_NOP };
	uintptr_t target, at;
	int k;
	if (want == WANT_ENTRY && len == 8) {
		if (w[0] != ARM64_MOV_X9_X30)
			return -1; /* `nop; nop`: two words would change */
		target = t[FTRT_T_CALLER], at = ip + 4, k = 1;
	} else if (want == WANT_PROLOGUE && len == 8) {
		if (w[0] != ARM64_MOV_X17_X30)
			return -1;
		target = ftrt_arch_entries.prologue_caller, at = ip + 4, k = 1;
	} else if (want == WANT_MCOUNT) {
		target = t[FTRT_T_MCALLER], at = ip, k = 0;
	} else {
		return -1;
	}
	if (w[k] != ARM64_NOP && !arm64_is_bl(w[k]))
		return -1;
	uint32_t bl = ftrt_arm64_bl_to(at, target);
	if (!bl)
		return -1;
	w[k] = bl;
	memcpy(buf, w, (size_t)len);
	return 0;
}

/* The words that disable it: its bl a NOP, the rest as it is (an area
 * keeps its `mov x9, x30`). */
void ftrt_arch_live_off(uintptr_t ip, int len, unsigned char *buf)
{
	uint32_t w[2] = { arm64_word((const unsigned char *)ip), len == 8 ? arm64_word((const unsigned char *)ip + 4) : ARM64_NOP };
	int k = len == 8 && (w[0] == ARM64_MOV_X9_X30 || w[0] == ARM64_MOV_X17_X30) ? 1 : 0;
	w[k] = ARM64_NOP;
	memcpy(buf, w, (size_t)len);
}

/* Whether the enabled site at ip calls a trampoline that follows the
 * process-wide tracer: ftrace_caller or ftrace_mcount_caller, not the
 * literal's ftrace_ops_caller nor the empty tracer's stub. */
int ftrt_arch_live_shared(uintptr_t ip, int len)
{
	(void)len;
	uintptr_t at;
	int l;
	uintptr_t target = bl_target(ip, &at, &l);
	return target && (target == ftrt_targets[FTRT_T_CALLER] || target == ftrt_targets[FTRT_T_MCALLER] ||
			  target == ftrt_arch_entries.prologue_caller);
}
