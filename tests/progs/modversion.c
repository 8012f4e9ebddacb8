/*
 * Registers three hand-made module descriptions with the program's
 * runtime (built with -I runtime/src, linked with the runtime): one of
 * this runtime's version, whose slots the runtime must fill with its
 * trampolines in FTRT_T_CALLER5.. order (the chain ones among them),
 * one of version 1 (a stub from before the chain trampolines, with two
 * trampolines and slots fewer), and one too small. Prints what register returned for each
 * and whether each slot holds the trampoline of its place.
 */
#include <stdio.h>

#include "core/ftrt.h"

void ftrace_caller5(void), ftrace_caller6(void), ftrace_mcount_caller5(void), ftrace_mcount_caller6(void);
void ftrace_chain_caller5(void), ftrace_chain_caller6(void), ftrace_stub(void);

int main(void)
{
	static const uintptr_t want[FTRT_T_N] = FTRT_TARGETS;
	static uintptr_t slots[3][FTRT_SLOTS];
	struct ftrt_module m[3] = {
		{ .size = sizeof m[0], .version = FTRT_MODULE_VERSION, .slots = slots[0] },
		{ .size = sizeof m[0], .version = 1, .slots = slots[1] },
		{ .size = sizeof m[0] - sizeof(uintptr_t), .version = FTRT_MODULE_VERSION, .slots = slots[2] },
	};
	for (int i = 0; i < 3; i++) {
		printf("register %d:", ftrt_module_register(&m[i]));
		for (int s = 0; s < FTRT_SLOTS; s++)
			printf(" %d", slots[i][s] == want[FTRT_T_CALLER5 + s]);
		printf("\n");
	}
	ftrt_module_unregister(&m[0]);
	return 0;
}
