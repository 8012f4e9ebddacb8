/* The first plugin reuse.c loads: plum_run calls plum_step twice. Its
 * layout matches reusepear.c's, so the loader maps the second where
 * this one was. */
static __attribute__((noinline)) int plum_step(int x) { return x * 7 + 1; }

__attribute__((noinline)) int plum_run(int x)
{
	return plum_step(x) + plum_step(x + 2);
}
