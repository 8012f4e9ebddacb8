/* The plugin progs/livedl.c loads: three functions with sites. */
__attribute__((noinline)) int plug_a(int x) { return x + 1; }
__attribute__((noinline)) int plug_off(int x) { return x * 2; }
__attribute__((noinline)) int other(int x) { return x - 1; }
