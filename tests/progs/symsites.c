/* Calls the functions of symsites.S and prints what they return. Built
 * without instrumentation: symsites.S's table lists every site. */
#include <stdio.h>

int sym_entry(void), sym_endbr(void), sym_pg(void), sym_outer(void);

int main(void)
{
	printf("%d %d %d %d\n", sym_entry(), sym_endbr(), sym_pg(), sym_outer());
	return 0;
}
