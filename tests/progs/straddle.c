/* Calls straddle.S's straddle three times and prints the sum: 126. */
#include <stdio.h>

int straddle(void);

int main(void)
{
	long s = 0;
	for (int i = 0; i < 3; i++)
		s += straddle();
	printf("%ld\n", s);
	return 0;
}
