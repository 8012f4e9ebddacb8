/* A shared object with sites, linked into modmain at start: its functions
 * are called from the program and from the plugin (modplug.c). Built
 * -fPIC with the site flags under test, linked with the module stub. */
__attribute__((noinline)) int lib_leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) int lib_sum(int n)
{
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += lib_leaf(n + i);
	return s;
}

/* Floating point through the module's trampolines: xmm0 in and out. */
__attribute__((noinline)) double lib_scale(double x) { return x * 1.5; }
