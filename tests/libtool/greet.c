/* The library: its function is traced through the module stub. */
#include <stdio.h>

void greet_world(void)
{
	puts("hello, world");
}
