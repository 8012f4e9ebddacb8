/*
 * The call shapes around a hook call that gcc emits beyond the plain
 * ones (shapes_test.go), traced end to end:
 *
 * - add, nested in outer: a GNU C nested function, which gcc builds with
 *   `push %r10; call __fentry__; pop %r10` under -mfentry, keeping the
 *   static chain through which it reads and writes outer's variables.
 *   It is called through a pointer (apply, by way of the trampoline gcc
 *   builds on the stack) and directly, and calls a traced function. A
 *   static chain lost at its site shows in the output: the result would
 *   be computed from the wrong frame's variables, if it did not crash.
 * - padded: patchable_function_entry(5), five NOPs at its entry and,
 *   with -pg -mfentry, the compiler's call of __fentry__ after them.
 * - padded_pre: patchable_function_entry(5, 2), two of the NOPs before
 *   its symbol.
 *
 * clang has no nested functions: its build has outer without one.
 * Built with -DSHAPES_LIB into a shared object (no main), the same
 * functions are served by the module stub; shapesmain.c calls them.
 */
#include <stdio.h>
#include <stdlib.h>

int shapes_run(int n);

/* Not inlined, nor cloned (outer.constprop.0) by gcc's interprocedural
 * passes, so the trace names the functions as written. */
#ifdef __clang__
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

NOIPA int leaf(int x)
{
	return x + 1;
}

NOIPA int apply(int (*f)(int), int x)
{
	int r = f(x);
	__asm__ volatile("" ::: "memory"); /* a call, not a tail call: add nests under apply */
	return r;
}

NOIPA int outer(int k)
{
	int total = k;
#ifndef __clang__
	NOIPA int add(int x)
	{
		total += x; /* outer's variable, through the static chain */
		return leaf(x) + k;
	}
	int r = apply(add, 5); /* through a pointer: gcc's trampoline on the stack */
	r += add(1);           /* directly */
#else
	int r = apply(leaf, 5) + leaf(1) + 2 * k;
	total += 6;
#endif
	return r * 100 + total;
}

NOIPA __attribute__((patchable_function_entry(5))) int padded(int x)
{
	return leaf(x) * 2;
}

NOIPA __attribute__((patchable_function_entry(5, 2))) int padded_pre(int x)
{
	return leaf(x) * 3;
}

NOIPA int shapes_run(int n)
{
	int sum = 0;
	for (int i = 0; i < n; i++)
		sum += outer(i) + padded(i) + padded_pre(i);
	return sum;
}

#ifndef SHAPES_LIB
int main(int argc, char **argv)
{
	int sum = shapes_run(argc > 1 ? atoi(argv[1]) : 3);
	printf("%d\n", sum);
	return sum % 7; /* not 0: the exit status is compared too */
}
#endif
