/*
 * ftrace.h's ops, as the kernel's ftrace self-tests try them
 * (trace_selftest.c): each step prints the callback counts it made, so
 * the output is exact and the same in every run and mode (FTRACE unset,
 * function, function_graph, nop):
 *
 *   filters    three ops with filters of their own and one with none
 *              (global), registered together; counts after each call of
 *              the four functions, after a filter changes, after a
 *              notrace list is set, after each unregisters (then zero)
 *   recursion  a callback that calls the function it watches: once with
 *              FTRACE_OPS_FL_RECURSION (the runtime keeps it from
 *              recursing), twice without (it guards itself after one)
 *   regs       the arguments a callback reads (integers, a pointer, a
 *              string, doubles, the seventh and eighth integers on the
 *              stack), a function's floating-point arguments and result
 *              kept across a callback that computes in the same
 *              registers
 *   redirect   a callback that sends a function to a fixed version of
 *              it (a live patch), and one that makes a function return
 *              at once with a value of its own
 *   direct     a direct trampoline of the program's (the site calls it),
 *              modified to another, with a callback ops on the same
 *              function (the list calls the callback, then branches to
 *              the trampoline), a second direct trampoline refused,
 *              one beyond a call's reach (the ops trampoline branches
 *              to it), unregistered; at -pg sites never called
 *   unregister eight threads call a function while the main thread
 *              registers and unregisters its ops ROUNDS times, and
 *              signal handlers call it too, in the middle of whatever
 *              the thread did (a callback among them): no callback
 *              begins or runs after unregister returns
 *
 * Every test function takes a tag as its second argument, which the
 * global ops counts by (a call of another function with the same second
 * argument is not likely): at an arm64 -pg site the first argument
 * register holds the return address gcc hands _mcount.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <ftrace.h>

#include "attrs.h"

#define TAG 0x7e57a90000000000ul

#ifndef ROUNDS
#define ROUNDS 200
#endif
#define THREADS 8

/* Each result reads zero besides, which no compiler can know to be 0:
 * no caller assumes what a test function returns. */
static volatile long sink, zero;

NOINLINE long t_one(unsigned long n, unsigned long tag) { sink += (long)(tag + n); return 1; }
NOINLINE long t_two(unsigned long n, unsigned long tag) { sink += (long)(tag + n); return 2; }
NOINLINE long t_three(unsigned long n, unsigned long tag) { sink += (long)(tag + n); return 3; }
NOINLINE long t_other(unsigned long n, unsigned long tag) { sink += (long)(tag + n); return 4; }

static void fail(const char *what)
{
	fprintf(stderr, "ops: %s: %s\n", what, ftrace_error());
	exit(2);
}

/* ---- filters ---- */

static _Atomic long cnt_a, cnt_b, cnt_c, cnt_g[4];

static void cb_count(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)fregs;
	atomic_fetch_add((_Atomic long *)op->private, 1);
}

static void cb_global(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op;
	unsigned long tag = ftrace_regs_get_argument(fregs, 1);
	if ((tag & ~0xfful) == TAG && (tag & 0xff) < 4)
		atomic_fetch_add(&cnt_g[tag & 0xff], 1);
}

static struct ftrace_ops ops_a = { .func = cb_count, .private = &cnt_a };
static struct ftrace_ops ops_b = { .func = cb_count, .private = &cnt_b };
static struct ftrace_ops ops_c = { .func = cb_count, .private = &cnt_c };
static struct ftrace_ops ops_g = { .func = cb_global };

static void call_all(const char *step)
{
	t_one(0, TAG | 0);
	t_two(0, TAG | 1);
	t_three(0, TAG | 2);
	t_other(0, TAG | 3);
	printf("%-22s a=%ld b=%ld c=%ld global=%ld,%ld,%ld,%ld\n", step, cnt_a, cnt_b, cnt_c, cnt_g[0], cnt_g[1], cnt_g[2], cnt_g[3]);
	cnt_a = cnt_b = cnt_c = 0;
	for (int i = 0; i < 4; i++)
		cnt_g[i] = 0;
}

static void filters(void)
{
	int n;
	if ((n = ftrace_set_filter(&ops_a, "t_one", 1)) < 0)
		fail("set_filter a");
	printf("filter a chooses %d\n", n);
	if (ftrace_set_filter(&ops_b, "t_two", 1) < 0 || ftrace_set_filter(&ops_c, "t_one", 1) < 0)
		fail("set_filter b c");
	if ((n = ftrace_set_filter(&ops_c, "t_three", 0)) < 0) /* added to t_one */
		fail("set_filter c");
	printf("filter c chooses %d\n", n);
	call_all("none registered");
	if (register_ftrace_function(&ops_a) || register_ftrace_function(&ops_b) || register_ftrace_function(&ops_c) ||
	    register_ftrace_function(&ops_g))
		fail("register");
	printf("registered flags %lu\n", ops_a.flags & FTRACE_OPS_FL_ENABLED);
	if (register_ftrace_function(&ops_a) == 0 || errno != EBUSY)
		fail("register twice");
	call_all("all registered");
	call_all("again");
	if (ftrace_set_filter(&ops_b, "t_three,t_other", 1) < 0)
		fail("set_filter b again");
	call_all("b: three, other");
	if (ftrace_set_filter(&ops_b, "!t_three", 0) < 0)
		fail("set_filter b !three");
	call_all("b: !three");
	if (ftrace_set_notrace(&ops_c, "t_three", 1) < 0)
		fail("set_notrace c");
	call_all("c: notrace three");
	if (ftrace_set_filter(&ops_g, "t_nothing_by_this_name", 1) != 0)
		fail("set_filter g nothing");
	call_all("global: nothing");
	if (ftrace_set_filter(&ops_g, NULL, 1) < 0)
		fail("set_filter g every");
	call_all("global: every");
	if (unregister_ftrace_function(&ops_a))
		fail("unregister a");
	call_all("a gone");
	if (unregister_ftrace_function(&ops_a) == 0 || errno != EINVAL)
		fail("unregister twice");
	if (unregister_ftrace_function(&ops_b) || unregister_ftrace_function(&ops_c) || unregister_ftrace_function(&ops_g))
		fail("unregister");
	call_all("all gone");
	if (register_ftrace_function(&ops_c))
		fail("register c again");
	call_all("c again");
	if (unregister_ftrace_function(&ops_c))
		fail("unregister c again");
	call_all("c gone again");
}

/* ---- recursion ---- */

static int rec_cnt;
NOINLINE long t_rec(unsigned long tag) { sink += (long)tag; return 5; }

static void cb_rec_guarded(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op, (void)fregs;
	if (rec_cnt++ > 10)
		return; /* would be a crash without the runtime's guard */
	t_rec(TAG | 9);
}

static void cb_rec_self(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op, (void)fregs;
	if (rec_cnt++)
		return;
	t_rec(TAG | 9);
}

static void recursion(void)
{
	struct ftrace_ops guarded = { .func = cb_rec_guarded, .flags = FTRACE_OPS_FL_RECURSION };
	struct ftrace_ops self = { .func = cb_rec_self };
	ftrace_set_filter(&guarded, "t_rec", 1);
	ftrace_set_filter(&self, "t_rec", 1);
	rec_cnt = 0;
	if (register_ftrace_function(&guarded))
		fail("register guarded");
	t_rec(TAG);
	unregister_ftrace_function(&guarded);
	printf("recursion guarded: %d\n", rec_cnt);
	rec_cnt = 0;
	if (register_ftrace_function(&self))
		fail("register self");
	t_rec(TAG);
	unregister_ftrace_function(&self);
	printf("recursion unguarded: %d\n", rec_cnt);
}

/* ---- regs ---- */

struct pair {
	long x, y;
};

NOINLINE long t_args(unsigned long tag, long a, const char *s, struct pair *p, long e, long f, long g, long h)
{
	return (long)(tag & 0xff) + a + (long)strlen(s) + p->x + e + f + g + h;
}

NOINLINE double t_fp(double a, double b, float c)
{
	return a * b + c;
}

static char seen[256];

static void cb_args(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op;
	const struct pair *p = (const struct pair *)ftrace_regs_get_argument(fregs, 3);
	snprintf(seen, sizeof seen, "a=%ld s=%s p={%ld,%ld} g=%ld h=%ld", (long)ftrace_regs_get_argument(fregs, 1),
		 (const char *)ftrace_regs_get_argument(fregs, 2), p->x, p->y, (long)ftrace_regs_get_argument(fregs, 6),
		 (long)ftrace_regs_get_argument(fregs, 7));
}

static volatile double fp_noise;

static void cb_fp(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op;
	double a = ftrace_regs_get_fp_argument(fregs, 0), b = ftrace_regs_get_fp_argument(fregs, 1);
	/* Computing in the registers that carry the function's arguments. */
	fp_noise = a * 3.5 + b * 7.25 + fp_noise * 0.5;
	snprintf(seen, sizeof seen, "fp a=%g b=%g", a, b);
}

static void regs(void)
{
	struct ftrace_ops args = { .func = cb_args }, fp = { .func = cb_fp };
	struct pair p = { 11, 12 };
	ftrace_set_filter(&args, "t_args", 1);
	ftrace_set_filter(&fp, "t_fp", 1);
	if (register_ftrace_function(&args) || register_ftrace_function(&fp))
		fail("register regs");
	long r = t_args(TAG, 5, "hello", &p, 50, 60, 70, 80);
	printf("args: %s = %ld\n", seen, r);
	double d = t_fp(1.5, 4.0, 0.25f);
	printf("args: %s = %g\n", seen, d);
	unregister_ftrace_function(&args);
	unregister_ftrace_function(&fp);
}

/* ---- redirect ---- */

NOINLINE long buggy(unsigned long tag, long n)
{
	(void)tag;
	return n - 1 + zero; /* the bug: should be n + 1 */
}

NOINLINE long fixed(unsigned long tag, long n)
{
	(void)tag;
	return n + 1 + zero;
}

NOINLINE long t_skip(unsigned long tag)
{
	sink += (long)tag;
	return 7 + zero;
}

static void cb_patch(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op;
	if (ftrace_regs_set_instruction_pointer(fregs, (unsigned long)fixed) != 0)
		printf("redirect refused\n");
}

static void cb_skip(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op;
	ftrace_regs_set_return_value(fregs, 42);
	if (ftrace_override_function_with_return(fregs) != 0)
		printf("override refused\n");
}

static void redirect(int entry)
{
	struct ftrace_ops patch = { .func = cb_patch }, skip = { .func = cb_skip };
	ftrace_set_filter(&patch, "buggy", 1);
	ftrace_set_filter(&skip, "t_skip", 1);
	printf("buggy(5) = %ld before\n", buggy(TAG, 5));
	if (register_ftrace_function(&patch) || register_ftrace_function(&skip))
		fail("register patch");
	if (entry) {
		printf("buggy(5) = %ld patched\n", buggy(TAG, 5));
		printf("t_skip = %ld skipped\n", t_skip(TAG));
	} else {
		buggy(TAG, 5);
		t_skip(TAG);
	}
	unregister_ftrace_function(&patch);
	unregister_ftrace_function(&skip);
	printf("buggy(5) = %ld after\n", buggy(TAG, 5));
}

/* ---- direct calls ---- */

/* Trampolines of the program's own: each counts its calls and returns
 * into the function, keeping every register a function's entry holds
 * (x86-64: the flags and r11 aside; arm64: x10, x11 and x16, x17). */
__attribute__((visibility("hidden"))) long hits_a, hits_b, hits_far;
void tramp_a(void);
void tramp_b(void);
#if defined(__x86_64__)
__asm__(".text\n"
	".globl tramp_a\n.hidden tramp_a\ntramp_a: lock incq hits_a(%rip); ret\n"
	".globl tramp_b\n.hidden tramp_b\ntramp_b: lock incq hits_b(%rip); ret\n");
/* movabs $hits_far, %r11; lock incq (%r11); ret */
static const unsigned char far_code[] = { 0x49, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x49, 0xff, 0x03, 0xc3 };
#define FAR_ADDR 2
#define FAR_REACH (1ul << 32)
#elif defined(__aarch64__)
#define TRAMP(name, hits)                                                                                  \
	".globl " name "\n.hidden " name "\n.p2align 2\n" name ":\n"                                        \
	"hint #34\n adrp x10, " hits "\n add x10, x10, :lo12:" hits "\n ldr x11, [x10]\n add x11, x11, #1\n" \
	"str x11, [x10]\n mov x10, x30\n mov x30, x9\n ret x10\n"
__asm__(".text\n" TRAMP("tramp_a", "hits_a") TRAMP("tramp_b", "hits_b"));
/* bti c; ldr x10, .+28; ldr x11, [x10]; add x11, x11, #1; str x11,
 * [x10]; mov x10, x30; mov x30, x9; ret x10; .quad hits_far */
static const unsigned int far_code[] = { 0xd503245f, 0x580000ea, 0xf940014b, 0x9100056b, 0xf900014b, 0xaa1e03ea, 0xaa0903fe, 0xd65f0140, 0, 0 };
#define FAR_ADDR 32
#define FAR_REACH (1ul << 28)
#endif

NOINLINE long t_dir(unsigned long n, unsigned long tag) { sink += (long)tag; return (long)n * 3 + zero; }

static long cnt_x;

/* A trampoline beyond the reach of a call from t_dir: a page mapped far
 * away, holding far_code. */
static unsigned long far_tramp(void)
{
	unsigned long at = ((unsigned long)t_dir + 4 * FAR_REACH) & ~0xffful;
	unsigned char *m = mmap((void *)at, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		fail("mmap far");
	long d = (long)((unsigned long)m - (unsigned long)t_dir);
	if (d < (long)FAR_REACH && d > -(long)FAR_REACH)
		fail("far page in reach");
	memcpy(m, far_code, sizeof far_code);
	long *h = &hits_far;
	memcpy(m + FAR_ADDR, &h, sizeof h);
	__builtin___clear_cache((char *)m, (char *)m + sizeof far_code);
	if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0)
		fail("mprotect far");
	return (unsigned long)m;
}

static void direct_step(const char *step, int calls, int entry)
{
	long r = 0;
	for (int i = 0; i < calls; i++)
		r += t_dir((unsigned long)i, TAG);
	if (entry)
		printf("%-24s t_dir=%ld a=%ld b=%ld far=%ld x=%ld\n", step, r, hits_a, hits_b, hits_far, cnt_x);
	else
		printf("%-24s t_dir=%ld direct=%s x=%ld\n", step, r, hits_a + hits_b + hits_far ? "called" : "never", cnt_x);
	hits_a = hits_b = hits_far = cnt_x = 0;
}

static void direct(int entry)
{
	static struct ftrace_ops d1, d2, x = { .func = cb_count, .private = &cnt_x };
	ftrace_set_filter(&d1, "t_dir", 1);
	ftrace_set_filter(&d2, "t_dir,t_one", 1);
	ftrace_set_filter(&x, "t_dir", 1);
	if (register_ftrace_direct(&d1, (unsigned long)tramp_a))
		fail("register_ftrace_direct");
	direct_step("direct a", 3, entry);
	if (modify_ftrace_direct(&d1, (unsigned long)tramp_b))
		fail("modify_ftrace_direct");
	direct_step("modified to b", 3, entry);
	if (register_ftrace_function(&x))
		fail("register x");
	direct_step("b and a callback", 2, entry);
	if (register_ftrace_direct(&d2, (unsigned long)tramp_a) == 0 || errno != EBUSY)
		fail("a second direct trampoline on t_dir");
	direct_step("a second refused", 1, entry);
	if (unregister_ftrace_function(&x))
		fail("unregister x");
	if (modify_ftrace_direct(&d1, far_tramp()))
		fail("modify_ftrace_direct far");
	direct_step("far away", 2, entry);
	if (unregister_ftrace_direct(&d1, (unsigned long)tramp_a, 1) == 0 || errno != EINVAL)
		fail("unregister_ftrace_direct, another trampoline");
	if (unregister_ftrace_direct(&d1, d1.direct_call, 1))
		fail("unregister_ftrace_direct");
	direct_step("unregistered", 2, entry);
}

/* ---- unregister while threads call ---- */

NOINLINE long t_hot(unsigned long tag) { sink += (long)tag; return 6; }

static atomic_int gone, stop, late;
static _Atomic long hot_calls, budget;
/* Calls the threads make in a round, all told: enough to meet every
 * change, few enough that a trace of them all stays small. */
#define BUDGET (THREADS * 1000)

static void cb_hot(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op, (void)fregs;
	if (atomic_load(&gone))
		atomic_fetch_add(&late, 1);
	atomic_fetch_add(&hot_calls, 1);
	for (volatile int i = 0; i < 20000; i++) /* some microseconds: a callback under way as unregister begins */
		;
	if (atomic_load(&gone)) /* still running after unregister returned */
		atomic_fetch_add(&late, 1);
}

static _Atomic long handled;

/* A signal handler's traced call: a walk of the ops nested in whatever
 * the thread was doing, a callback's walk among them. */
static void on_usr1(int sig)
{
	(void)sig;
	t_hot(TAG);
	atomic_fetch_add(&handled, 1);
}

static void *hot(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		if (atomic_fetch_sub(&budget, 1) > 0)
			t_hot(TAG);
		else
			sched_yield();
	return NULL;
}

static void unregister_busy(void)
{
	struct ftrace_ops *ops = calloc(1, sizeof *ops);
	ops->func = cb_hot;
	ftrace_set_filter(ops, "t_hot", 1);
	pthread_t th[THREADS];
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, hot, NULL);
	long calls = 0;
	for (int r = 0; r < ROUNDS; r++) {
		atomic_store(&gone, 0);
		if (register_ftrace_function(ops))
			fail("register hot");
		atomic_store(&budget, BUDGET);
		pthread_kill(th[r % THREADS], SIGUSR1);
		while (atomic_load(&hot_calls) < 10 && atomic_load(&budget) > 0)
			;
		pthread_kill(th[(r + 1) % THREADS], SIGUSR1);
		if (unregister_ftrace_function(ops))
			fail("unregister hot");
		atomic_store(&gone, 1);
		calls += atomic_exchange(&hot_calls, 0);
		atomic_store(&budget, 0);
		for (volatile int i = 0; i < 2000; i++)
			;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	long after = atomic_load(&hot_calls);
	/* The ops is freed: a call now would read freed memory. */
	memset(ops, 0xa5, sizeof *ops);
	free(ops);
	printf("unregister: %d rounds, calls made %s, handlers ran %s, after unregister %d and %ld\n", ROUNDS,
	       calls >= 10L * ROUNDS ? "yes" : "no", atomic_load(&handled) > 0 ? "yes" : "no", atomic_load(&late), after);
}

/* `ops dump`: t_one's address and first 16 bytes and, when they call,
 * the 32 bytes called, with one ops on t_one registered and then not:
 * what the runtime wrote, for a test to decode. */
static void dump_at(const char *what, const unsigned char *p, int n)
{
	printf("%s %lx", what, (unsigned long)p);
	for (int i = 0; i < n; i++)
		printf("%s%02x", i ? "" : " ", p[i]);
	printf("\n");
}

static void dump(void)
{
	const unsigned char *f = (const unsigned char *)t_one;
	ftrace_set_filter(&ops_a, "t_one", 1);
	if (register_ftrace_function(&ops_a))
		fail("register");
	dump_at("site", f, 16);
#if defined(__x86_64__)
	if (f[0] == 0xe8) {
		int rel;
		memcpy(&rel, f + 1, 4);
		dump_at("tramp", f + 5 + rel, 32);
	}
#elif defined(__aarch64__)
	/* The area's bl, after `mov x9, x30` (and bti c). */
	for (int k = 0; k < 16; k += 4) {
		unsigned w;
		memcpy(&w, f + k, 4);
		if ((w & 0xfc000000u) == 0x94000000u) {
			long off = (long)(int)(w << 6) >> 4; /* imm26 * 4, signed */
			dump_at("tramp", f + k + off, 32);
			break;
		}
	}
#endif
	if (unregister_ftrace_function(&ops_a))
		fail("unregister");
	dump_at("site", f, 16);
	static struct ftrace_ops d;
	ftrace_set_filter(&d, "t_one", 1);
	if (register_ftrace_direct(&d, (unsigned long)tramp_a))
		fail("register_ftrace_direct");
	dump_at("direct", f, 16);
	if (unregister_ftrace_direct(&d, (unsigned long)tramp_a, 1))
		fail("unregister_ftrace_direct");
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "dump") == 0) {
		dump();
		return 0;
	}
	int entry = argc > 1 && strcmp(argv[1], "entry") == 0;
	filters();
	recursion();
	regs();
	redirect(entry);
	direct(entry);
	unregister_busy();
	return 0;
}
