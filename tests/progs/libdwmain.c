/* Calls libdw.so's functions (progs/libdw.c) through its PLT. */
#include <stdio.h>

int dw_scale(int x, const char *tag);
double dw_ratio(double a, long b);

int main(void)
{
	printf("%d %.2f\n", dw_scale(3, "abc"), dw_ratio(7.0, 2));
	return 0;
}
