/* A C program whose constructors (of every priority, and none), its
 * destructors, and the functions it registers with atexit (from a
 * constructor, from main) make traced calls, as does its shared object
 * (lifelib.c) in its own. Each place calls a function of its own, once,
 * so that a trace counts each exactly. Prints where it is. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

int lib_in_main(int x);

NOINLINE int in_ctor_101(int x) { printf("constructor(101) %d\n", x); return x; }
NOINLINE int in_ctor_200(int x) { printf("constructor(200) %d\n", x); return x; }
NOINLINE int in_ctor(int x) { printf("constructor %d\n", x); return x; }
NOINLINE int in_main(int x) { printf("main %d\n", x); return x; }
NOINLINE void in_atexit_ctor(void) { printf("atexit from a constructor\n"); }
NOINLINE void in_atexit_main(void) { printf("atexit from main\n"); }
NOINLINE int in_dtor(int x) { printf("destructor %d\n", x); return x; }
NOINLINE int in_dtor_200(int x) { printf("destructor(200) %d\n", x); return x; }
NOINLINE int in_dtor_101(int x) { printf("destructor(101) %d\n", x); return x; }

__attribute__((constructor(101))) static void ctor_101(void) { in_ctor_101(1); }
__attribute__((constructor(200))) static void ctor_200(void) { in_ctor_200(2); }
__attribute__((constructor)) static void ctor(void)
{
	in_ctor(3);
	atexit(in_atexit_ctor);
}
__attribute__((destructor)) static void dtor(void) { in_dtor(4); }
__attribute__((destructor(200))) static void dtor_200(void) { in_dtor_200(5); }
__attribute__((destructor(101))) static void dtor_101(void) { in_dtor_101(6); }

int main(void)
{
	atexit(in_atexit_main);
	in_main(lib_in_main(7));
	return 3;
}
