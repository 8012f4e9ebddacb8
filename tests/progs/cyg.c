/*
 * The oracle for call counts: linked into the test program built with
 * -finstrument-functions (and -no-pie, so addresses are file addresses),
 * it counts the calls of each function and prints `cyg ADDR COUNT` lines
 * to stderr at exit. The tracer's counts must equal these.
 */
#include <stdio.h>

#define MAX 256

static struct {
	void *fn;
	long n;
} tab[MAX];

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	for (int i = 0; i < MAX; i++) {
		if (tab[i].fn == fn || !tab[i].fn) {
			tab[i].fn = fn;
			tab[i].n++;
			return;
		}
	}
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
}

__attribute__((no_instrument_function, destructor)) static void cyg_report(void)
{
	for (int i = 0; i < MAX && tab[i].fn; i++)
		fprintf(stderr, "cyg %lx %ld\n", (unsigned long)tab[i].fn, tab[i].n);
}
