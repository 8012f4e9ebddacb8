/* A plugin with sites, loaded by modmain with dlopen (twice, with a
 * dlclose between): it calls its own functions and back into modlib. */
int lib_sum(int n);

static __attribute__((noinline)) int plug_step(int x) { return x ^ 0x55; }

__attribute__((noinline)) int plug_run(int x)
{
	return plug_step(x) + plug_step(x + 1) + lib_sum(x);
}
