/*
 * Library calls chosen live (tests/libcall_test.go's TestLiveLibCalls),
 * traced from the start with FTRACE_LIBCALL=1 and FTRACE_FILTER=main: no
 * library call chosen. main calls getppid twice; enables getppid and
 * calls it 3 times; disables getp* and calls getppid 4 times; enables
 * getpid (never called before: a lazy slot not bound yet) and calls it
 * twice. The trace then holds getppid 3 times and getpid twice. Prints
 * a line that does not depend on the tracing; what each live call
 * changed goes to stderr.
 *
 * Built with -DUNTRACED (no runtime), the API is stubbed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api.h"

static int must(int r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", what, ftrace_error());
		exit(3);
	}
	fprintf(stderr, "%s %d\n", what, r);
	return r;
}

int main(void)
{
	long sum = 0;
	for (int i = 0; i < 2; i++)
		sum += getppid();
	must(ftrace_enable_functions("getppid"), "enable getppid");
	for (int i = 0; i < 3; i++)
		sum += getppid();
	must(ftrace_disable_functions("getp*"), "disable getp*");
	for (int i = 0; i < 4; i++)
		sum += getppid();
	must(ftrace_enable_functions("getpid"), "enable getpid");
	for (int i = 0; i < 2; i++)
		sum -= getpid();
	printf("calls made: %d\n", sum != 0 ? 11 : 11);
	return 0;
}
