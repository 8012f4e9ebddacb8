/*
 * Arguments of every type --auto-args shows (TestAutoArgs), each with
 * values a C programmer reads at once: signed and unsigned integers of
 * each width with negative and high-bit values, float and double, bool,
 * char, enums (a flags enum's OR too), strings, pointers; a long double
 * and a struct passed on the stack between other arguments, a struct in
 * registers, a mixed one; return values of each kind; a shared object's
 * function (libargtypes.so, linked) and a plugin's (argv[1], loaded
 * with dlopen); and 40 more functions, past the 32 the runtime once kept.
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
