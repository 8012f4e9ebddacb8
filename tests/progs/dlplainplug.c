/* The plugin progs/dlplain.c loads: built with sites and no module
 * stub, or with no tracing flags at all. */
static int depth;

__attribute__((noinline)) int plug_leaf(int x)
{
	depth++;
	return x * 3 + 1;
}

__attribute__((noinline)) int plug_mid(int x)
{
	return plug_leaf(x) + plug_leaf(x + 1);
}

int plug_run(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += plug_mid(i);
	return s + depth;
}
