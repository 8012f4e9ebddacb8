/*
 * Calls into the C library, a known number of times each
 * (tests/libcall_test.go): strlen 5, getpid 2, qsort once with a traced
 * comparator (its calls counted here), malloc and free 3 each, printf
 * once (the counts). work makes them all but printf, which main makes.
 *
 * With "stub", it also prints the 80 bytes at &getpid: through a
 * redirected GOT slot that is the slot's stub (patch/libcall.c; under
 * function_graph on x86-64, its graph stub), then the three words at
 * the end of its page (the common entry's address is the last), then
 * getpid's own address, where the stub goes on to.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *names[] = { "alpha", "beta", "gamma", "delta", "epsilon" };
static int cmps;

__attribute__((noinline)) int cmp(const void *a, const void *b)
{
	cmps++;
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) size_t work(void)
{
	size_t n = 0;
	for (int i = 0; i < 5; i++)
		n += strlen(names[i]);
	n += (size_t)(getpid() > 0) + (size_t)(getpid() > 0);
	int v[6] = { 5, 3, 1, 4, 2, 6 };
	qsort(v, 6, sizeof v[0], cmp);
	for (int i = 0; i < 3; i++) {
		void *volatile p = malloc(16 + (size_t)i);
		free(p);
	}
	return n + (size_t)v[0];
}

int main(int argc, char **argv)
{
	size_t n = work();
	printf("sum %zu cmp %d\n", n, cmps);
	if (argc > 1 && strcmp(argv[1], "stub") == 0) {
		pid_t (*volatile f)(void) = getpid;
		const unsigned char *b = (const unsigned char *)(uintptr_t)f;
		const uintptr_t *word = (const uintptr_t *)(((uintptr_t)b & ~(uintptr_t)4095) + 4088);
		printf("stub %#lx", (unsigned long)(uintptr_t)b);
		for (int i = 0; i < 80; i++)
			printf(" %02x", b[i]);
		printf(" words 0x%lx 0x%lx 0x%lx", (unsigned long)word[-2], (unsigned long)word[-1], (unsigned long)word[0]);
		printf(" getpid 0x%lx\n", (unsigned long)(uintptr_t)dlsym(RTLD_DEFAULT, "getpid"));
	}
	return 0;
}
