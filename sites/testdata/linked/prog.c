/*
 * A small program for the linked fixtures of `ftpatch sites`: built with
 * each site form (mk/fixtures.mk, FIXTURE_LINKED), linked without libc
 * against the stand-in hooks of runtime/stub, never run.
 *
 * What it holds: a static function, globals (one with an alias), a weak
 * one, a cold one (gcc moves it to .text.unlikely), a function with no
 * site (no_instrument_function), and a function spread over several
 * source lines, so the SOURCE column has distinct lines to show.
 */
static int counter;

static int __attribute__((noinline)) twice(int x)
{
	return 2 * x;
}

int add(int a, int b)
{
	return twice(a) + b;
}

int sum(int, int) __attribute__((alias("add")));

int __attribute__((weak, noinline)) hook_me(int x)
{
	return x + 1;
}

int __attribute__((noinline, cold)) rare(int x)
{
	return x * 7;
}

int __attribute__((no_instrument_function)) notrace_get(void)
{
	return 42;
}

void __attribute__((noinline))
bump(void)
{
	counter++;
}

int main(void)
{
	bump();
	return add(1, 2) + sum(3, 4) + hook_me(5) + rare(6) + notrace_get() + counter;
}
