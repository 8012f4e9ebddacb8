/*
 * ftrace.h's callbacks on progs/ipara.c's leaves, linked with it, built
 * without tracing flags and without the runtime: the API's functions are
 * weak references the preloaded runtime (libftrt.so) resolves. Every
 * callback first changes every register a callback may change under the
 * C calling convention (clobber, below: x86-64's rax rcx rdx rsi rdi
 * r8-r11 and xmm0-15; arm64's x0-x18 and v0-v31), so a value ipara.c's
 * callers keep in one of them across a call of a leaf (gcc's -fipa-ra)
 * survives only if the runtime keeps it. IPARA_HOOK chooses:
 *
 *   ops      one ops on the leaves (each site calls the ops's own
 *            trampoline)
 *   ops2     two (the module's list calls both)
 *   fgraph   a graph user, with an entry and a return callback
 *   fprobe   an fprobe, with an entry and an exit handler
 *   direct   a direct trampoline of the program's (below), which keeps
 *            every register as a prologue site's must, and an ops with a
 *            callback on the same functions (the list calls the
 *            callback, then branches to the trampoline)
 *
 * At exit the counts go to stderr (the output is ipara.c's alone):
 * "hooks: E entries R returns D direct".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ftrace.h>

#pragma weak register_ftrace_function
#pragma weak register_ftrace_direct
#pragma weak register_fgraph
#pragma weak register_fprobe
#pragma weak ftrace_set_filter
#pragma weak ftrace_error

static long entries, returns;
long ipara_direct_hits;

/* Changes every call-clobbered register but the stack pointer's. */
void ipara_clobber(void);
/* The direct trampoline: a symbol of no type, which ftpatch instrument
 * takes for no function (a site made in it would change x17 on arm64,
 * where it finds the caller's return address). */
void ipara_direct(void);

#if defined(__x86_64__)
__asm__(".text\n.globl ipara_clobber\n.type ipara_clobber,@function\nipara_clobber:\n"
	"mov $0x5a5a5a5a5a5a5a5a, %rax\n mov %rax, %rcx\n mov %rax, %rdx\n mov %rax, %rsi\n mov %rax, %rdi\n"
	" mov %rax, %r8\n mov %rax, %r9\n mov %rax, %r10\n mov %rax, %r11\n"
	" movq %rax, %xmm0\n pshufd $0, %xmm0, %xmm0\n"
	" movaps %xmm0, %xmm1\n movaps %xmm0, %xmm2\n movaps %xmm0, %xmm3\n movaps %xmm0, %xmm4\n"
	" movaps %xmm0, %xmm5\n movaps %xmm0, %xmm6\n movaps %xmm0, %xmm7\n movaps %xmm0, %xmm8\n"
	" movaps %xmm0, %xmm9\n movaps %xmm0, %xmm10\n movaps %xmm0, %xmm11\n movaps %xmm0, %xmm12\n"
	" movaps %xmm0, %xmm13\n movaps %xmm0, %xmm14\n movaps %xmm0, %xmm15\n ret\n"
	".size ipara_clobber, .-ipara_clobber\n"
	/* As the site's call: every register kept but the flags. */
	".globl ipara_direct\nipara_direct:\n"
	" lock incq ipara_direct_hits(%rip)\n ret\n");
#elif defined(__aarch64__)
#define CLOBBER_X(n) " mov x" #n ", x0\n"
#define CLOBBER_V(n) " mov v" #n ".16b, v0.16b\n"
__asm__(".text\n.globl ipara_clobber\n.type ipara_clobber,%function\n.p2align 2\nipara_clobber:\n"
	" hint #34\n mov x0, #0x5a5a\n movk x0, #0xa5a5, lsl #16\n movk x0, #0x5a5a, lsl #32\n movk x0, #0xa5a5, lsl #48\n"
	CLOBBER_X(1) CLOBBER_X(2) CLOBBER_X(3) CLOBBER_X(4) CLOBBER_X(5) CLOBBER_X(6) CLOBBER_X(7) CLOBBER_X(8)
	CLOBBER_X(9) CLOBBER_X(10) CLOBBER_X(11) CLOBBER_X(12) CLOBBER_X(13) CLOBBER_X(14) CLOBBER_X(15)
	CLOBBER_X(16) CLOBBER_X(17) CLOBBER_X(18)
	" dup v0.2d, x0\n"
	CLOBBER_V(1) CLOBBER_V(2) CLOBBER_V(3) CLOBBER_V(4) CLOBBER_V(5) CLOBBER_V(6) CLOBBER_V(7)
	CLOBBER_V(16) CLOBBER_V(17) CLOBBER_V(18) CLOBBER_V(19) CLOBBER_V(20) CLOBBER_V(21) CLOBBER_V(22) CLOBBER_V(23)
	CLOBBER_V(24) CLOBBER_V(25) CLOBBER_V(26) CLOBBER_V(27) CLOBBER_V(28) CLOBBER_V(29) CLOBBER_V(30) CLOBBER_V(31)
	/* v8-v15: their upper halves; the lower ones are callee-saved */
	" ins v8.d[1], x0\n ins v9.d[1], x0\n ins v10.d[1], x0\n ins v11.d[1], x0\n"
	" ins v12.d[1], x0\n ins v13.d[1], x0\n ins v14.d[1], x0\n ins v15.d[1], x0\n ret\n"
	".size ipara_clobber, .-ipara_clobber\n"
	/* As a prologue site's bl: x30 the return into the function, x17
	 * the caller's return address; x16 and x17 alone may change. */
	".globl ipara_direct\n.p2align 2\nipara_direct:\n"
	" hint #34\n stp x0, x1, [sp, #-16]!\n adrp x0, ipara_direct_hits\n add x0, x0, :lo12:ipara_direct_hits\n"
	" ldr x1, [x0]\n add x1, x1, #1\n str x1, [x0]\n ldp x0, x1, [sp], #16\n"
	" mov x16, x30\n mov x30, x17\n ret x16\n");
#endif

static void cb(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)parent_ip, (void)op, (void)fregs;
	entries++;
	ipara_clobber();
}

static int gent(struct ftrace_graph_ent *e, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)e, (void)g, (void)fregs;
	entries++;
	ipara_clobber();
	return 1;
}

static void gret(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)r, (void)g, (void)fregs;
	returns++;
	ipara_clobber();
}

static int pent(struct fprobe *fp, unsigned long ip, unsigned long ret_ip, struct ftrace_regs *fregs, void *data)
{
	(void)fp, (void)ip, (void)ret_ip, (void)fregs, (void)data;
	entries++;
	ipara_clobber();
	return 0;
}

static void pexit(struct fprobe *fp, unsigned long ip, unsigned long ret_ip, struct ftrace_regs *fregs, void *data)
{
	(void)fp, (void)ip, (void)ret_ip, (void)fregs, (void)data;
	returns++;
	ipara_clobber();
}

static void report(void)
{
	fprintf(stderr, "hooks: %ld entries %ld returns %ld direct\n", entries, returns, ipara_direct_hits);
}

#define LEAVES "leaf,leaf0,fleaf"

static void fail(const char *what)
{
	fprintf(stderr, "iparahook: %s failed: %s\n", what, ftrace_error ? ftrace_error() : "?");
	exit(99);
}

__attribute__((constructor)) static void hook(void)
{
	static struct ftrace_ops a = { .func = cb }, b = { .func = cb }, d = { .func = cb };
	static struct fgraph_ops g = { .entryfunc = gent, .retfunc = gret };
	static struct fprobe p = { .entry_handler = pent, .exit_handler = pexit };
	const char *h = getenv("IPARA_HOOK");
	if (!h || !*h)
		return;
	if (!register_ftrace_function)
		fail("finding the runtime");
	atexit(report);
	if (!strcmp(h, "ops") || !strcmp(h, "ops2")) {
		if (ftrace_set_filter(&a, LEAVES, 1) < 0 || register_ftrace_function(&a))
			fail("register_ftrace_function");
		if (!strcmp(h, "ops2") && (ftrace_set_filter(&b, LEAVES, 1) < 0 || register_ftrace_function(&b)))
			fail("register_ftrace_function (a second)");
	} else if (!strcmp(h, "fgraph")) {
		if (ftrace_set_filter(&g.ops, LEAVES, 1) < 0 || register_fgraph(&g))
			fail("register_fgraph");
	} else if (!strcmp(h, "fprobe")) {
		if (register_fprobe(&p, LEAVES, NULL))
			fail("register_fprobe");
	} else if (!strcmp(h, "direct")) {
		if (ftrace_set_filter(&d, LEAVES, 1) < 0 || register_ftrace_direct(&d, (unsigned long)ipara_direct))
			fail("register_ftrace_direct");
	} else if (!strcmp(h, "directonly")) {
		static struct ftrace_ops e;
		if (ftrace_set_filter(&e, LEAVES, 1) < 0 || register_ftrace_direct(&e, (unsigned long)ipara_direct))
			fail("register_ftrace_direct");
	} else {
		fail("IPARA_HOOK");
	}
}
