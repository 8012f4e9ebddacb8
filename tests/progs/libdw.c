/* A shared object built with -g, without sites (tests/libargs_test.go's
 * TestLibCallArgsDWARF): functions no prototype table knows, typed from
 * its own DWARF when a traced program calls them. */
#include <string.h>

int dw_scale(int x, const char *tag)
{
	return x * (int)strlen(tag);
}

double dw_ratio(double a, long b)
{
	return a / (double)b;
}
