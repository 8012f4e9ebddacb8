/*
 * The shared-object test program: calls into modlib (linked at start),
 * then loads the plugin named by argv[1] with dlopen, calls it, unloads
 * it, twice. Prints what it computed (stdout, identical traced or not);
 * on stderr, the bytes of anonymous executable mappings (the runtime's
 * graph trampolines) before the first dlopen, while the plugin is
 * loaded, and after the last dlclose: what a module's load adds, its
 * unload must take away.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int lib_sum(int n);
double lib_scale(double x);

/* Bytes of executable mappings backed by no file. */
static __attribute__((noinline)) long anon_exec(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	long total = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi, inode;
		char perms[8];
		int path = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perms, &inode, &path) < 4)
			continue;
		if (strchr(perms, 'x') && inode == 0 && line[path] != '[' && line[path] != '/')
			total += (long)(hi - lo);
	}
	if (f)
		fclose(f);
	return total;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: modmain PLUGIN.so\n");
		return 2;
	}
	printf("lib_sum %d\n", lib_sum(2 * argc));
	printf("lib_scale %.2f\n", lib_scale(2.5));
	long before = anon_exec(), loaded = 0;
	for (int i = 0; i < 2; i++) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		int (*run)(int) = (int (*)(int))dlsym(h, "plug_run");
		if (!run)
			return 1;
		printf("plug_run %d\n", run(i));
		loaded = anon_exec();
		dlclose(h);
	}
	fprintf(stderr, "anon-exec before=%ld loaded=%ld after=%ld\n", before, loaded, anon_exec());
	return 7;
}
