/*
 * A function whose time is known, for report --diff: spin busy-waits
 * the microseconds argv[1] gives (on CLOCK_MONOTONIC, so it takes at
 * least that long however loaded the machine), after tick() was called
 * argv[2] times. Two runs with different arguments give two traces
 * whose difference the command lines say.
 */
#include <stdlib.h>
#include <time.h>

static inline long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noipa)) void tick(void)
{
	__asm__ volatile("");
}

__attribute__((noipa)) void spin(long us)
{
	long end = now_ns() + us * 1000;
	while (now_ns() < end)
		;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	for (int i = atoi(argv[2]); i > 0; i--)
		tick();
	spin(atol(argv[1]));
	return 0;
}
