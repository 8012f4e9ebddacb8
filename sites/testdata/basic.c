/*
 * basic.c: one of each kind of function a patch-site finder must handle.
 * No #include: the same source builds for every target without a sysroot.
 */

extern void abort(void) __attribute__((noreturn));

int counter;
const char *last_msg;

/* A static function kept out of line, so it has a local symbol. */
static __attribute__((noinline)) int scale(int x)
{
	return x * 3 + counter;
}

/* A global function. */
int global_add(int a, int b)
{
	return scale(a) + b;
}

/* A second name for global_add: one function, one site. */
extern int alias_add(int a, int b) __attribute__((alias("global_add")));

/* A weak function: a strong definition elsewhere may replace it. */
__attribute__((weak)) int weak_hook(int x)
{
	return x + counter;
}

/* Varargs: the prologue saves the argument registers. */
int sum(int n, ...)
{
	__builtin_va_list ap;
	int s = 0;

	__builtin_va_start(ap, n);
	while (n-- > 0)
		s += __builtin_va_arg(ap, int);
	__builtin_va_end(ap);
	return s;
}

/* A function that never returns. */
__attribute__((noreturn)) void die(const char *msg)
{
	last_msg = msg;
	abort();
}

/* Recursive, and not a tail call, so it stays recursive at -O2. */
int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/*
 * An inline function used two ways: called (inlined at -O2) and with its
 * address taken (so an out-of-line copy is emitted too).
 */
static inline int square(int x)
{
	return x * x;
}

int (*square_ptr)(int) = square;

int use_square(int x)
{
	if (x < 0)
		die("negative");
	return square(x) + weak_hook(x);
}

/*
 * Not traced: the kernel's notrace. Each compiler and mode has its own
 * attribute; a site finder must not invent a site here.
 */
__attribute__((no_instrument_function, patchable_function_entry(0, 0)))
int notrace_get(void)
{
	return counter;
}
