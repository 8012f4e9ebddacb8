/*
 * The plugin progs/libcallnr.c loads with dlopen (tests/libcall_test.go):
 * its one function makes library calls of its own (strlen, getpid,
 * snprintf) and a call of its own (plug_step). Built with sites and the
 * module stub, and without.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) size_t plug_step(const char *s)
{
	return strlen(s) + (getpid() > 0);
}

size_t plug_work(const char *s)
{
	char buf[16];
	int n = snprintf(buf, sizeof buf, "%zu", plug_step(s));
	return (size_t)n + strlen(buf);
}
