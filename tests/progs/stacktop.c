/*
 * Functions at the very top of their stacks, with nothing mapped above
 * them, asked for stack arguments they do not have: ctx_top() runs as
 * a makecontext context's first function, clone_top() as a clone()'d
 * thread's (each stack two pages, a PROT_NONE page above), and a
 * callback of ftrace.h's ops on both reads every argument
 * ftrace_regs_get_argument may be asked for, past the registers and far
 * past the stack's end; another on nine() reads its stack arguments,
 * which must be right, in 256 calls whose stack arguments start at each
 * 16-byte place of a page (those of one start a page: none is on the
 * page of the word below them, where the runtime reads as it is).
 * TestStackTop runs it asking FTRACE_ARGS for the tops' stack arguments
 * too. The program must print, traced or not (at an arm64 -pg site,
 * where a callback reads stack arguments as 0, given the argument
 * "mcount"):
 *
 *   context: top ran
 *   clone: top ran
 *   nine: a callback read its stack arguments right in 256 calls
 *   callbacks at the tops: 2
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <ftrace.h>

#include "attrs.h"

#if defined(__aarch64__)
#define INT_REGS 8
#else
#define INT_REGS 6
#endif

static volatile long zero, sink;
static volatile int ran;

NOINLINE void ctx_top(void) { ran += 1 + (int)zero; }
NOINLINE int clone_top(void *arg) { ran += 1 + (int)zero; return arg != NULL; }

NOINLINE long nine(long a, long b, long c, long d, long e, long f, long g, long h, long i, long j, long k, long l)
{
	return a + b + c + d + e + f + g + h + i + j + k + l + zero;
}

static volatile long tops, wrong;
static int mcount_site; /* an arm64 -pg build: the stack's arguments read as 0 */

/* Every argument number a callback may ask for, the stack's past any
 * mapped page among them: none faults. */
static void at_top(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op;
	unsigned long s = 0;
	for (unsigned n = 0; n < 80; n++)
		s += ftrace_regs_get_argument(fregs, n);
	s += ftrace_regs_get_argument(fregs, 1000) + ftrace_regs_get_argument(fregs, 0xffffffffu);
	sink += (long)s;
	tops++;
}

/* nine's arguments are arg0 + n, the stack's read as 0 at an arm64 -pg
 * site. */
static void at_nine(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op;
	unsigned long first = ftrace_regs_get_argument(fregs, 0);
	for (unsigned n = INT_REGS; n < 12; n++)
		if (ftrace_regs_get_argument(fregs, n) != (mcount_site ? 0 : first + n)) {
			wrong++;
			return;
		}
}

static struct ftrace_ops ops_top = { .func = at_top };
static struct ftrace_ops ops_nine = { .func = at_nine };

/* Two pages of stack, an unreadable one above them: their top. */
static char *guarded(void)
{
	char *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + 2 * 4096, 4096, PROT_NONE) != 0)
		return NULL;
	return m + 2 * 4096;
}

static void in_context(void)
{
	static ucontext_t back, ctx;
	char *t = guarded();
	if (!t || getcontext(&ctx) != 0)
		return;
	ctx.uc_stack.ss_sp = t - 2 * 4096;
	ctx.uc_stack.ss_size = 2 * 4096;
	ctx.uc_link = &back;
	makecontext(&ctx, ctx_top, 0);
	int before = ran;
	swapcontext(&back, &ctx);
	printf("context: top %s\n", ran > before ? "ran" : "did not run");
}

/* clone_top as a thread's first function, on its own stack's top: the
 * thread shares this one's memory and thread pointer (no CLONE_SETTLS),
 * so the runtime's buffer and shadow stack, and this one only waits,
 * making no call, until the kernel clears tid; and neither this
 * function nor main has a site, so no graphed call of this thread's is
 * open meanwhile (the child's, on a stack the runtime does not know,
 * would be taken for one that returned). */
NOTRACE static void in_clone(void)
{
	static volatile pid_t tid = 1;
	char *t = guarded();
	if (!t)
		return;
	int before = ran;
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_CHILD_CLEARTID;
	if (clone(clone_top, t, flags, NULL, NULL, NULL, &tid) < 0) {
		perror("clone");
		return;
	}
	for (pid_t v; (v = tid) != 0;)
		syscall(SYS_futex, &tid, FUTEX_WAIT, v, NULL, NULL, 0);
	printf("clone: top %s\n", ran > before ? "ran" : "did not run");
}

/* nine(i + 1, ..., i + 12) with 16 * i bytes more of stack below the
 * caller's frame: its stack arguments start 16 * i bytes lower. */
NOTRACE static void nine_at(unsigned i)
{
	volatile char *pad = __builtin_alloca(16 * i + 1);
	pad[0] = 0;
	sink += nine(i + 1, i + 2, i + 3, i + 4, i + 5, i + 6, i + 7, i + 8, i + 9, i + 10, i + 11, i + 12);
}

NOTRACE int main(int argc, char **argv)
{
	mcount_site = argc > 1 && strcmp(argv[1], "mcount") == 0;
	if (ftrace_set_filter(&ops_top, "ctx_top,clone_top", 1) < 0 || register_ftrace_function(&ops_top) < 0 ||
	    ftrace_set_filter(&ops_nine, "nine", 1) < 0 || register_ftrace_function(&ops_nine) < 0) {
		fprintf(stderr, "stacktop: %s\n", ftrace_error());
		return 2;
	}
	in_context();
	in_clone();
	for (unsigned i = 0; i < 256; i++)
		nine_at(i);
	if (wrong)
		printf("nine: a callback read its stack arguments wrong in %ld of 256 calls\n", wrong);
	else
		printf("nine: a callback read its stack arguments right in 256 calls\n");
	printf("callbacks at the tops: %ld\n", tops);
	return 0;
}
