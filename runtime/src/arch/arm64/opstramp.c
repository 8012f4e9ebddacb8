/*
 * arm64's ops trampolines (ops.S draws one; ops.c chooses which record a
 * site calls): one per ops record and caller (a patchable area's, a -pg
 * site's), OPS_TRAMP bytes, in pages within bl's reach of the sites they
 * serve (veneer.c's map_near). A page is read-only and executable from
 * the start; a trampoline is written into its unused part through
 * /proc/self/mem (text.c), its lines invalidated by the program's
 * address, before any site calls it. Pages stay for the process's life
 * (a thread may be on its way into a trampoline no site calls any
 * longer); a trampoline serves any module in its reach, and is found
 * again for the same record. Under the registry's lock (ops.c, live.c).
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/poke.h"
#include "arch/site.h"
#include "insn.h"
#include "veneer.h"

#define PAGES 64
#define PAGE 4096
#define OPS_TRAMP 32
#define OPS_LDR_X11 0x5800008bu /* ldr x11, .+16 */
#define OPS_LDR_X16 0x580000b0u /* ldr x16, .+20 */
#define OPS_BRK 0xd4200000u     /* brk #0: never run */
/* A site made from a prologue's (ops.S's ftrace_ops_prologue_caller):
 * the function's callers may keep a value in x11 across the call, so it
 * goes on the stack first, and the literals are one word nearer:
 *     str  x11, [sp, #-16]!
 *     ldr  x11, .+12
 *     ldr  x16, .+16
 *     br   x16
 *     .quad record
 *     .quad caller */
#define OPS_STR_X11_PRE 0xf81f0febu /* str x11, [sp, #-16]! */
#define OPS_LDR_X11_12 0x5800006bu  /* ldr x11, .+12 */
#define OPS_LDR_X16_16 0x58000090u  /* ldr x16, .+16 */


static struct {
	uintptr_t at; /* 0: not made */
	size_t used;  /* bytes of it written */
} pages[PAGES];

/* The record of the trampoline at t, when t is one; else 0. */
static uintptr_t tramp_rec(uintptr_t t)
{
	for (int i = 0; i < PAGES && pages[i].at; i++)
		if (t >= pages[i].at && t < pages[i].at + pages[i].used && (t - pages[i].at) % OPS_TRAMP == 0)
			return *(const uintptr_t *)(t + 16);
	return 0;
}

/* The trampoline that takes a bl at `at` to record rec through caller
 * (its words of the form full says: a prologue site's): found, or made;
 * 0 when none can be had. A caller is of one form alone. */
static uintptr_t tramp(uintptr_t at, uintptr_t rec, uintptr_t caller, int full)
{
	int p = -1;
	for (int i = 0; i < PAGES && pages[i].at; i++) {
		if (!ftrt_arm64_reaches(at, pages[i].at) || !ftrt_arm64_reaches(at, pages[i].at + PAGE - OPS_TRAMP))
			continue;
		for (uintptr_t t = pages[i].at; t < pages[i].at + pages[i].used; t += OPS_TRAMP)
			if (*(const uintptr_t *)(t + 16) == rec && *(const uintptr_t *)(t + 24) == caller)
				return t;
		if (pages[i].used + OPS_TRAMP <= PAGE)
			p = i;
	}
	if (p < 0) {
		p = 0;
		while (p < PAGES && pages[p].at)
			p++;
		if (p == PAGES)
			return 0;
		uintptr_t m = ftrt_arm64_map_near(at);
		if (!m)
			return 0;
		if (mprotect((void *)m, PAGE, PROT_READ | PROT_EXEC) != 0) {
			munmap((void *)m, PAGE);
			return 0;
		}
		pages[p].at = m, pages[p].used = 0;
	}
	uintptr_t t = pages[p].at + pages[p].used;
	uint32_t w[OPS_TRAMP / 4] = { OPS_LDR_X11, OPS_LDR_X16, ARM64_BR_X16, OPS_BRK };
	if (full)
		w[0] = OPS_STR_X11_PRE, w[1] = OPS_LDR_X11_12, w[2] = OPS_LDR_X16_16, w[3] = ARM64_BR_X16;
	memcpy(&w[4], &rec, 8);
	memcpy(&w[6], &caller, 8);
	int err = 0;
	for (int k = 0; k < OPS_TRAMP && !err; k += 8)
		err = ftrt_text_queue(t + (uintptr_t)k, (const unsigned char *)w + k, 8);
	if (ftrt_text_flush() != 0 || err)
		return 0;
	__builtin___clear_cache((char *)t, (char *)t + OPS_TRAMP);
	pages[p].used += OPS_TRAMP;
	return t;
}

/* The site's bl (the second word of an area whose first is `mov x9,
 * x30`, or of a prologue site's after `mov x17, x30`, or a -pg site's
 * only word) to the record's trampoline. */
int ftrt_arch_live_ops(uintptr_t ip, int len, int want, const struct ftrt_ops *rec, int owner, unsigned char *buf)
{
	(void)owner;
	uint32_t w[2] = { arm64_word((const unsigned char *)ip), len == 8 ? arm64_word((const unsigned char *)ip + 4) : ARM64_NOP };
	uintptr_t caller, at;
	int k, full = 0;
	if (want == WANT_ENTRY && len == 8) {
		if (w[0] != ARM64_MOV_X9_X30)
			return -1; /* `nop; nop`: two words would change */
		caller = ftrt_arch_entries.ops_regs_caller, at = ip + 4, k = 1;
	} else if (want == WANT_PROLOGUE && len == 8) {
		if (w[0] != ARM64_MOV_X17_X30)
			return -1;
		caller = ftrt_arch_entries.ops_prologue_caller, at = ip + 4, k = 1, full = 1;
	} else if (want == WANT_MCOUNT && len == 4) {
		caller = ftrt_arch_entries.ops_regs_mcount_caller, at = ip, k = 0;
	} else {
		return -1;
	}
	if (w[k] != ARM64_NOP && !arm64_is_bl(w[k]))
		return -1;
	uintptr_t t = tramp(at, (uintptr_t)rec, caller, full);
	uint32_t bl = t ? arm64_bl(at, t) : 0;
	if (!bl)
		return -1;
	w[k] = bl;
	memcpy(buf, w, (size_t)len);
	return 0;
}

uintptr_t ftrt_arch_live_target(uintptr_t ip, int len)
{
	uintptr_t at = ip;
	uint32_t w = arm64_word((const unsigned char *)ip);
	if (len == 8 && (w == ARM64_MOV_X9_X30 || w == ARM64_MOV_X17_X30))
		at = ip + 4, w = arm64_word((const unsigned char *)at);
	return arm64_is_bl(w) ? arm64_through_veneer(arm64_bl_target(at, w)) : 0;
}

const struct ftrt_ops *ftrt_arch_live_ops_rec(uintptr_t ip, int len)
{
	uintptr_t t = ftrt_arch_live_target(ip, len);
	return t ? (const struct ftrt_ops *)tramp_rec(t) : NULL;
}

/* A patchable area's bl, after `mov x9, x30`, to addr in reach: the
 * trampoline is entered with x30 the return into the function and x9
 * the caller's return address. A prologue site's, after `mov x17, x30`:
 * x17 the caller's return address, and every register but x16 and x17
 * to keep (ftrace.h says so). */
int ftrt_arch_live_direct(uintptr_t ip, int len, int want, uintptr_t addr, unsigned char *buf)
{
	uint32_t w[2] = { arm64_word((const unsigned char *)ip), len == 8 ? arm64_word((const unsigned char *)ip + 4) : ARM64_NOP };
	uint32_t first = want == WANT_PROLOGUE ? ARM64_MOV_X17_X30 : ARM64_MOV_X9_X30;
	if ((want != WANT_ENTRY && want != WANT_PROLOGUE) || len != 8 || w[0] != first || (w[1] != ARM64_NOP && !arm64_is_bl(w[1])))
		return -1;
	uint32_t bl = arm64_bl(ip + 4, addr);
	if (!bl)
		return -1;
	w[1] = bl;
	memcpy(buf, w, sizeof w);
	return 0;
}
