/*
 * Call shapes around a function's hook call beyond the plain ones, for
 * the fixtures (objects here, linked programs in linked/, which include
 * this file): never run, and calling nothing of libc.
 *
 * - outer_add.add: a GNU C nested function that reads a variable of the
 *   function it is nested in, through the static chain (r10). With
 *   -mfentry, gcc brackets its call of __fentry__ with `push %r10` and
 *   `pop %r10` (a chain site, two bytes into the function, or six with
 *   -fcf-protection, whose endbr64 gcc 12 puts after the push); with
 *   -pg, the push comes after the prologue and changes nothing. Its
 *   address is taken (a trampoline on the stack) and it is called
 *   directly too. gcc only: clang has no nested functions.
 * - padded: patchable_function_entry(5): five NOPs at the entry, then,
 *   with -pg -mfentry, the compiler's call of __fentry__ after them.
 * - padded_pre: patchable_function_entry(5, 2): two of the NOPs before
 *   the function's symbol, three at its entry, then the call.
 * - apply: a plain function, which calls through a pointer.
 *
 * With -fpatchable-function-entry=5 as well, every function gets an
 * area, and with -pg -mfentry a call after it (in outer_add.add, after
 * the push).
 */
__attribute__((noinline)) int apply(int (*f)(int), int x)
{
	return f(x);
}

#ifndef __clang__
__attribute__((noinline)) int outer_add(int k)
{
	__attribute__((noinline)) int add(int x)
	{
		return x + k;
	}
	return apply(add, 5) + add(1);
}
#endif

__attribute__((patchable_function_entry(5), noinline)) int padded(int x)
{
	return x * 2;
}

__attribute__((patchable_function_entry(5, 2), noinline)) int padded_pre(int x)
{
	return x * 3;
}

int main(void)
{
	int r = padded(4) + padded_pre(5);
#ifndef __clang__
	r += outer_add(3);
#endif
	return r;
}
