/* A shared object with sites, linked into progs/life.c and life.cc at
 * start: its constructor and destructor, and a function it registers
 * with atexit, make traced calls of its own; lib_in_main is called from
 * the program's main. Each prints where it is. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE int lib_in_ctor(int x)
{
	printf("lib constructor %d\n", x);
	return x + 1;
}

NOINLINE int lib_in_dtor(int x)
{
	printf("lib destructor %d\n", x);
	return x + 2;
}

NOINLINE static void lib_in_atexit(void)
{
	printf("lib atexit\n");
}

NOINLINE int lib_in_main(int x)
{
	return x * 5;
}

__attribute__((constructor)) static void lib_ctor(void)
{
	lib_in_ctor(1);
	atexit(lib_in_atexit);
}

__attribute__((destructor)) static void lib_dtor(void)
{
	lib_in_dtor(2);
}
