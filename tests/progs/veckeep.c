/*
 * Whether the vector registers a caller holds across a call survive the
 * runtime's callbacks at a site made from a prologue. vk_call (assembly,
 * below) loads every vector register the CPU has with a pattern of its
 * own (x86-64: xmm0-15, or ymm0-15 with AVX, or zmm0-31 and k0-7 with
 * AVX-512, and mxcsr's status flags cleared; arm64: q0-q31), calls
 * vk_leaf, and stores them all again: as a caller built with gcc's
 * -fipa-ra may keep values in any of them across a call of a function
 * it sees leave them alone. Built without tracing flags and without the
 * runtime (the API's functions are weak references a preloaded runtime
 * resolves), instrumented by ftpatch. VK_HOOK hooks vk_leaf with
 * callbacks that change every one of those registers (vk_clobber):
 *
 *   ops      one ops
 *   ops2     two (the module's list calls both)
 *   fgraph   a graph user, with an entry and a return callback
 *
 * The output is "kept" when every register came back, else the names of
 * those that did not; the counts of callbacks go to stderr at exit
 * ("veckeep: E entries R returns").
 *
 * `veckeep dump` registers one ops on vk_leaf and prints what the
 * runtime wrote, for a test to decode: "lib" and the preloaded
 * runtime's load address, "site" and the site's address and its 16
 * bytes (the first of the trampoline vk_leaf's jump goes to, ftpatch
 * instrument's), "tramp" and the address and 32 bytes of the ops
 * trampoline the site calls.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ftrace.h>

#pragma weak register_ftrace_function
#pragma weak register_fgraph
#pragma weak ftrace_set_filter
#pragma weak ftrace_error

#define ROUNDS 100

/* What vk_call loads and stores: 32 registers of 64 bytes (the low 16
 * or 32 alone for xmm, ymm; q0-q31 16), then k0-7, then mxcsr. */
struct vregs {
	unsigned char v[32][64];
	unsigned long long k[8];
	unsigned int mxcsr, pad[15];
} __attribute__((aligned(64)));

/* 0 SSE, 1 AVX, 2 AVX-512 (F and BW), 3 arm64. */
static int kind;
static long entries, returns;

volatile long vk_sink;
long vk_leaf(long x);
void vk_call(int kind, const struct vregs *in, struct vregs *out);
void vk_clobber(int kind);

__attribute__((noinline)) long vk_leaf(long x)
{
	vk_sink += x;
	return vk_sink * 3 + x;
}

#if defined(__x86_64__)
/* rdi kind, rsi in, rdx out; rbx and r12, pushed, keep out and kind
 * across the call. */
__asm__(".text\n.globl vk_call\n.type vk_call,@function\nvk_call:\n"
	" push %rbx\n push %r12\n sub $8, %rsp\n mov %rdx, %rbx\n mov %edi, %r12d\n ldmxcsr 2112(%rsi)\n"
	" cmp $1, %edi\n je 1f\n ja 2f\n"
	" movdqu 0(%rsi), %xmm0\n movdqu 64(%rsi), %xmm1\n movdqu 128(%rsi), %xmm2\n movdqu 192(%rsi), %xmm3\n"
	" movdqu 256(%rsi), %xmm4\n movdqu 320(%rsi), %xmm5\n movdqu 384(%rsi), %xmm6\n movdqu 448(%rsi), %xmm7\n"
	" movdqu 512(%rsi), %xmm8\n movdqu 576(%rsi), %xmm9\n movdqu 640(%rsi), %xmm10\n movdqu 704(%rsi), %xmm11\n"
	" movdqu 768(%rsi), %xmm12\n movdqu 832(%rsi), %xmm13\n movdqu 896(%rsi), %xmm14\n movdqu 960(%rsi), %xmm15\n"
	" jmp 3f\n"
	"1: vmovdqu 0(%rsi), %ymm0\n vmovdqu 64(%rsi), %ymm1\n vmovdqu 128(%rsi), %ymm2\n vmovdqu 192(%rsi), %ymm3\n"
	" vmovdqu 256(%rsi), %ymm4\n vmovdqu 320(%rsi), %ymm5\n vmovdqu 384(%rsi), %ymm6\n vmovdqu 448(%rsi), %ymm7\n"
	" vmovdqu 512(%rsi), %ymm8\n vmovdqu 576(%rsi), %ymm9\n vmovdqu 640(%rsi), %ymm10\n vmovdqu 704(%rsi), %ymm11\n"
	" vmovdqu 768(%rsi), %ymm12\n vmovdqu 832(%rsi), %ymm13\n vmovdqu 896(%rsi), %ymm14\n vmovdqu 960(%rsi), %ymm15\n"
	" jmp 3f\n"
	"2: .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	" vmovdqu64 \\n*64(%rsi), %zmm\\n\n .endr\n"
	" .irp n,0,1,2,3,4,5,6,7\n kmovq 2048+\\n*8(%rsi), %k\\n\n .endr\n"
	"3: mov $7, %edi\n call vk_leaf\n"
	" stmxcsr 2112(%rbx)\n"
	" cmp $1, %r12d\n je 1f\n ja 2f\n"
	" movdqu %xmm0, 0(%rbx)\n movdqu %xmm1, 64(%rbx)\n movdqu %xmm2, 128(%rbx)\n movdqu %xmm3, 192(%rbx)\n"
	" movdqu %xmm4, 256(%rbx)\n movdqu %xmm5, 320(%rbx)\n movdqu %xmm6, 384(%rbx)\n movdqu %xmm7, 448(%rbx)\n"
	" movdqu %xmm8, 512(%rbx)\n movdqu %xmm9, 576(%rbx)\n movdqu %xmm10, 640(%rbx)\n movdqu %xmm11, 704(%rbx)\n"
	" movdqu %xmm12, 768(%rbx)\n movdqu %xmm13, 832(%rbx)\n movdqu %xmm14, 896(%rbx)\n movdqu %xmm15, 960(%rbx)\n"
	" jmp 3f\n"
	"1: .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n vmovdqu %ymm\\n, \\n*64(%rbx)\n .endr\n vzeroupper\n jmp 3f\n"
	"2: .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	" vmovdqu64 %zmm\\n, \\n*64(%rbx)\n .endr\n"
	" .irp n,0,1,2,3,4,5,6,7\n kmovq %k\\n, 2048+\\n*8(%rbx)\n .endr\n vzeroupper\n"
	"3: add $8, %rsp\n pop %r12\n pop %rbx\n ret\n"
	".size vk_call, .-vk_call\n"
	/* edi kind: every register of the kind a pattern of 0x5a bytes;
	 * mxcsr's six status flags set. */
	".globl vk_clobber\n.type vk_clobber,@function\nvk_clobber:\n"
	" sub $8, %rsp\n stmxcsr (%rsp)\n orl $0x3f, (%rsp)\n ldmxcsr (%rsp)\n add $8, %rsp\n"
	" mov $0x5a5a5a5a5a5a5a5a, %rax\n"
	" cmp $1, %edi\n je 1f\n ja 2f\n"
	" movq %rax, %xmm0\n pshufd $0, %xmm0, %xmm0\n"
	" .irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n movaps %xmm0, %xmm\\n\n .endr\n ret\n"
	"1: vmovq %rax, %xmm0\n vpshufd $0, %xmm0, %xmm0\n vinsertf128 $1, %xmm0, %ymm0, %ymm0\n"
	" .irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n vmovaps %ymm0, %ymm\\n\n .endr\n ret\n"
	"2: vpbroadcastq %rax, %zmm0\n"
	" .irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	" vmovdqa64 %zmm0, %zmm\\n\n .endr\n"
	" .irp n,0,1,2,3,4,5,6,7\n kmovq %rax, %k\\n\n .endr\n ret\n"
	".size vk_clobber, .-vk_clobber\n");
#elif defined(__aarch64__)
/* x0 kind, x1 in, x2 out; x19, saved, keeps out across the call, and
 * d8-d15, which the C caller keeps, are saved and restored. */
__asm__(".text\n.globl vk_call\n.type vk_call,%function\n.p2align 2\nvk_call:\n"
	" stp x29, x30, [sp, #-96]!\n mov x29, sp\n str x19, [sp, #16]\n"
	" stp d8, d9, [sp, #32]\n stp d10, d11, [sp, #48]\n stp d12, d13, [sp, #64]\n stp d14, d15, [sp, #80]\n"
	" mov x19, x2\n"
	" .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	" ldr q\\n, [x1, #\\n*64]\n .endr\n"
	" mov x0, #7\n bl vk_leaf\n"
	" .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	" str q\\n, [x19, #\\n*64]\n .endr\n"
	" ldp d8, d9, [sp, #32]\n ldp d10, d11, [sp, #48]\n ldp d12, d13, [sp, #64]\n ldp d14, d15, [sp, #80]\n"
	" ldr x19, [sp, #16]\n ldp x29, x30, [sp], #96\n ret\n"
	".size vk_call, .-vk_call\n"
	/* v0-v7, v16-v31 and v8-v15's upper halves (their lower ones are
	 * callee-saved) a pattern of 0x5a bytes. */
	".globl vk_clobber\n.type vk_clobber,%function\n.p2align 2\nvk_clobber:\n"
	" mov x1, #0x5a5a\n movk x1, #0x5a5a, lsl #16\n movk x1, #0x5a5a, lsl #32\n movk x1, #0x5a5a, lsl #48\n"
	" dup v0.2d, x1\n"
	" .irp n,1,2,3,4,5,6,7,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n mov v\\n\\().16b, v0.16b\n .endr\n"
	" .irp n,8,9,10,11,12,13,14,15\n ins v\\n\\().d[1], x1\n .endr\n ret\n"
	".size vk_clobber, .-vk_clobber\n");
#endif

static void cb(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)parent_ip, (void)op, (void)fregs;
	entries++;
	vk_clobber(kind);
}

static int gent(struct ftrace_graph_ent *e, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)e, (void)g, (void)fregs;
	entries++;
	vk_clobber(kind);
	return 1;
}

static void gret(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)r, (void)g, (void)fregs;
	returns++;
	vk_clobber(kind);
}

static void report(void)
{
	fprintf(stderr, "veckeep: %ld entries %ld returns\n", entries, returns);
}

static void fail(const char *what)
{
	fprintf(stderr, "veckeep: %s failed: %s\n", what, ftrace_error ? ftrace_error() : "?");
	exit(99);
}

static void hook(void)
{
	static struct ftrace_ops a = { .func = cb }, b = { .func = cb };
	static struct fgraph_ops g = { .entryfunc = gent, .retfunc = gret };
	const char *h = getenv("VK_HOOK");
	if (!h || !*h)
		return;
	if (!register_ftrace_function)
		fail("finding the runtime");
	atexit(report);
	if (!strcmp(h, "ops") || !strcmp(h, "ops2")) {
		if (ftrace_set_filter(&a, "vk_leaf", 1) < 0 || register_ftrace_function(&a))
			fail("register_ftrace_function");
		if (!strcmp(h, "ops2") && (ftrace_set_filter(&b, "vk_leaf", 1) < 0 || register_ftrace_function(&b)))
			fail("register_ftrace_function (a second)");
	} else if (!strcmp(h, "fgraph")) {
		if (ftrace_set_filter(&g.ops, "vk_leaf", 1) < 0 || register_fgraph(&g))
			fail("register_fgraph");
	} else {
		fail("VK_HOOK");
	}
}

static void dump_at(const char *what, const unsigned char *p, int n)
{
	printf("%s %lx", what, (unsigned long)p);
	for (int i = 0; i < n; i++)
		printf("%s%02x", i ? "" : " ", p[i]);
	printf("\n");
}

static int dump(void)
{
	static struct ftrace_ops a = { .func = cb };
	Dl_info info;
	if (!register_ftrace_function || !dladdr((void *)register_ftrace_function, &info))
		fail("finding the runtime");
	if (ftrace_set_filter(&a, "vk_leaf", 1) < 0 || register_ftrace_function(&a))
		fail("register_ftrace_function");
	printf("lib %lx\n", (unsigned long)info.dli_fbase);
	const unsigned char *f = (const unsigned char *)vk_leaf, *site = NULL, *tramp = NULL;
	int rel;
#if defined(__x86_64__)
	if (f[0] == 0xf3 && f[1] == 0x0f && f[2] == 0x1e && f[3] == 0xfa)
		f += 4; /* endbr64 */
	if (f[0] == 0xe9) {
		memcpy(&rel, f + 1, 4);
		site = f + 5 + rel;
		if (site[0] == 0xe8) {
			memcpy(&rel, site + 1, 4);
			tramp = site + 5 + rel;
		}
	}
#elif defined(__aarch64__)
	unsigned w;
	memcpy(&w, f, 4);
	if (w == 0xd503245fu) /* bti c */
		memcpy(&w, f += 4, 4);
	if ((w & 0xfc000000u) == 0x14000000u) { /* b */
		site = f + ((long)(int)(w << 6) >> 4);
		memcpy(&w, site + 4, 4); /* after mov x17, x30 */
		if ((w & 0xfc000000u) == 0x94000000u) /* bl */
			tramp = site + 4 + ((long)(int)(w << 6) >> 4);
	}
#endif
	if (!site || !tramp) {
		dump_at("function", f, 16);
		return 1;
	}
	dump_at("site", site, 16);
	dump_at("tramp", tramp, 32);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "dump"))
		return dump();
	static struct vregs in, out;
	static const char *const names[4] = { "xmm", "ymm", "zmm", "q" };
	unsigned regs = 16, width = 16;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
		kind = 2, regs = 32, width = 64;
	else if (__builtin_cpu_supports("avx"))
		kind = 1, width = 32;
	in.mxcsr = 0x1f80; /* the default: every exception masked, no flag set */
#else
	kind = 3, regs = 32;
#endif
	for (unsigned r = 0; r < 32; r++)
		for (unsigned i = 0; i < 64; i++)
			in.v[r][i] = (unsigned char)(r * 64 + i * 7 + 1);
	for (unsigned r = 0; r < 8; r++)
		in.k[r] = 0x0102030405060708ull * (r + 1);
	hook();
	int bad = 0;
	for (int round = 0; round < ROUNDS && !bad; round++) {
		memset(&out, 0, sizeof out);
		vk_call(kind, &in, &out);
		for (unsigned r = 0; r < regs; r++)
			if (memcmp(in.v[r], out.v[r], width)) {
				printf("%s%u ", names[kind], r);
				bad = 1;
			}
		for (unsigned r = 0; kind == 2 && r < 8; r++)
			if (in.k[r] != out.k[r]) {
				printf("k%u ", r);
				bad = 1;
			}
		if (kind < 3 && in.mxcsr != out.mxcsr) {
			printf("mxcsr %#x ", out.mxcsr);
			bad = 1;
		}
	}
	printf(bad ? "changed\n" : "kept\n");
	return bad;
}
