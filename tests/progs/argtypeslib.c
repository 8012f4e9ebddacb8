/* A shared object progs/argtypes.c links (DT_NEEDED), with sites: its
 * functions' arguments come from its own DWARF. */
#include "argtypes.h"
#include "attrs.h"

NOINLINE int lib_scale(int x, enum color c) { return x * (int)(c + 1); }
