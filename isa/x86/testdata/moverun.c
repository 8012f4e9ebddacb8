/*
 * The program TestMovedCodeRuns relocates its own functions' prologues
 * in: given a plan file, it maps the trampolines it lists at their
 * addresses (moved by the load bias, as everything is), writes each
 * function's jump through /proc/self/mem (the text is never made
 * writable), then computes the same as without: the outputs must match.
 *
 * Plan file: "main_addr tramp_base tramp_size" (link-time, hex), then
 * one line a function: "patch jump_hex tramp tramp_hex".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

int g_counter;
static const int squares[] = {0, 1, 4, 9, 16, 25, 36, 49, 64, 81};

NOINLINE int add(int a, int b) { return a + b; }
NOINLINE int cond(int x) { return x > 5 ? x * 2 : -x; }
NOINLINE int useglobal(int x) { g_counter += x; return g_counter * 2; }
NOINLINE int callfirst(int x) { return add(x, 1) * 3; }
NOINLINE long fact(long n) { return n <= 1 ? 1 : n * fact(n - 1); }
NOINLINE int square(int i) { return squares[i % 10]; }
NOINLINE double fp(double a, double b) { return a * b + 1.0; }
NOINLINE const char *name(int i) { static const char *s[] = {"zero", "one", "two"}; return s[i % 3]; }

NOINLINE int sw(int x)
{
	switch (x) {
	case 0: return add(x, 7);
	case 1: return cond(x) + 3;
	case 2: return useglobal(x) ^ 5;
	case 3: return square(x) - 4;
	case 4: return (int)fact(x);
	case 5: return 17;
	case 6: return callfirst(x) * 2;
	default: return -1;
	}
}

NOINLINE int loopsum(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += a[i] * (i & 1 ? -1 : 1);
	return s;
}

static int (*const ops[])(int) = {cond, useglobal, callfirst, square, sw};
NOINLINE int tail(int i, int x) { return ops[i % 5](x); }

/*
 * callwrap's call is the last instruction moved (push %rbx: 1 byte, the
 * call: 5), so the trampoline emulates it: retcheck sees its return
 * address in callwrap, where the call was, and not in the trampoline.
 */
int callwrap(int x);
extern char callwrap_end[];
NOINLINE int retcheck(int x)
{
	char *ra = __builtin_return_address(0);
	return x * 2 + (ra > (char *)callwrap && ra < callwrap_end ? 1000 : 0);
}
__asm__(".text\n"
	".p2align 4\n"
	".globl callwrap\n"
	".type callwrap, @function\n"
	"callwrap:\n"
	"	push %rbx\n"
	"	call retcheck\n"
	"	pop %rbx\n"
	"	ret\n"
	"callwrap_end:\n"
	".size callwrap, .-callwrap\n");

NOINLINE int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(int argc, char **argv);

static int hexbytes(const char *s, unsigned char *out)
{
	int n = 0;
	for (; s[0] && s[1]; s += 2) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			return -1;
		out[n++] = (unsigned char)v;
	}
	return n;
}

static void apply(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long main_link, tbase, tsize, patch, tramp;
	static char jhex[256], thex[1024];
	unsigned char b[512];
	int mem = open("/proc/self/mem", O_RDWR), n = 0;
	if (!f || mem < 0 || fscanf(f, "%lx %lx %lx", &main_link, &tbase, &tsize) != 3) {
		perror("plan");
		exit(2);
	}
	uintptr_t bias = (uintptr_t)main - main_link;
	void *want = (void *)(bias + tbase);
	void *t = mmap(want, tsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (t != want) {
		perror("mmap");
		exit(2);
	}
	/* Trampolines first (mapped writable, then executable). */
	long pos = ftell(f);
	while (fscanf(f, "%lx %255s %lx %1023s", &patch, jhex, &tramp, thex) == 4) {
		int k = hexbytes(thex, b);
		memcpy((void *)(bias + tramp), b, k);
	}
	if (mprotect(t, tsize, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		exit(2);
	}
	/* Then the jumps, through /proc/self/mem: the text stays read-only. */
	fseek(f, pos, SEEK_SET);
	while (fscanf(f, "%lx %255s %lx %1023s", &patch, jhex, &tramp, thex) == 4) {
		int k = hexbytes(jhex, b);
		if (pwrite(mem, b, k, (off_t)(bias + patch)) != k) {
			perror("pwrite");
			exit(2);
		}
		n++;
	}
	fprintf(stderr, "patched %d\n", n);
	fclose(f);
	close(mem);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		apply(argv[1]);
	int a[] = {5, 3, 9, 1, 7, 2, 8};
	for (int i = 0; i < 9; i++)
		printf("sw(%d)=%d tail=%d add=%d cond=%d fact=%ld fp=%.2f %s\n", i, sw(i), tail(i, i + 2),
		       add(i, 2 * i), cond(i), fact(i + 1), fp(i, 0.5), name(i));
	printf("loopsum=%d callwrap=%d\n", loopsum(a, 7), callwrap(21));
	qsort(a, 7, sizeof a[0], cmp);
	for (int i = 0; i < 7; i++)
		printf("%d ", a[i]);
	printf("\ng_counter=%d\n", g_counter);
	return 0;
}
