/*
 * Nested library calls (tests/libcall_test.go's TestNestLibCalls): the
 * program calls nest_len, a function of libnest.so (nestlib.c), a
 * shared object without sites, twice; then opens nestplug.so
 * (nestplug.c, without sites either), calls its plug_work through the
 * pointer dlsym gives, closes it, and does it all once more. Only
 * libnest.so calls strcspn, only the plugin strspn: each library's own
 * calls, seen only when every loaded module's calls are traced.
 */
#include <dlfcn.h>
#include <stdio.h>

int nest_len(const char *s);

int main(int argc, char **argv)
{
	int n = nest_len("abc,def") + nest_len("xy;z");
	for (int i = 0; i < 2; i++) {
		void *h = dlopen(argc > 1 ? argv[1] : "./nestplug.so", RTLD_NOW);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		int (*work)(const char *) = (int (*)(const char *))dlsym(h, "plug_work");
		if (!work)
			return 2;
		n += work("aaab");
		dlclose(h);
	}
	printf("nest %d\n", n);
	return 0;
}
