/*
 * Names that are terminal escape sequences: the test rewrites the
 * placeholders below, in the linked program's symbol table, into names
 * of the same length that clear the screen (ESC [2J), write the
 * terminal's clipboard (OSC 52) and hold a C1 CSI (U+009B); the program
 * names itself, and its one thread, with an escape sequence, and hands
 * one to show, whose string argument the trace records.
 */
#include <stdio.h>
#include <sys/prctl.h>

#include "attrs.h"

NOINLINE int cls_XXX(int x) { return x + 1; }              /* "cls\x1b[2J" */
NOINLINE int clip_XXXXXXXXXXXXXXX(int x) { return x * 2; }     /* "clip\x1b]52;c;ZXZpbA==\a" */
NOINLINE int c1_X(int x) { return x - 3; }                     /* "c1\u009b" */
NOINLINE int show(const char *s) { return s[0]; }

int main(void)
{
	prctl(PR_SET_NAME, "name\x1b[2J", 0, 0, 0);
	int v = c1_X(clip_XXXXXXXXXXXXXXX(cls_XXX(1)));
	v += show("arg\x1b[2J");
	printf("%d\n", v);
	return 0;
}
