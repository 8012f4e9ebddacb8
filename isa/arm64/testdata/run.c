/* The program TestPrologueRun patches: it calls every function of
 * prologue.S a plan accepts, and some C of its own (a switch, recursion,
 * calls through pointers, floating point, the C library), and prints
 * what they return. The test gives each function of the linked program
 * a prologue site (the C library's too), its trampoline in tramp_area,
 * and compares the output with the unpatched program's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for the trampolines, in an executable section beside .text (an
 * object, not a function: nothing plans it). 2 MiB: the test puts some
 * trampolines more than 1 MiB from their function, where a bl's return
 * address takes adrp and add. */
__asm__(".section .text.tramp, \"ax\", %progbits\n"
	".p2align 12\n"
	".globl tramp_area\n"
	".type tramp_area, %object\n"
	"tramp_area:\n"
	".space 0x200000\n"
	".size tramp_area, 0x200000\n"
	".text\n");

typedef long fn(long);
extern fn copy, bti_kept, pac, bti_pac, bti_jc, tail, call_w, ret_addr_w, recurse, lse, bcond, bal, cbz, cbnz, tbnz, tbz,
	adr, adrp, ldr_x, ldr_x4, ldr_w, ldrsw, ldr_d, ldr_s, ldr_q, prfm, jt_gcc, jt_clang, jt_rel, jt_outline;

static const struct {
	const char *name;
	fn *f;
} asm_funcs[] = {
	{"copy", copy}, {"bti_kept", bti_kept}, {"pac", pac}, {"bti_pac", bti_pac}, {"bti_jc", bti_jc},
	{"tail", tail}, {"recurse", recurse}, {"lse", lse}, {"call", call_w}, {"ret_addr", ret_addr_w}, {"bcond", bcond}, {"bal", bal},
	{"cbz", cbz}, {"cbnz", cbnz}, {"tbnz", tbnz}, {"tbz", tbz}, {"adr", adr}, {"adrp", adrp},
	{"ldr_x", ldr_x}, {"ldr_x4", ldr_x4}, {"ldr_w", ldr_w}, {"ldrsw", ldrsw}, {"ldr_d", ldr_d},
	{"ldr_s", ldr_s}, {"ldr_q", ldr_q}, {"prfm", prfm}, {"jt_gcc", jt_gcc}, {"jt_clang", jt_clang},
	{"jt_rel", jt_rel}, {"jt_outline", jt_outline},
};

static const long inputs[] = {0, 1, 2, 3, 8, 1L << 40, -1};

__attribute__((noinline)) static int kind(int c)
{
	switch (c) {
	case 'a': return 1;
	case 'b': return 7;
	case 'c': return 3;
	case 'd': return 9;
	case 'e': return 4;
	case 'f': return 11;
	case 'g': return 2;
	case 'h': return 5;
	case 'i': return 13;
	case 'j': return 6;
	}
	return 0;
}

__attribute__((noinline)) static long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__attribute__((noinline)) static double area(double r) { return 3.14159265358979 * r * r + 0.5; }

static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof asm_funcs / sizeof asm_funcs[0]; i++) {
		printf("%s:", asm_funcs[i].name);
		for (size_t j = 0; j < sizeof inputs / sizeof inputs[0]; j++) {
			long in = inputs[j];
			/* adr reads a byte at lit_b + x0: only 0..3 */
			if (asm_funcs[i].f == adr && (in < 0 || in > 3))
				continue;
			printf(" %lx", asm_funcs[i].f(in));
		}
		printf("\n");
	}
	int sum = 0;
	for (const char *s = "abcdefghijklmnop"; *s; s++)
		sum = sum * 3 + kind(*s);
	int v[] = {5, 3, 9, 1, 7};
	qsort(v, 5, sizeof v[0], cmp);
	char buf[64];
	snprintf(buf, sizeof buf, "%.3f", area(2.5));
	printf("kind %d fib %ld sorted %d%d%d%d%d area %s len %zu\n", sum, fib(20), v[0], v[1], v[2], v[3], v[4],
	       buf, strlen(buf));
	return 3;
}
