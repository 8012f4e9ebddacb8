/*
 * Arguments of every type --auto-args shows (TestAutoArgs), each with
 * values a C programmer reads at once: signed and unsigned integers of
 * each width with negative and high-bit values, float and double, bool,
 * char, enums (a flags enum's OR too), strings, pointers; a long double
 * and a struct passed on the stack between other arguments, a struct in
 * registers, a mixed one; return values of each kind; more integer
 * arguments than registers, mixed with a long double, a struct in
 * memory and floats past the vector registers, so that each lies on the
 * stack after the others; structs returned; a shared object's function
 * (libargtypes.so, linked) and a plugin's (argv[1], loaded with
 * dlopen); and 40 more functions, past the 32 the runtime once kept.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "argtypes.h"
#include "attrs.h"

static volatile int zero;

NOINLINE int int_add(int a, int b) { return a + b + zero; }
NOINLINE long widths(int8_t a, int16_t b, int32_t c, int64_t d, uint8_t e, uint16_t f) { return (long)a + b + c + d + e + f + zero; }
NOINLINE uint32_t unsigneds(uint32_t a, uint64_t b, unsigned char c) { return a + (uint32_t)b + c + (uint32_t)zero; }
NOINLINE float floats(float a, double b, float c) { return a + (float)b + c + (float)zero; }
NOINLINE bool truth(bool b, char c) { return b && c == 'q' + zero; }
NOINLINE enum color pick(enum color c, enum perm p) { return p == (PERM_R | PERM_W) ? c : RED + zero; }
NOINLINE const char *named(const char *s, void *p) { return p ? s + zero : "none"; }
NOINLINE int after_ld(long double x, int after, double d) { return (int)x + after + (int)d + zero; }
NOINLINE long after_big(struct big b, int after, struct pt p) { return b.a + b.b + b.c + after + p.x + p.y + zero; }
NOINLINE double after_mixed(struct mixed m, int after) { return (double)m.n + m.d + after + zero; }
NOINLINE long double ld_ret(int x) { return x + 0.5L + zero; }
NOINLINE int8_t neg8(int x) { return (int8_t)(x + zero); }
NOINLINE uint16_t high16(int x) { return (uint16_t)(x + zero); }
NOINLINE void nothing(void) { zero = zero; }
NOINLINE long ints10(int a, long b, short c, signed char d, unsigned e, long f, int g, long h, int8_t i, uint16_t j)
{
	return a + b + c + d + e + f + g + h + i + j + zero;
}
NOINLINE double spill(int a, int b, int c, int d, int e, int f, int g, long double x, int h, struct big s, int i, double d1, float f2)
{
	return a + b + c + d + e + f + g + (double)x + h + s.a + s.b + s.c + i + d1 + f2 + zero;
}
NOINLINE float fp_spill(double d1, double d2, double d3, double d4, double d5, double d6, double d7, double d8, double d9, float f10, int n)
{
	return (float)(d1 + d2 + d3 + d4 + d5 + d6 + d7 + d8 + d9 + f10 + n + zero);
}
NOINLINE float hfa3(struct f3 v, int after) { return v.a + v.b + v.c + (float)after + (float)zero; }
NOINLINE struct pt pt_ret(int x) { return (struct pt){ x + zero, -x }; }
NOINLINE struct big big_ret(long a) { return (struct big){ a + zero, a + 1, a + 2 }; }
NOINLINE struct mixed mixed_ret(long n) { return (struct mixed){ n + zero, -0.5 }; }

#define MANY(n) NOINLINE int many_##n(int x) { return x + n + zero; }
#define TEN(d) MANY(d##0) MANY(d##1) MANY(d##2) MANY(d##3) MANY(d##4) MANY(d##5) MANY(d##6) MANY(d##7) MANY(d##8) MANY(d##9)
TEN(1) TEN(2) TEN(3) TEN(4)
#define CALL(n) total += many_##n(-n);
#define CALLS(d) CALL(d##0) CALL(d##1) CALL(d##2) CALL(d##3) CALL(d##4) CALL(d##5) CALL(d##6) CALL(d##7) CALL(d##8) CALL(d##9)

int main(int argc, char **argv)
{
	long total = 0;
	total += int_add(-1, 2);
	total += widths(-128, -32768, -2147483647 - 1, -5, 255, 65535);
	total += unsigneds(4294967295u, 18446744073709551615ull, 200);
	total += (long)floats(1.5f, -2.25, 3.125f);
	total += truth(true, 'q');
	total += pick(BLUE, PERM_R | PERM_W);
	total += pick(GREEN, PERM_X);
	total += named("text", (void *)0x1234) != 0;
	total += after_ld(2.5L, -7, 0.5);
	total += after_big((struct big){ 1, 2, 3 }, -4, (struct pt){ 5, -6 });
	total += (long)after_mixed((struct mixed){ -9, 0.25 }, 10);
	total += (long)ld_ret(3);
	total += neg8(255);
	total += high16(-1);
	nothing();
	total += ints10(1, -2, -3, -4, 5, -6, -7, 8, -9, 65535);
	total += (long)spill(1, 2, 3, 4, 5, 6, 7, 2.5L, -8, (struct big){ 10, 20, 30 }, -9, 0.5, -1.25f);
	total += (long)fp_spill(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, -8.5, 0.25f, 3);
	total += (long)hfa3((struct f3){ 1.5f, -2, 0.25f }, 4);
	total += pt_ret(4).y;
	total += big_ret(-1).c;
	total += mixed_ret(5).n;
	CALLS(1) CALLS(2) CALLS(3) CALLS(4)
	total += lib_scale(-3, GREEN);
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW);
		int (*run)(int) = h ? (int (*)(int))dlsym(h, "plug_run") : 0;
		if (!run) {
			printf("dlopen: %s\n", dlerror());
			return 1;
		}
		total += run(4);
	}
	printf("total %ld\n", total);
	return 0;
}
