/* A program linked without the runtime that loads the plugin argv[1]
 * with dlopen, calls it, closes it, and loads it again (each time
 * the plugin's sites are made anew). With a second argument, it writes
 * on stderr what the loader's debugger hook (_dl_debug_state) begins
 * with, and, when that is a jump, the first bytes where it leads: hex,
 * for the test to decode. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void hex(const char *what, const unsigned char *p, int n)
{
	fprintf(stderr, "%s %lx ", what, (unsigned long)(uintptr_t)p);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%02x", p[i]);
	fprintf(stderr, "\n");
}

static void dump(void)
{
	const unsigned char *p = dlsym(RTLD_DEFAULT, "_dl_debug_state");
	if (!p)
		return;
#if defined(__x86_64__)
	if (p[0] == 0xf3) /* endbr64 */
		p += 4;
	hex("brk", p, 5);
	if (p[0] == 0xe9) {
		int32_t rel;
		memcpy(&rel, p + 1, 4);
		hex("page", p + 5 + rel, 16);
	}
#else
	uint32_t w;
	memcpy(&w, p, 4);
	if (w == 0xd503245f) /* bti c */
		p += 4, memcpy(&w, p, 4);
	hex("brk", p, 4);
	if ((w >> 26) == 5) { /* b */
		int32_t off = (int32_t)(w << 6) >> 6;
		hex("page", p + 4 * (intptr_t)off, 16);
	}
#endif
}

int main(int argc, char **argv)
{
	int sum = 0;
	for (int round = 0; round < 2; round++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 2;
		}
		int (*run)(int) = (int (*)(int))dlsym(h, "plug_run");
		int r = run(3 + round);
		printf("round %d: %d\n", round, r);
		sum += r;
		if (argc > 2 && round == 0)
			dump();
		dlclose(h);
	}
	return sum & 0x3f;
}
