/* Calls the functions of symsites.S and prints what they return. Built
 * without instrumentation: symsites.S's table lists every site. */
#include <stdio.h>

int sym_entry(void), sym_endbr(void), sym_pg(void), sym_outer(void), sym_area(void), sym_area_endbr(void);
int sym_chain(void), sym_chain_endbr(void), sym_chain6(void), sym_chain_call(int (*f)(void));

int main(void)
{
	printf("%d %d %d %d ", sym_entry(), sym_endbr(), sym_pg(), sym_outer());
	printf("%d %d %d ", sym_chain_call(sym_chain), sym_chain_call(sym_chain_endbr), sym_chain_call(sym_chain6));
	printf("%d %d\n", sym_area(), sym_area_endbr());
	return 0;
}
