/*
 * x86-64 site knowledge for the runtime: what a site may hold, and the
 * NOP that replaces it. The same facts as the Go package isa/x86, which
 * checks its encodings against golang.org/x/arch; runtime_test.go checks
 * these bytes against that package.
 */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/site.h"
#include "insn.h"
#include "near.h"
#include "quick.h"

/* One instruction per size: a thread stopped inside a multi-NOP site
 * could resume in the middle of a call written there later. */
static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };       /* nopl 0x0(%rax,%rax,1) */
static const unsigned char nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }; /* nopw 0x0(%rax,%rax,1) */

/* Fallbacks, for a CPU that cannot run the P6 NOP (none that runs
 * x86-64 code is known; the kernel probed for them on 32-bit CPUs). */
static const unsigned char k8nop5[5] = { 0x66, 0x66, 0x66, 0x66, 0x90 };       /* data16 x4; nop */
static const unsigned char k8nop6[6] = { 0x66, 0x66, 0x66, 0x66, 0x66, 0x90 }; /* data16 x5; nop */
static const unsigned char jmpnop5[5] = { 0xeb, 0x03, 0x90, 0x90, 0x90 };       /* jmp .+5; padding never run */
static const unsigned char jmpnop6[6] = { 0xeb, 0x04, 0x90, 0x90, 0x90, 0x90 }; /* jmp .+6; padding never run */

static const unsigned char *cur5 = nop5, *cur6 = nop6;

const unsigned char *ftrt_arch_nop(int len)
{
	return len == 6 ? cur6 : cur5;
}

static sigjmp_buf probe_env;

static void probe_fault(int sig)
{
	(void)sig;
	siglongjmp(probe_env, 1);
}

/* Whether this CPU runs both NOPs of a style, a (5 bytes) and b (6):
 * copy each, followed by a `ret`, into a fresh executable page and call
 * them, with SIGILL and SIGSEGV caught. One page and one set of handlers
 * for both: each system call here is a few microseconds of the load-time
 * pass. A page that cannot be made executable (a policy forbids it)
 * counts as yes: every x86-64 CPU runs the P6 NOP. */
static int runs(const unsigned char *a, const unsigned char *b)
{
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	memcpy(page, a, 5);
	page[5] = 0xc3; /* ret */
	memcpy(page + 8, b, 6);
	page[14] = 0xc3;
	volatile int ok = 1; /* volatile: set after the longjmp back */
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) == 0) {
		struct sigaction sa = { .sa_handler = probe_fault }, oldill, oldsegv;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGILL, &sa, &oldill);
		sigaction(SIGSEGV, &sa, &oldsegv);
		if (sigsetjmp(probe_env, 1) == 0) {
			((void (*)(void))page)();
			((void (*)(void))(page + 8))();
		} else {
			ok = 0;
		}
		sigaction(SIGILL, &oldill, NULL);
		sigaction(SIGSEGV, &oldsegv, NULL);
	}
	munmap(page, 4096);
	return ok;
}

/* Choose the NOPs: the P6 NOP if this CPU runs it, else the K8 form, else
 * a jump over padding. FTRACE_NOP=p6|k8|jmp forces one (for tests of the
 * fallbacks). Returns the style's name. */
const char *ftrt_arch_probe(const char *force)
{
	if (force && !strcmp(force, "jmp")) {
		cur5 = jmpnop5, cur6 = jmpnop6;
		return "jmp";
	}
	if (force && !strcmp(force, "k8")) {
		cur5 = k8nop5, cur6 = k8nop6;
		return "k8";
	}
	if ((force && !strcmp(force, "p6")) || runs(nop5, nop6))
		return "p6";
	if (runs(k8nop5, k8nop6)) {
		cur5 = k8nop5, cur6 = k8nop6;
		return "k8";
	}
	cur5 = jmpnop5, cur6 = jmpnop6;
	return "jmp";
}

/* Whether a call to target is a call to one of the module's hooks. */
static inline int is_hook(uintptr_t target)
{
	return target == ftrt_targets[FTRT_T_FENTRY] || target == ftrt_targets[FTRT_T_MCOUNT];
}

/*
 * A site's bytes as one little-endian integer (ftrt_quick_load). Every
 * site the load-time pass reads has 8 bytes of its segment from its
 * address on (ftrt_sites_walk in sites.c checks), so a site costs one load, and
 * each shape below is a compare of its first n bytes under a mask rather
 * than a byte loop or a libc call: the whole pass has a budget of 20 ns
 * per site.
 */

static inline uint64_t low(uint64_t v, int n)
{
	return v & (~0ull >> (64 - 8 * n));
}

/* The first n bytes of b as an integer: a constant, once unrolled, since
 * the patterns are constant arrays. */
static inline __attribute__((always_inline)) uint64_t pattern(const unsigned char *b, int n)
{
	uint64_t v = 0;
#pragma GCC unroll 8
	for (int i = 0; i < n; i++)
		v |= (uint64_t)b[i] << 8 * i;
	return v;
}

static inline uintptr_t call_target(const unsigned char *ip, uint64_t v, int len)
{
	/* rel32 is the last four bytes of the call; relative to its end. */
	return (uintptr_t)ip + (uintptr_t)len + (uintptr_t)(intptr_t)(int32_t)(v >> 8 * (len - 4));
}

/* What a site holding a call calls (v: its 8 bytes), for the three
 * shapes of call a site may hold (see ftrt_arch_classify); 0, with *len
 * untouched, for any other bytes. */
static inline uintptr_t called(const unsigned char *ip, uint64_t v, int *len)
{
	switch (v & 0xff) {
	case 0xe8:
		*len = 5;
		return call_target(ip, v, 5);
	case 0x67:
		if ((v >> 8 & 0xff) != 0xe8)
			return 0;
		*len = 6;
		return call_target(ip, v, 6);
	case 0xff:
		if ((v >> 8 & 0xff) != 0x15)
			return 0;
		*len = 6;
		return *(const uintptr_t *)call_target(ip, v, 6); /* the GOT slot */
	}
	return 0;
}

int ftrt_arch_entry_call(const unsigned char *ip)
{
	int len;
	uint64_t v = ftrt_quick_load((uintptr_t)ip);
	uintptr_t t = called(ip, v, &len);
	if (t && t != ftrt_targets[FTRT_T_FENTRY] && (v & 0xff) != 0xff)
		t = ftrt_x86_plt_target(t); /* call __fentry__@plt */
	return t && t == ftrt_targets[FTRT_T_FENTRY];
}

/*
 * What may stand between a function's entry and its call of __fentry__
 * (the Go package isa/x86 knows the same, byte for byte: EntryNop,
 * ChainPush, SiteLead):
 *
 *   f3 0f 1e fa             endbr64 (-fcf-protection), first
 *   NOPs                    a patchable area the user asked for
 *                           (-fpatchable-function-entry, the
 *                           patchable_function_entry attribute) before
 *                           the compiler's call: gcc's 90s, clang's long NOPs
 *   41 52 ... 41 5a         push %r10 / pop %r10 around the call: gcc keeps
 *                           a nested function's static chain so; between
 *                           the push and the call, endbr64 (gcc 12 puts it
 *                           after the push) and an area's 90s
 *
 * The first two leave the stack as the caller left it; after the push the
 * return address is one word higher (a chain site).
 */
static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa }; /* endbr64 */

static inline int is_endbr64(const unsigned char *p)
{
	return __builtin_memcmp(p, endbr64, sizeof endbr64) == 0;
}

/* The length of the NOP at p if it is one a compiler puts at a function's
 * entry and ends by end: 90, or 0f 1f /0 (nopl, nopw, any addressing),
 * behind 66 prefixes and at most one 2e; 0 for anything else. */
static int entry_nop(const unsigned char *p, const unsigned char *end)
{
	const unsigned char *q = p;
	while (q < end && q - p < 15 && *q == 0x66) /* data16 */
		q++;
	if (q < end && *q == 0x2e) /* cs */
		q++;
	if (q < end && *q == 0x90) { /* nop, xchg %ax,%ax */
		q++;
	} else if (end - q >= 3 && q[0] == 0x0f && q[1] == 0x1f && (q[2] >> 3 & 7) == 0) {
		unsigned mod = q[2] >> 6, rm = q[2] & 7;
		q += 3;
		if (mod != 3 && rm == 4) { /* a SIB byte */
			if (q >= end)
				return 0;
			if (mod == 0 && (*q & 7) == 5) /* no base: disp32 */
				q += 4;
			q++;
		}
		if (mod == 0 && rm == 5) /* rip-relative disp32 */
			q += 4;
		else if (mod == 1)
			q += 1;
		else if (mod == 2)
			q += 4;
	} else {
		return 0;
	}
	return q <= end && q - p <= 15 ? (int)(q - p) : 0;
}

/* The push %r10 of a chain site: the site at ip of len bytes followed by
 * pop %r10 (41 5a; within the 8 bytes walk() makes sure of) and preceded
 * by push %r10, endbr64 and 90s in that order, each but the push
 * optional; nothing below lo is read. Its address, or 0. */
static uintptr_t chain_push(uintptr_t ip, int len, uintptr_t lo)
{
	const unsigned char *site = (const unsigned char *)ip, *q = site, *l = (const unsigned char *)lo;
	if (ip < lo || site[len] != 0x41 || site[len + 1] != 0x5a) /* pop %r10 */
		return 0;
	while (q > l && q[-1] == 0x90) /* nop */
		q--;
	if (q - l >= 4 && is_endbr64(q - 4))
		q -= 4;
	if (q - l < 2 || q[-2] != 0x41 || q[-1] != 0x52) /* push %r10 */
		return 0;
	return (uintptr_t)(q - 2);
}

int ftrt_arch_chain(uintptr_t ip, int len, uintptr_t lo)
{
	return chain_push(ip, len, lo) != 0;
}


/*
 * The shapes a site takes in a linked program:
 *   e8 rel32          call hook                    (-fno-pie, or relaxed)   5
 *   67 e8 rel32       addr32 call hook             (ld's relaxation of ...) 6
 *   ff 15 disp32      call *hook@GOTPCREL(%rip)    (PIE -mfentry, unrelaxed) 6
 *   66 0f 1f 44 00 00 nopw                         (recordmcount --nop)     6
 *   0f 1f 44 00 xx    nopl xx(%rax,%rax,1)         (--nop; clang's padding) 5
 *   90 90 90 90 90    five nops                    (gcc's padding)          5
 * and the fallback NOPs (k8nop*, jmpnop*) this runtime may have written.
 * A call counts only if it reaches one of our hooks. Dispatched on the
 * first byte; where shapes share it (0x66: nopw and the K8 NOPs; 0xeb:
 * the two jumps over padding), the rest of the pattern tells them apart.
 */
enum ftrt_site_state ftrt_arch_classify(const unsigned char *ip, int *len)
{
	uint64_t v = ftrt_quick_load((uintptr_t)ip);
	switch (v & 0xff) {
	case 0xe8:
	case 0x67:
	case 0xff: {
		uintptr_t target = called(ip, v, len);
		if (!target)
			break; /* 67 or ff, but not a call */
		if (!is_hook(target) && (v & 0xff) != 0xff)
			target = ftrt_x86_plt_target(target); /* call hook@plt */
		return is_hook(target) ? FTRT_SITE_CALL : FTRT_SITE_UNKNOWN;
	}
	case 0x0f:
		/* nopl with any 8-bit displacement: clang pads with nonzero ones. */
		if (low(v, 4) != pattern(nop5, 4))
			break;
		*len = 5;
		return FTRT_SITE_NOP;
	case 0x66:
		if (low(v, 6) == pattern(nop6, 6) || low(v, 6) == pattern(k8nop6, 6)) {
			*len = 6;
			return FTRT_SITE_NOP;
		}
		if (low(v, 5) != pattern(k8nop5, 5))
			break;
		*len = 5;
		return FTRT_SITE_NOP;
	case 0xeb:
		if (low(v, 6) == pattern(jmpnop6, 6)) {
			*len = 6;
			return FTRT_SITE_NOP;
		}
		if (low(v, 5) != pattern(jmpnop5, 5))
			break;
		*len = 5;
		return FTRT_SITE_NOP;
	case 0x90:
		if (low(v, 5) != 0x9090909090)
			break;
		*len = 5;
		return FTRT_SITE_NOPS;
	}
	return FTRT_SITE_UNKNOWN;
}


/*
 * Per-site graph trampolines (the layout is drawn in graph.S), in chunks
 * mapped near the code they serve: a site reaches its trampoline with a
 * rel32 jump, so the chunk must lie within ±2 GiB of it. A chunk starts
 * with the addresses of ftrace_graph_enter and ftrace_graph_leave, which
 * every trampoline in it calls and jumps through (rip-relative, so the
 * runtime itself may be anywhere). Chunks are written while the load-time
 * pass runs and made read-only and executable at its end
 * (ftrt_arch_seal): never writable and executable at once.
 */
/* Where abi.h says each instruction of tramp_new's starts: each is the
 * one before's length past it. */
_Static_assert(TRAMP_LEA == 0 && TRAMP_CALL_ENTER == TRAMP_LEA + 7 && TRAMP_ENTERED == TRAMP_CALL_ENTER + 6 &&
		       TRAMP_DROP == TRAMP_ENTERED + 2 && TRAMP_CALL_BODY == TRAMP_DROP + 4 && TRAMP_HOOK == TRAMP_CALL_BODY + 5 &&
		       TRAMP_SKIP == TRAMP_HOOK + 6 && TRAMP_PAD == TRAMP_SKIP + 5 && TRAMP_PAD <= TRAMP_SIZE,
	       "abi.h's trampoline offsets: lea 7 bytes, call 6, je 2, add 4, call 5, jmp 6, jmp 5");

/* Every chunk, with the module it serves (0: a free entry). A module's
 * chunks are its own, so they can be unmapped when it is unloaded. */
struct ftrt_chunk ftrt_chunks[CHUNK_MAX];
int ftrt_chunks_hi;
#define chunks ftrt_chunks
static int owner;          /* the module whose pass is running */
static int cur = -1;       /* its chunk being filled, or -1 */
static size_t chunk_used;  /* bytes used of chunks[cur] */

int ftrt_chunk_near(uintptr_t a, uintptr_t b)
{
	int64_t d = (int64_t)(a - b);
	return d > -(1ll << 31) + CHUNK_SIZE && d < (1ll << 31) - CHUNK_SIZE;
}

/* A new chunk within reach of ip for module o, read-write: ask for
 * places above and below it, 64 MiB apart, until the kernel grants one
 * in reach. Its index, or -1. */
int ftrt_chunk_new(uintptr_t ip, int o)
{
	int slot = 0;
	while (slot < CHUNK_MAX && chunks[slot].base)
		slot++;
	if (slot == CHUNK_MAX)
		return -1;
	for (int k = 1; k < 30; k++) {
		int64_t step = (int64_t)(k / 2 + 1) * (64ll << 20);
		uintptr_t hint = ((k & 1) ? ip + (uintptr_t)step : ip - (uintptr_t)step) & ~(uintptr_t)0xffff;
		void *m = mmap((void *)hint, CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			continue;
		if (!ftrt_chunk_near((uintptr_t)m, ip)) {
			munmap(m, CHUNK_SIZE);
			continue;
		}
		unsigned char *c = m;
		uintptr_t fns[4] = { ftrt_arch_entries.graph_enter, ftrt_arch_entries.graph_leave,
				     ftrt_arch_entries.prologue_graph_enter, ftrt_arch_entries.prologue_graph_leave };
		memcpy(c, fns, sizeof fns);
		chunks[slot].base = c;
		chunks[slot].owner = o;
		if (slot >= ftrt_chunks_hi)
			ftrt_chunks_hi = slot + 1;
		return slot;
	}
	return -1;
}

/* The pass's next chunk, near ip. */
static unsigned char *chunk_near(uintptr_t ip)
{
	int slot = ftrt_chunk_new(ip, owner);
	if (slot < 0)
		return NULL;
	cur = slot;
	chunk_used = CHUNK_HEAD;
	return chunks[slot].base;
}

void ftrt_put32(unsigned char *p, int64_t v)
{
	int32_t r = (int32_t)v;
	memcpy(p, &r, 4);
}

/* The trampoline of the site at ip (len bytes): its address, or 0 when
 * no chunk in reach could be had. A site made from a prologue (full)
 * gets the same layout with the chunk's other two slots, those of
 * ftrace_prologue_graph_enter and _leave, which keep every register;
 * it jumps in at TRAMP_CALL_ENTER, past the lea, which would change
 * r11 and is there to say the site (graph.S's GRAPH_ENTER reads its
 * disp32). */
static uintptr_t tramp_new(uintptr_t ip, int len, int full)
{
	unsigned char *c = cur >= 0 ? chunks[cur].base : NULL;
	if (!c || !ftrt_chunk_near((uintptr_t)c, ip) || chunk_used + TRAMP_SIZE > CHUNK_SIZE)
		c = chunk_near(ip);
	if (!c)
		return 0;
	unsigned char *t = c + chunk_used;
	uintptr_t at = (uintptr_t)t, body = ip + (uintptr_t)len;
	chunk_used += TRAMP_SIZE;
	/* +0  lea site(%rip), %r11 */
	t[TRAMP_LEA] = 0x4c, t[TRAMP_LEA + 1] = 0x8d, t[TRAMP_LEA + 2] = 0x1d;
	ftrt_put32(t + TRAMP_LEA + 3, (int64_t)(ip - (at + TRAMP_CALL_ENTER)));
	/* +7  call *enter(%rip) */
	t[TRAMP_CALL_ENTER] = 0xff, t[TRAMP_CALL_ENTER + 1] = 0x15;
	ftrt_put32(t + TRAMP_CALL_ENTER + 2, (int64_t)((uintptr_t)c + (full ? 16 : 0) - (at + TRAMP_ENTERED)));
	/* +13 je +30 */
	t[TRAMP_ENTERED] = 0x74, t[TRAMP_ENTERED + 1] = TRAMP_SKIP - TRAMP_DROP;
	/* +15 add $8, %rsp */
	t[TRAMP_DROP] = 0x48, t[TRAMP_DROP + 1] = 0x83, t[TRAMP_DROP + 2] = 0xc4, t[TRAMP_DROP + 3] = 0x08;
	/* +19 call body */
	t[TRAMP_CALL_BODY] = 0xe8;
	ftrt_put32(t + TRAMP_CALL_BODY + 1, (int64_t)(body - (at + TRAMP_HOOK)));
	/* +24 jmp *leave(%rip) */
	t[TRAMP_HOOK] = 0xff, t[TRAMP_HOOK + 1] = 0x25;
	ftrt_put32(t + TRAMP_HOOK + 2, (int64_t)((uintptr_t)c + (full ? 24 : 8) - (at + TRAMP_SKIP)));
	/* +30 jmp body */
	t[TRAMP_SKIP] = 0xe9;
	ftrt_put32(t + TRAMP_SKIP + 1, (int64_t)(body - (at + TRAMP_PAD)));
	/* +35 int3 padding, never run */
	memset(t + TRAMP_PAD, 0xcc, TRAMP_SIZE - TRAMP_PAD);
	return at;
}

/* x86-64 has no pre-function literal: a patchable area is read by its
 * bytes alone. */
void ftrt_arch_areas(const uintptr_t *start, const uintptr_t *end)
{
	(void)start, (void)end;
}

/* A site left disabled is one NOP of its length. */
const unsigned char *ftrt_arch_off(uintptr_t ip, int len)
{
	(void)ip;
	return ftrt_arch_nop(len);
}

void ftrt_arch_begin(int o)
{
	owner = o;
	cur = -1;
}

void ftrt_arch_seal(void)
{
	for (int i = 0; i < CHUNK_MAX; i++)
		if (chunks[i].base && chunks[i].owner == owner)
			mprotect(chunks[i].base, CHUNK_SIZE, PROT_READ | PROT_EXEC);
	cur = -1;
}

void ftrt_arch_release(int o)
{
	for (int i = 0; i < CHUNK_MAX; i++)
		if (chunks[i].base && chunks[i].owner == o) {
			munmap(chunks[i].base, CHUNK_SIZE);
			chunks[i].base = NULL;
			chunks[i].owner = 0;
			chunks[i].ops_used = 0;
		}
}


/* function_graph at an entry: a jump to the site's own trampoline; -1
 * when none could be had. Out of line, so that the common path of
 * ftrt_arch_call saves no registers. */
static __attribute__((noinline)) int graph_jump(uintptr_t ip, int len, int full, unsigned char *buf)
{
	uintptr_t t = tramp_new(ip, len, full);
	if (!t)
		return -1;
	if (full)
		t += TRAMP_CALL_ENTER; /* past the lea: r11 is kept */
	/* e9 rel32 90: jmp rel32, and a nop after it that a 6-byte site
	 * takes and never runs */
	put_insn(buf, 0x90ull << 40 | 0xe9, 1, (int64_t)(t - (ip + 5)));
	return 0;
}

/* The tracer's call for a site of len bytes, where want says (at a
 * function's entry, after its prologue, after push %r10): the module's
 * own trampolines, in reach of its code. */
uintptr_t ftrt_arch_caller(int len, int want)
{
	const uintptr_t *t = ftrt_targets;
	int six = len == 6;
	switch (want) {
	case WANT_ENTRY:
	case WANT_PROLOGUE: /* ftrace_caller5/6 keep every general register */
		return t[six ? FTRT_T_CALLER6 : FTRT_T_CALLER5];
	case WANT_CHAIN:
		return t[six ? FTRT_T_CHAIN6 : FTRT_T_CHAIN5];
	}
	return t[six ? FTRT_T_MCALLER6 : FTRT_T_MCALLER5];
}

uintptr_t ftrt_arch_call_target(int len, int want)
{
	if (ftrt_mode == FTRT_NOP)
		return ftrt_targets[FTRT_T_STUB]; /* the empty tracer: call and return */
	if (ftrt_mode == FTRT_GRAPH && (want == WANT_ENTRY || want == WANT_PROLOGUE))
		return 0; /* a jump to the site's own trampoline */
	return ftrt_arch_caller(len, want);
}

/*
 * The bytes that enable the site at ip of len bytes (into buf: 8
 * bytes), at a function's entry, after its prologue (-pg) or after a
 * nested function's push %r10 (want); 0, or -1 when the target is out of
 * reach. The return address of a call, and so the instruction after the
 * site, is site + len in every form (see x86.Call and x86.Call6 in isa/x86):
 *
 *   e8 rel32         call ftrace_caller5 (ftrace_mcount_caller5,
 *                    ftrace_chain_caller5)
 *   67 e8 rel32      addr32 call ftrace_caller6 (ftrace_mcount_caller6,
 *                    ftrace_chain_caller6)
 *   e8/67 e8         call ftrace_stub: the empty tracer
 *   e9 rel32 [90]    function_graph at an entry: jmp to the site's own
 *                    trampoline (the 90 after a 6-byte site's jump is
 *                    never run); at a site made from a prologue, to its
 *                    TRAMP_CALL_ENTER. Never at a chain site, whose return
 *                    address is not on top of the stack there: it calls
 *                    its trampoline, which hijacks the return.
 */
int ftrt_arch_call(uintptr_t ip, int len, int want, unsigned char *buf)
{
	uintptr_t target = ftrt_arch_call_target(len, want);
	if (!target) {
		if (graph_jump(ip, len, want == WANT_PROLOGUE, buf) == 0)
			return 0;
		target = ftrt_arch_caller(len, want); /* no trampoline: graph hijacks the return instead */
	}
	return put_call(ip, len, target, buf);
}

int ftrt_arch_at_entry(uintptr_t ip, uintptr_t start, uintptr_t end)
{
	const unsigned char *p = (const unsigned char *)start, *site = (const unsigned char *)ip;
	if (ip < start || ip >= end)
		return 0;
	int endbr = site - p >= 4 && is_endbr64(p);
	if (endbr)
		p += 4;
	for (int n; p < site && (n = entry_nop(p, site)) > 0;)
		p += n;
	if (p == site)
		return 1;
	int len = 0;
	if (end - ip >= 8) /* what classifying reads */
		ftrt_arch_classify(site, &len); /* a call's or a NOP's length; 0 for other bytes */
	uintptr_t push = len ? chain_push(ip, len, start) : 0;
	return push && (push == start || (endbr && push == start + 4));
}

/*
 * For the live part (poke.c): the length of the site at ip whose jump
 * goes to t, when t is a graph trampoline of ours, at its start or, a
 * prologue site's, at its TRAMP_CALL_ENTER (its call of the body says
 * where the site ends); 0 when it is not.
 */
int ftrt_arch_tramp_site(uintptr_t t, uintptr_t ip)
{
	for (int i = 0; i < CHUNK_MAX; i++) {
		uintptr_t base = (uintptr_t)chunks[i].base;
		if (!base || chunks[i].ops_used || t < base + CHUNK_HEAD || t >= base + CHUNK_SIZE)
			continue;
		if ((t - base - CHUNK_HEAD) % TRAMP_SIZE == TRAMP_CALL_ENTER)
			t -= TRAMP_CALL_ENTER; /* a prologue site's way in */
		const unsigned char *c = (const unsigned char *)t + TRAMP_CALL_BODY;
		int32_t rel;
		if (c[0] != 0xe8)
			return 0;
		memcpy(&rel, c + 1, 4);
		uintptr_t body = t + TRAMP_HOOK + (uintptr_t)(intptr_t)rel;
		return body == ip + 5 || body == ip + 6 ? (int)(body - ip) : 0;
	}
	return 0;
}

