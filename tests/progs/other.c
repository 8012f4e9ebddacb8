/* The second translation unit of the end-to-end test program. */
struct pair { long a, b; };

/* The strong definition: the linker drops main.c's weak one, whose site
 * then lies in dead bytes the linked table must not list. */
__attribute__((noinline)) int weak_or_strong(int x) { return x * 100; }

__attribute__((noinline)) int helper(int x) { return weak_or_strong(x) + 1; }

__attribute__((noinline)) double scale(double x, float f) { return x * f; }

__attribute__((noinline)) struct pair make_pair(long a, long b)
{
	struct pair p = { a, b };
	return p;
}
