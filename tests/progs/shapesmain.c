/*
 * shapes.c's functions from a shared object (libshapes.so, built with
 * -DSHAPES_LIB and the module stub), linked at start: prints what they
 * computed and exits with shapes.c's own main's status.
 */
#include <stdio.h>
#include <stdlib.h>

int shapes_run(int n);

int main(int argc, char **argv)
{
	int sum = shapes_run(argc > 1 ? atoi(argv[1]) : 3);
	printf("%d\n", sum);
	return sum % 7;
}
