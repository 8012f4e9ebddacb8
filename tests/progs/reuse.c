/*
 * The address-reuse test program: loads the plugin named by argv[1]
 * with dlopen, calls it, unloads it, then does the same with the one
 * named by argv[2], which the loader usually maps where the first was
 * (the two have the same layout). Prints what they computed (stdout,
 * identical traced or not) and, on stderr, where each was mapped, for
 * the test to check that the second reused the first one's addresses.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	static const char *const entry[] = { "plum_run", "pear_run" };
	void *base[2] = { 0, 0 };
	if (argc != 3) {
		fprintf(stderr, "usage: reuse PLUM.so PEAR.so\n");
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		void *h = dlopen(argv[1 + i], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		int (*run)(int) = (int (*)(int))dlsym(h, entry[i]);
		Dl_info info;
		if (!run || !dladdr((void *)run, &info))
			return 1;
		base[i] = info.dli_fbase;
		printf("%s %d\n", entry[i], run(i + 1));
		dlclose(h);
	}
	fprintf(stderr, "bases %p %p\n", base[0], base[1]);
	return 3;
}
