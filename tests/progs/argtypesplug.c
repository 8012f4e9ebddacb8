/* A shared object progs/argtypes.c loads with dlopen, with sites: its
 * functions' arguments come from its DWARF when it is loaded. */
#include "argtypes.h"
#include "attrs.h"

NOINLINE double plug_mean(double a, double b, const char *why) { return (a + b) / 2 + (why[0] == 0); }
NOINLINE int plug_run(int n) { return (int)plug_mean(n, -n * 3, "plug") + lib_scale(n, BLUE); }
