/* The types progs/argtypes.c, argtypeslib.c and argtypesplug.c pass. */
#ifndef PROGS_ARGTYPES_H
#define PROGS_ARGTYPES_H
#include <stdbool.h>
#include <stdint.h>

enum color { RED, GREEN, BLUE };
enum perm { PERM_R = 1, PERM_W = 2, PERM_X = 4 };
struct pt { int x, y; };              /* 8 bytes: one integer register */
struct big { long a, b, c; };         /* 24: the stack (x86-64), by reference (arm64) */
struct mixed { long n; double d; };   /* x86-64: INTEGER then SSE */
struct f3 { float a, b, c; };         /* x86-64: two SSE eightbytes; arm64: an HFA, three registers */

int lib_scale(int x, enum color c);
#endif
