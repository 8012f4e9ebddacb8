#include "../core/core.h"

/* Static, as core/notify.c's: each file calls its own. */
static int helper(int x)
{
	return x;
}

static void tracer_event(int x)
{
	(void)helper(x);
}

__attribute__((constructor)) static void tracer_init(void)
{
	core_on_event(tracer_event);
	core_event(1);
}
