/*
 * Live filter calls made before a shared object is loaded apply to it
 * when it is: main enables plug_* and disables plug_off with no such
 * function loaded (0 sites each), then loads the plugin (argv[1],
 * progs/livedlplug.c) and calls plug_a, plug_off and other; unloads it,
 * enables other, loads it again and calls the three again. The trace
 * then holds plug_a twice, other once (its second load's call), plug_off
 * never: what the calls chose, in order, the latest call for a function
 * deciding. Prints what it computed, and the sites each call changed:
 *
 *   enable plug_* 0
 *   disable plug_off 0
 *   enable other N      (N: 1, the plugin unloaded and its other absent: 0)
 *   sum S
 *
 * Built with -DUNTRACED (no runtime), the API is stubbed: the output is
 * what every traced run must print, but for the counts.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "api.h"

static int must(int r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", what, ftrace_error());
		exit(3);
	}
	printf("%s %d\n", what, r);
	return r;
}

static long calls(const char *path)
{
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(4);
	}
	int (*a)(int) = (int (*)(int))dlsym(h, "plug_a");
	int (*off)(int) = (int (*)(int))dlsym(h, "plug_off");
	int (*other)(int) = (int (*)(int))dlsym(h, "other");
	long s = a(1) + off(2) + other(3);
	dlclose(h);
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	must(ftrace_enable_functions("plug_*"), "enable plug_*");
	must(ftrace_disable_functions("plug_off"), "disable plug_off");
	long s = calls(argv[1]);
	must(ftrace_enable_functions("other"), "enable other");
	s += calls(argv[1]);
	printf("sum %ld\n", s);
	return 0;
}
