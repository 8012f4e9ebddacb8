/*
 * x86-64's ops trampolines (ops.S draws them, ops.c chooses which a site
 * calls): one per ops record, module and kind of site, OPS_TRAMP bytes,
 * in chunks of their own near the module's code (insn.h's chunks, with
 * ops_used), made while threads run: such a chunk is executable and
 * read-only from the start, and a trampoline is written into its unused
 * part through /proc/self/mem (text.c) before any site calls it. They
 * stay until the module is unloaded (ftrt_arch_release): a thread may
 * be on its way into one that no site calls any longer.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/poke.h"
#include "arch/site.h"
#include "insn.h"

#define chunks ftrt_chunks

#define OPS_TRAMP 32
#define OPS_MOVABS 0 /* 49 bb imm64: movabs $record, %r11 */
#define OPS_JMP 10   /* e9 rel32: jmp caller, in reach; else ff 25 00000000: jmp *0(%rip) */
#define OPS_SLOT 16  /* .quad the ops caller */
#define OPS_PAD 24   /* int3 */
/* A site made from a prologue's (ops.S's ftrace_ops_prologue_caller):
 * r11 pushed first, so every offset after it moves 2 bytes, and the
 * slot 8. */
#define OPS_PUSH_R11 0x5341 /* 41 53: push %r11 */
#define OPS_FULL_SHIFT 2
#define OPS_FULL_SLOT 24

static uintptr_t ops_caller(int want)
{
	return want == WANT_MCOUNT ? ftrt_arch_entries.ops_mcount_caller
	     : want == WANT_CHAIN ? ftrt_arch_entries.ops_chain_caller
	     : want == WANT_PROLOGUE ? ftrt_arch_entries.ops_prologue_caller
				     : ftrt_arch_entries.ops_caller;
}

/* The record and the caller of the ops trampoline at t (one of either
 * form). */
static void ops_tramp_read(uintptr_t t, uintptr_t *rec, uintptr_t *caller)
{
	uint16_t first;
	memcpy(&first, (const void *)t, sizeof first);
	int full = first == OPS_PUSH_R11;
	memcpy(rec, (const void *)(t + OPS_MOVABS + 2 + (full ? OPS_FULL_SHIFT : 0)), sizeof *rec);
	memcpy(caller, (const void *)(t + (full ? OPS_FULL_SLOT : OPS_SLOT)), sizeof *caller);
}

/* The record an ops trampoline at t loads, when t is one; else 0. */
static uintptr_t ops_tramp_rec(uintptr_t t)
{
	for (int i = 0; i < ftrt_chunks_hi; i++) {
		uintptr_t base = (uintptr_t)chunks[i].base;
		if (!base || !chunks[i].ops_used || t < base + CHUNK_HEAD || t >= base + chunks[i].ops_used ||
		    (t - base - CHUNK_HEAD) % OPS_TRAMP)
			continue;
		uintptr_t rec, caller;
		ops_tramp_read(t, &rec, &caller);
		return rec;
	}
	return 0;
}

/* The trampoline that takes a site at ip, of module o, where want says,
 * to record rec: found, or made; 0 when none can be had. With the
 * registry's lock held (ops.c). */
static uintptr_t ops_tramp(uintptr_t ip, int want, uintptr_t rec, int o)
{
	uintptr_t caller = ops_caller(want);
	int c = -1;
	for (int i = 0; i < ftrt_chunks_hi; i++) {
		if (!chunks[i].base || !chunks[i].ops_used || chunks[i].owner != o || !ftrt_chunk_near((uintptr_t)chunks[i].base, ip))
			continue;
		uintptr_t base = (uintptr_t)chunks[i].base;
		for (uintptr_t t = base + CHUNK_HEAD; t < base + chunks[i].ops_used; t += OPS_TRAMP) {
			uintptr_t r, k;
			ops_tramp_read(t, &r, &k);
			if (r == rec && k == caller)
				return t;
		}
		if (chunks[i].ops_used + OPS_TRAMP <= CHUNK_SIZE)
			c = i;
	}
	if (c < 0) {
		c = ftrt_chunk_new(ip, o);
		if (c < 0)
			return 0;
		chunks[c].ops_used = CHUNK_HEAD;
		mprotect(chunks[c].base, CHUNK_SIZE, PROT_READ | PROT_EXEC);
	}
	uintptr_t t = (uintptr_t)chunks[c].base + chunks[c].ops_used;
	unsigned char b[OPS_TRAMP];
	memset(b, 0xcc, sizeof b);
	int full = want == WANT_PROLOGUE, at = 0, slot = OPS_SLOT;
	if (full) { /* push %r11: the function's callers may keep a value there */
		b[0] = OPS_PUSH_R11 & 0xff, b[1] = OPS_PUSH_R11 >> 8;
		at = OPS_FULL_SHIFT, slot = OPS_FULL_SLOT;
	}
	b[at + OPS_MOVABS] = 0x49, b[at + OPS_MOVABS + 1] = 0xbb;
	memcpy(b + at + OPS_MOVABS + 2, &rec, 8);
	int64_t rel = (int64_t)(caller - (t + (uintptr_t)at + OPS_JMP + 5));
	if (rel == (int32_t)rel) { /* the runtime near the module (its own code): no load */
		b[at + OPS_JMP] = 0xe9;
		ftrt_put32(b + at + OPS_JMP + 1, rel);
	} else {
		b[at + OPS_JMP] = 0xff, b[at + OPS_JMP + 1] = 0x25;
		ftrt_put32(b + at + OPS_JMP + 2, slot - (at + OPS_JMP + 6));
	}
	memcpy(b + slot, &caller, 8); /* read by the jmp, or by ops_tramp's search alone */
	int err = 0;
	for (int k = 0; k < OPS_TRAMP && !err; k += 8)
		err = ftrt_text_queue(t + (uintptr_t)k, b + k, 8);
	if (ftrt_text_flush() != 0 || err)
		return 0;
	chunks[c].ops_used += OPS_TRAMP;
	return t;
}

/* A site made from a prologue (WANT_PROLOGUE) calls a trampoline of
 * the other form, whose caller keeps every register: the function's
 * callers may keep values in any of them across the call (gcc's
 * -fipa-ra). */
int ftrt_arch_live_ops(uintptr_t ip, int len, int want, const struct ftrt_ops *rec, int o, unsigned char *buf)
{
	uintptr_t t = ops_tramp(ip, want, (uintptr_t)rec, o);
	if (!t)
		return -1;
	/* A 6-byte site becomes a 5-byte call and a NOP, as live_call's. */
	if (put_call(ip, 5, t, buf) != 0)
		return -1;
	if (len == 6)
		buf[5] = 0x90;
	return 0;
}

uintptr_t ftrt_arch_live_target(uintptr_t ip, int len)
{
	const unsigned char *p = (const unsigned char *)ip;
	int32_t rel;
	if (p[0] == 0xe8) { /* call rel32 (a 6-byte site enabled live: and a nop) */
		memcpy(&rel, p + 1, 4);
		return ip + 5 + (uintptr_t)(intptr_t)rel;
	}
	if (len == 6 && p[0] == 0x67 && p[1] == 0xe8) {
		memcpy(&rel, p + 2, 4);
		return ip + 6 + (uintptr_t)(intptr_t)rel;
	}
	return 0;
}

const struct ftrt_ops *ftrt_arch_live_ops_rec(uintptr_t ip, int len)
{
	uintptr_t t = ftrt_arch_live_target(ip, len);
	return t && ((const unsigned char *)ip)[0] == 0xe8 ? (const struct ftrt_ops *)ops_tramp_rec(t) : NULL;
}

/* A direct trampoline is entered as the site's call: only where the
 * function's stack is as at its entry, or a chain site's (the saved
 * r10 below the return address is the function's, popped after). At a
 * site made from a prologue too, where the trampoline must keep every
 * register but the flags (ftrace.h says so). */
int ftrt_arch_live_direct(uintptr_t ip, int len, int want, uintptr_t addr, unsigned char *buf)
{
	if (want == WANT_MCOUNT || put_call(ip, 5, addr, buf) != 0)
		return -1;
	if (len == 6)
		buf[5] = 0x90;
	return 0;
}
