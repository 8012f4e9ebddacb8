/*
 * Callers that keep values in call-clobbered registers across calls:
 * built without tracing flags at -O2, gcc's -fipa-ra sees that the
 * leaves below change nothing but their result register, and lets
 * their callers keep everything else live across the calls to them.
 * A tracer that changes any such register at a site made from a
 * leaf's prologue changes what the program prints.
 */
#include <stdio.h>
#include <stdlib.h>

/* Touches the result register alone (x86-64: eax; arm64: w0). */
__attribute__((noinline)) int leaf(int x)
{
	return x * 3 + 1;
}

/* Takes no argument and touches the result register alone: its
 * callers may keep a value in the first argument register across it
 * too. */
volatile int tick = 1;
__attribute__((noinline)) int leaf0(void)
{
	return tick;
}

/* Touches xmm0 / d0 alone. */
__attribute__((noinline)) double fleaf(double x)
{
	return x * 0.5;
}

/* Fourteen integers live across each call: more than the callee-saved
 * registers hold, so the caller keeps the rest in call-clobbered ones,
 * which the leaf leaves alone. */
__attribute__((noinline)) long ints(const long *a)
{
	long v0 = a[0], v1 = a[1], v2 = a[2], v3 = a[3], v4 = a[4], v5 = a[5], v6 = a[6];
	long v7 = a[7], v8 = a[8], v9 = a[9], v10 = a[10], v11 = a[11], v12 = a[12], v13 = a[13];
	long s = leaf((int)v0);
	s += leaf((int)(s + v1));
	s ^= leaf((int)(s + v2));
	s += leaf((int)(s ^ v3));
	s += leaf0();
	s -= leaf0();
	return s + v0 * 3 + v1 * 5 + v2 * 7 + v3 * 11 + v4 * 13 + v5 * 17 + v6 * 19 + v7 * 23 + v8 * 29 + v9 * 31 +
	       v10 * 37 + v11 * 41 + v12 * 43 + v13 * 47;
}

/* Doubles live across each call: kept in vector registers, all
 * call-clobbered on x86-64 (v16-v31 on arm64). */
__attribute__((noinline)) double floats(const double *a)
{
	double f0 = a[0], f1 = a[1], f2 = a[2], f3 = a[3], f4 = a[4], f5 = a[5], f6 = a[6], f7 = a[7];
	double s = fleaf(f0);
	s += fleaf(s + f1);
	s += fleaf(s * f2);
	return s + f0 * 3 + f1 * 5 + f2 * 7 + f3 * 11 + f4 * 13 + f5 * 17 + f6 * 19 + f7 * 23;
}

int main(int argc, char **argv)
{
	long a[14];
	double d[8];
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	long t = 0;
	double u = 0;
	for (int i = 0; i < 14; i++)
		a[i] = (i + 1) * (argc + 7);
	for (int i = 0; i < 8; i++)
		d[i] = (i + 1) * 0.25 * argc;
	for (int k = 0; k < n; k++) {
		a[k % 14] += k;
		d[k % 8] += 0.125;
		t += ints(a) % 1000003;
		u += floats(d);
	}
	printf("ints %ld floats %.3f argv %s\n", t, u, argc > 2 ? argv[2] : "-");
	return (int)(t % 7) + 3;
}
