/* The end-to-end test program: calls across translation units, static,
 * weak and strong functions, varargs, recursion, floats, a struct return.
 * Prints what it computed so a traced build can be compared with an
 * untraced one. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct pair { long a, b; };

int weak_or_strong(int x);               /* weak here, strong in other.c */
int helper(int x);                       /* other.c */
double scale(double x, float f);         /* other.c */
struct pair make_pair(long a, long b);   /* other.c */

__attribute__((weak, noinline)) int weak_or_strong(int x) { return -x; }

static __attribute__((noinline)) int local_twice(int x) { return 2 * x; }

__attribute__((noinline)) int sum(int n, ...)
{
	va_list ap;
	int s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(int argc, char **argv)
{
	(void)argv;
	struct pair p = make_pair(argc, 40);
	printf("weak_or_strong %d\n", weak_or_strong(5));
	printf("local_twice %d\n", local_twice(21));
	printf("helper %d\n", helper(7));
	printf("sum %d\n", sum(4, 1, 2, 3, 4));
	printf("fib %ld\n", fib(20));
	printf("scale %.3f\n", scale(1.5, 2.0f));
	printf("pair %ld %ld\n", p.a, p.b);
	return (int)(fib(10) % 7); /* a non-zero exit status: 55 % 7 = 6 */
}
