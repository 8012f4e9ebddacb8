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

/* A site of len bytes at ip that calls target, into buf (8 bytes): e8
 * rel32 (5 bytes) or 67 e8 rel32 (addr32 call, 6), either returning to
 * ip + len. 0, or -1 when target is out of rel32's reach. */
static inline int put_call(uintptr_t ip, int len, uintptr_t target, unsigned char *buf)
{
	int64_t rel = (int64_t)(target - (ip + (uintptr_t)len));
	if (rel != (int32_t)rel)
		return -1;
	if (len == 6)
		put_insn(buf, 0xe867, 2, rel); /* 67 e8 rel32: addr32 call rel32 */
	else
		put_insn(buf, 0xe8, 1, rel); /* e8 rel32: call rel32 */
	return 0;
}

/* The module's trampoline (ftrt_targets) a site of len bytes calls,
 * where want says: at a function's entry, after its prologue, after
 * push %r10 (site.c). */
uintptr_t ftrt_arch_caller(int len, int want) __attribute__((visibility("hidden")));

/* The length of the site at ip whose jump goes to t, when t is one of
 * function_graph's per-site trampolines; 0 when it is not (site.c). */
int ftrt_arch_tramp_site(uintptr_t t, uintptr_t ip) __attribute__((visibility("hidden")));

/*
 * Chunks of trampolines (site.c), mapped near the code they serve so
 * that a site reaches them with rel32: function_graph's per-site ones
 * (written during a load-time pass, sealed at its end) and the ops
 * trampolines (opstramp.c: executable from the start, written through
 * /proc/self/mem). A chunk starts with CHUNK_HEAD bytes of addresses
 * (ftrace_graph_enter, ftrace_graph_leave, and the two that the
 * trampolines of sites made from prologues call and jump to instead,
 * ftrace_prologue_graph_enter and ftrace_prologue_graph_leave). A module's chunks are its
 * own (owner), unmapped when it is unloaded (ftrt_arch_release).
 */
#define CHUNK_SIZE (256 * 1024)
#define CHUNK_MAX 1024
#define CHUNK_HEAD 32
struct ftrt_chunk {
	unsigned char *base; /* NULL: a free entry */
	int owner;
	size_t ops_used;     /* an ops chunk: bytes used; 0: a graph chunk */
};
extern struct ftrt_chunk ftrt_chunks[CHUNK_MAX] __attribute__((visibility("hidden")));
/* One past the highest entry ever used: where a search may stop. */
extern int ftrt_chunks_hi __attribute__((visibility("hidden")));
/* Whether a chunk at a serves code at b. */
int ftrt_chunk_near(uintptr_t a, uintptr_t b) __attribute__((visibility("hidden")));
/* A new chunk near ip, for module o, read-write: its index, or -1. */
int ftrt_chunk_new(uintptr_t ip, int o) __attribute__((visibility("hidden")));
/* v as a little-endian 32-bit field at p. */
void ftrt_put32(unsigned char *p, int64_t v) __attribute__((visibility("hidden")));

#endif
