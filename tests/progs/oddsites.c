/* Calls the functions of oddsites.S and prints what they return. Built
 * without instrumentation: oddsites.S's table lists every site. */
#include <stdio.h>

int odd_nop(void), odd_call(void), odd_call6(void), odd_span(void), odd_other(void), odd_mov(void);

int main(void)
{
	printf("%d %d %d %d %d %d\n", odd_nop(), odd_call(), odd_call6(), odd_span(), odd_other(), odd_mov());
	return 0;
}
