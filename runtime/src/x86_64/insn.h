/*
 * What x86-64's site.c (the load-time pass) and poke.c (the live part)
 * share of how an enabled site is written: the instruction's bytes, and
 * which trampoline a site calls or jumps to.
 */
#ifndef FTRT_X86_64_INSN_H
#define FTRT_X86_64_INSN_H

#include <stdint.h>
#include <string.h>

/* An instruction: opcode bytes op (oplen of them, little-endian), then
 * rel32, into buf as one 8-byte store: the caller copies it out in
 * pieces, which a store of the same bytes in pieces would stall. */
static inline void put_insn(unsigned char *buf, uint64_t op, int oplen, int64_t rel)
{
	uint64_t v = op | (uint64_t)(uint32_t)(int32_t)rel << 8 * oplen;
	memcpy(buf, &v, sizeof v);
}

/* The module's trampoline (ftrt_targets) a site of len bytes calls,
 * where want says: at a function's entry, after its prologue, after
 * push %r10 (site.c). */
uintptr_t ftrt_arch_caller(int len, int want) __attribute__((visibility("hidden")));

/* The length of the site at ip whose jump goes to t, when t is one of
 * function_graph's per-site trampolines; 0 when it is not (site.c). */
int ftrt_arch_tramp_site(uintptr_t t, uintptr_t ip) __attribute__((visibility("hidden")));

#endif
