/* The example calculator: evaluates each expression given on the command
 * line (or a built-in list) and prints the results. */
#include <stdio.h>
#include "calc.h"

static int eval(const char *src)
{
	struct parser p = { src, 0 };
	long v = parse_expr(&p);
	if (!p.err && *p.s)
		p.err = "trailing input";
	if (p.err) {
		printf("%-20s error: %s\n", src, p.err);
		return 1;
	}
	printf("%-20s = %ld\n", src, v);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *builtin[] = { "1 + 2 * 3", "(1 + 2) * 3", "-(4 - 10) / 2", "7 / (3 - 3)" };
	int bad = 0;
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			bad += eval(argv[i]);
	else
		for (unsigned i = 0; i < sizeof builtin / sizeof *builtin; i++)
			bad += eval(builtin[i]);
	return bad ? 1 : 0;
}
