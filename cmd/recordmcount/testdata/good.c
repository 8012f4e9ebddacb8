/*
 * good.c: the good object the recordmcount tests start from. Every file
 * under bad/ is this object (or recordmcount's output for it) with one
 * thing broken; see gen_test.go. The exact build command is in the
 * Makefile beside this file.
 */
int counter;

static int add(int a, int b) { return a + b; }

__attribute__((weak)) int hook(int x) { return x * 3; }

int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s = add(s, hook(i));
	counter += s;
	return s;
}
