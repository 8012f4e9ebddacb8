/*
 * ops and shared objects: two ops registered before the plugin
 * (argv[1], progs/livedlplug.c) is loaded, one on plug_* (its trampoline
 * at plug_off, a list with the other at plug_a), one on plug_a; the
 * plugin loaded, its functions called, unloaded and loaded again (its
 * sites, trampolines and list made anew), then the ops unregistered.
 * Prints the callback counts after each:
 *
 *   loaded: all=2 a=1 sum=8
 *   reloaded: all=2 a=1 sum=8
 *   unregistered: all=0 a=0 sum=8
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <ftrace.h>

static long all, a;

static void count(unsigned long ip, unsigned long pip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)fregs;
	__atomic_fetch_add((long *)op->private, 1, __ATOMIC_RELAXED);
}

static struct ftrace_ops ops_all = { .func = count, .private = &all };
static struct ftrace_ops ops_a = { .func = count, .private = &a };

static void step(const char *what, const char *path)
{
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(4);
	}
	int (*pa)(int) = (int (*)(int))dlsym(h, "plug_a");
	int (*off)(int) = (int (*)(int))dlsym(h, "plug_off");
	int (*other)(int) = (int (*)(int))dlsym(h, "other");
	long s = pa(1) + off(2) + other(3);
	dlclose(h);
	printf("%s: all=%ld a=%ld sum=%ld\n", what, all, a, s);
	all = a = 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (ftrace_set_filter(&ops_all, "plug_*", 1) < 0 || ftrace_set_filter(&ops_a, "plug_a", 1) < 0 ||
	    register_ftrace_function(&ops_all) || register_ftrace_function(&ops_a)) {
		fprintf(stderr, "register: %s\n", ftrace_error());
		return 3;
	}
	step("loaded", argv[1]);
	step("reloaded", argv[1]);
	if (unregister_ftrace_function(&ops_all) || unregister_ftrace_function(&ops_a)) {
		fprintf(stderr, "unregister: %s\n", ftrace_error());
		return 3;
	}
	step("unregistered", argv[1]);
	return 0;
}
