/* A lower layer tells a higher one through a callback it registers:
 * the door, which the graph does not see (and need not). */
#include "core.h"

static void (*hook)(int);

void core_on_event(void (*f)(int))
{
	hook = f;
}

static int helper(int x)
{
	return x + (int)cycles();
}

void core_event(int x)
{
	if (hook)
		hook(helper(x));
}
