/* A plugin without sites that progs/nest.c opens, calls and closes,
 * twice: its calls of the C library are traced only with nested library
 * calls, hooked at each load. */
#include <string.h>

int plug_work(const char *s)
{
	return (int)strspn(s, "a");
}
