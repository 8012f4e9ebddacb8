/*
 * Code beyond a bl's reach of the runtime: far_leaf and far_mid sit in a
 * section of their own, which the test links 768 MiB above the rest
 * (-Wl,--section-start=farcode=0x30000000, not position-independent),
 * so none of their sites can call the runtime's trampolines directly,
 * and the compiler's own calls between the two parts go through the
 * linker's veneers. Prints what it computed.
 */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
#define FAR __attribute__((noinline, section("farcode")))

FAR int far_leaf(int x)
{
	return x * 2 + 1;
}

FAR int far_mid(int x)
{
	return far_leaf(x) + far_leaf(x + 1);
}

NOINLINE int near_fn(int x)
{
	return far_mid(x) + 1;
}

int main(void)
{
	int s = 0;
	for (int i = 0; i < 10; i++)
		s += near_fn(i);
	printf("far %d\n", s);
	return 0;
}
