/* The second plugin reuse.c loads, at the first one's addresses: pear_run
 * calls pear_step three times. */
static __attribute__((noinline)) int pear_step(int x) { return x * 5 + 3; }

__attribute__((noinline)) int pear_run(int x)
{
	return pear_step(x) + pear_step(x + 1) + pear_step(x + 3);
}
