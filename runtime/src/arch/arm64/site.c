/*
 * arm64 site knowledge for the runtime: what a site may hold, the NOPs
 * that disable it and the calls that enable it. The same facts as the Go
 * package isa/arm64, which checks its encodings against
 * golang.org/x/arch; runtime_test.go checks these words against that
 * package.
 *
 * The sites (sites/ says how recordmcount finds them):
 *   -fpatchable-function-entry=2 (or =4,2: two more NOPs before the
 *   function, the ops literal's slot), at the function's entry, after
 *   `bti c` if it has one; 8 bytes:
 *       nop; nop                       disabled (as the compiler leaves it)
 *       mov x9, x30; bl ftrace_caller  enabled: x9 keeps the caller's
 *                                      return address, which the bl
 *                                      overwrites in x30
 *   -pg, after the prologue, right after `mov x0, x30`; 4 bytes:
 *       bl _mcount                     the compiler's call of the hook
 *       nop                            disabled
 *       bl ftrace_mcount_caller        enabled
 * and, at either, `bl ftrace_stub` for the empty tracer (FTRACE=nop).
 * Every instruction is one aligned 32-bit word: writing one is one store.
 *
 * A patchable area with a pre-function literal calls ftrace_ops_caller
 * (literal.c says which areas have one). In a traced run, and in a
 * process that may patch itself while its threads run (ftrt_trap_armed:
 * the API linked, or FTRACE_CTL), a patchable area the pass leaves
 * disabled becomes `mov x9, x30; nop`, as the kernel's ftrace_init_nop
 * makes it, so that enabling it later is the store of one word (poke.c).
 * In any other run the pass writes nothing, and the areas keep their
 * two NOPs: writing there would make every code page with a site
 * private to every process, traced or not.
 */
#include <stdint.h>
#include <string.h>

#include "arch/poke.h"
#include "arch/site.h"
#include "insn.h"
#include "literal.h"
#include "quick.h"
#include "veneer.h"

static const uint32_t nops[2] = { ARM64_NOP, ARM64_NOP };
static const uint32_t area_off[2] = { ARM64_MOV_X9_X30, ARM64_NOP };
static const uint32_t prologue_off[2] = { ARM64_MOV_X17_X30, ARM64_NOP };

/* A site left disabled: in a traced run or one that may patch itself, a
 * patchable area the compiler listed is `mov x9, x30; nop`, and a site
 * made from a prologue `mov x17, x30; nop` (x9 may hold a value of its
 * callers', x17 never does: ftrace_prologue_caller); otherwise the
 * site's NOPs. */
const unsigned char *ftrt_arch_off(uintptr_t ip, int len)
{
	uintptr_t lit;
	if (len == 8 && (ftrt_mode || ftrt_trap_armed) && ftrt_site_prologue(ip))
		return (const unsigned char *)prologue_off;
	if (len == 8 && (ftrt_mode || ftrt_trap_armed) && ftrt_arm64_area(ip, &lit) != AREA_NONE)
		return (const unsigned char *)area_off;
	return (const unsigned char *)nops;
}

const unsigned char *ftrt_arch_nop(int len)
{
	(void)len; /* one NOP per instruction of the site: a prefix of nops */
	return (const unsigned char *)nops;
}

/* One NOP only: every arm64 CPU runs it. */
const char *ftrt_arch_probe(const char *force)
{
	(void)force;
	return "nop";
}

/* Whether the site at ip follows gcc -pg's `mov x0, x30`. */
static int after_mov_x0(const unsigned char *ip)
{
	return (uintptr_t)ip >= ftrt_walk_seg_lo + 4 && arm64_word(ip - 4) == ARM64_MOV_X0_X30; /* inside the segment */
}

/*
 * What the site at ip holds (reading 8 bytes from ip; and the word
 * before it, when inside the segment, to tell a -pg site from a
 * patchable area; nothing when ip is not 4-byte aligned, which is no
 * site):
 *   bl _mcount                 the compiler's call (-pg): CALL, 4 bytes
 *   nop after mov x0, x30      a disabled -pg site (gcc's): NOP, 4
 *   nop, then no nop           a disabled -pg site (clang's: no mov x0,
 *                              x30 before it; a patchable area is two
 *                              NOPs): NOP, 4
 *   nop; nop                   a patchable area: NOP, 8 (the area is
 *                              its disabled form already: one NOP per
 *                              instruction); or a disabled -pg site
 *                              and a NOP after it, which ftrt_arch_call
 *                              tells apart by where the site is
 *   mov x9, x30; nop           a patchable area disabled in a traced
 *                              run: NOP, 8
 *   mov x17, x30; nop          a prologue site disabled so: NOP, 8
 * Our own calls (mov x9, x30; bl ..., or bl ...) are ftrt_arch_tramp_call's.
 */
enum ftrt_site_state ftrt_arch_classify(const unsigned char *ip, int *len)
{
	if ((uintptr_t)ip & 3)
		return FTRT_SITE_UNKNOWN; /* no instruction starts there: a bogus table entry */
	uint32_t w0 = arm64_word(ip), w1 = arm64_word(ip + 4);
	if (arm64_is_bl(w0)) {
		/* directly, or through the linker's veneer from code beyond
		 * bl's reach of _mcount */
		uintptr_t t = arm64_through_veneer(arm64_bl_target((uintptr_t)ip, w0));
		if (t != ftrt_targets[FTRT_T_MCOUNT] && ftrt_arm64_plt_target(t) != ftrt_targets[FTRT_T_MCOUNT])
			return FTRT_SITE_UNKNOWN; /* nor `bl _mcount@plt` */
		*len = 4;
		return FTRT_SITE_CALL;
	}
	if ((w0 == ARM64_MOV_X9_X30 || w0 == ARM64_MOV_X17_X30) && w1 == ARM64_NOP) {
		*len = 8; /* a patchable area, or a prologue site, as the pass leaves it disabled */
		return FTRT_SITE_NOP;
	}
	if (w0 != ARM64_NOP)
		return FTRT_SITE_UNKNOWN;
	*len = after_mov_x0(ip) || w1 != ARM64_NOP ? 4 : 8;
	return FTRT_SITE_NOP;
}

/* The trampoline an enabled site of len bytes calls where want says: a
 * patchable area (8 bytes, at the entry) ftrace_caller, a -pg site
 * (after the prologue; 4 bytes, or 8 when a NOP follows its own)
 * ftrace_mcount_caller. */
static uintptr_t caller(int len, int want)
{
	const uintptr_t *t = ftrt_targets;
	if (want == WANT_PROLOGUE && len == 8)
		return ftrt_mode == FTRT_NOP ? ftrt_arch_entries.prologue_stub : ftrt_arch_entries.prologue_caller;
	if (want != WANT_ENTRY && want != WANT_MCOUNT)
		return 0; /* no other place has a site: never written */
	if (ftrt_mode == FTRT_NOP)
		return t[FTRT_T_STUB];
	if (len == 8 && want == WANT_ENTRY)
		return t[FTRT_T_CALLER];
	return want == WANT_MCOUNT ? t[FTRT_T_MCALLER] : 0;
}

uintptr_t ftrt_arch_call_target(int len, int want)
{
	return caller(len, want);
}

/*
 * The words that enable the site at ip of len bytes (into buf, 8 bytes):
 *   mov x9, x30; bl ftrace_ops_caller    a patchable area with a literal,
 *                                        which is written here first
 *   mov x9, x30; bl ftrace_caller        a patchable area (8), at the entry
 *   mov x17, x30; bl ftrace_prologue_caller   a site made from a prologue
 *                                        (8): x9 may be its callers'
 *   mov x17, x30; bl ftrace_prologue_stub     its empty tracer
 *   bl ftrace_mcount_caller              a -pg site (4), after the prologue
 *   bl ftrace_mcount_caller; nop         a -pg site classified with the
 *                                        NOP after it (8): that NOP stays
 *   [mov x9, x30;] bl ftrace_stub        the empty tracer
 * A trampoline beyond bl's reach of the site is called through a veneer
 * placed within it (veneer.c). 0, or -1 when no veneer can be placed or
 * the site is of no shape the tracer serves.
 */
int ftrt_arch_call(uintptr_t ip, int len, int want, unsigned char *buf)
{
	uintptr_t target = caller(len, want), lit = 0;
	if (!target)
		return -1;
	/* A patchable area with a literal calls ftrace_ops_caller, once the
	 * literal points at the tracer's ops record. */
	int area = want == WANT_ENTRY && target == ftrt_targets[FTRT_T_CALLER] ? ftrt_arm64_area(ip, &lit) : AREA_NONE;
	if (area == AREA_LITERAL)
		target = ftrt_targets[FTRT_T_OPS];
	uint32_t w[2];
	uintptr_t at = want != WANT_MCOUNT ? ip + 4 : ip; /* the bl: the second word of a patchable area */
	uint32_t bl = ftrt_arm64_bl_to(at, target);
	if (!bl)
		return -1;
	if (area == AREA_LITERAL) {
		/* One aligned 64-bit store, made visible before the bl that
		 * reads it is stored (a release store orders what comes before
		 * it, not the store after: the fence does, dmb ish). */
		__atomic_store_n((uintptr_t *)lit, (uintptr_t)ftrt_arm64_tracer_ops(ftrt_mode), __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
	}
	if (ftrt_pass_stats && area == AREA_LITERAL)
		ftrt_pass_stats->literal++;
	else if (ftrt_pass_stats && area == AREA_MISALIGNED)
		ftrt_pass_stats->misaligned++;
	if (want == WANT_ENTRY || want == WANT_PROLOGUE) {
		w[0] = want == WANT_PROLOGUE ? ARM64_MOV_X17_X30 : ARM64_MOV_X9_X30;
		w[1] = bl;
	} else {
		w[0] = bl;
		w[1] = ARM64_NOP;
	}
	memcpy(buf, w, 8);
	return 0;
}

/* No per-site trampolines on arm64: nothing to own, seal or release. */
void ftrt_arch_begin(int o)
{
	(void)o;
}

void ftrt_arch_seal(void)
{
}

void ftrt_arch_release(int o)
{
	(void)o;
}

/* arm64 has no -mfentry: no site calls an entry hook. */
int ftrt_arch_entry_call(const unsigned char *ip)
{
	(void)ip;
	return 0;
}

/* Nor GNU C nested functions' chain sites (the static chain is x18's,
 * no push around a call). */
int ftrt_arch_chain(uintptr_t ip, int len, uintptr_t lo)
{
	(void)ip, (void)len, (void)lo;
	return 0;
}

/* A site is at its function's entry when it is the function's first
 * word, or the second after a landing pad (bti c, bti jc). */
int ftrt_arch_at_entry(uintptr_t ip, uintptr_t start, uintptr_t end)
{
	if (ip < start || ip >= end)
		return 0;
	if (ip == start)
		return 1;
	uint32_t w = arm64_word((const unsigned char *)start);
	return ip == start + 4 && (w == ARM64_BTI_C || w == ARM64_BTI_JC);
}
