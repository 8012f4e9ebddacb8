/*
 * The program whose traces seed the trace reader's fuzz target
 * (FuzzRead): a few nested calls, a recursion, a longjmp out of graphed
 * calls (an Unwound record) and a second thread, so the streams hold
 * every kind of record. Rebuild the traces with `make -C trace/testdata`.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>

static jmp_buf back;

__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) int depth(int n) { return n == 0 ? leaf(n) : depth(n - 1) + 1; }

__attribute__((noinline)) void jumper(int x)
{
	if (leaf(x) > 0)
		longjmp(back, 1);
}

__attribute__((noinline)) void *worker(void *arg)
{
	(void)arg;
	return (void *)(long)leaf(2);
}

int main(void)
{
	pthread_t th;
	void *r;
	int sum = depth(3) + leaf(1);
	if (!setjmp(back))
		jumper(4);
	if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, &r))
		return 1;
	printf("%d %ld\n", sum, (long)r);
	return 0;
}
