/*
 * funcs.c: a small object with a function of every binding (static,
 * global, weak), a weak function no relocation names (so the assembler
 * may emit no section symbol for its section), and a read-only table of
 * function pointers (absolute relocations in a data section).
 *
 * Rebuilt with the exact flags by the Makefile beside it.
 */
int counter;

static int add(int a, int b) { return a + b; }

__attribute__((weak)) int hook(int x) { return x * 3; }

__attribute__((weak)) int unused_weak(int x) { return x - 1; }

__attribute__((noinline)) static int twice(int x) { return add(x, x) ^ counter; }

int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s = add(s, hook(i)) + twice(i);
	counter += s;
	return s;
}

int (*const ops[])(int) = { hook, twice, work };
