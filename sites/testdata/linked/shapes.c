/* The linked fixtures of shapes.c: see there. */
#include "../shapes.c"
