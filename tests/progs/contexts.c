/*
 * Coroutines made with makecontext and switched with swapcontext, each
 * yielding from inside nested traced calls: the scheduler in main runs
 * three workers round-robin until they are done (a worker's function
 * returns, and uc_link brings it back to the scheduler); two of them hand
 * over to each other directly (ping-pong) before yielding; one worker is
 * made again on the stack of a finished one; then a context whose
 * function takes eight arguments runs. Prints what the workers computed;
 * exits with status 6.
 *
 * stderr, for a test: the calls the program made of each function,
 *
 *   made main 1 schedule 1 worker N step N inner N leaf N pong N sum8 1
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))
#define WORKERS 3
#define STEPS 4
#define STACK (64 * 1024)

static ucontext_t sched, ctx[WORKERS];
static int done[WORKERS];
static long total;
static long n_worker, n_step, n_inner, n_leaf, n_pong;

NOINLINE long leaf(long x)
{
	n_leaf++;
	return x * 2 + 1;
}

/* Yields to the scheduler from two traced calls deep. */
NOINLINE long inner(int w, long x)
{
	n_inner++;
	long r = leaf(x);
	swapcontext(&ctx[w], &sched);
	return r + leaf(x + 1);
}

/* Worker 0 hands over to worker 1 and back before it yields. */
NOINLINE void pong(int w)
{
	n_pong++;
	swapcontext(&ctx[w], &ctx[w ^ 1]);
}

NOINLINE long step(int w, int i)
{
	n_step++;
	long r = inner(w, i * 10 + w);
	if (w < 2 && i == 1 && !done[w ^ 1])
		pong(w);
	return r;
}

NOINLINE void worker(int w)
{
	n_worker++;
	long s = 0;
	for (int i = 0; i < STEPS; i++)
		s += step(w, i);
	printf("worker %d: %ld\n", w, s);
	total += s;
	done[w] = 1;
}

static void make(int w, void *stack)
{
	getcontext(&ctx[w]);
	ctx[w].uc_stack.ss_sp = stack;
	ctx[w].uc_stack.ss_size = STACK;
	ctx[w].uc_link = &sched;
	makecontext(&ctx[w], (void (*)(void))worker, 1, w);
}

NOINLINE void schedule(void)
{
	void *stacks[WORKERS];
	for (int w = 0; w < WORKERS; w++) {
		/* Worker 2's stack is mapped, the others' come from malloc. */
		stacks[w] = w == 2 ? mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
				   : malloc(STACK);
		make(w, stacks[w]);
	}
	int remade = 0;
	for (int left = WORKERS; left > 0;) {
		left = 0;
		for (int w = 0; w < WORKERS; w++) {
			if (done[w])
				continue;
			swapcontext(&sched, &ctx[w]);
			left += !done[w];
		}
		/* Worker 1 runs again, from the start, on its old stack. */
		if (done[1] && !remade) {
			remade = 1;
			done[1] = 0;
			make(1, stacks[1]);
			left++;
		}
	}
}

/* A context function of eight arguments: makecontext passes the last
 * two on the new stack, which its wrapper must leave as they were. */
NOINLINE void sum8(int a, int b, int c, int d, int e, int f, int g, int h)
{
	printf("sum8 %d\n", a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h);
}

int main(void)
{
	schedule();
	static char stack[STACK];
	getcontext(&ctx[0]);
	ctx[0].uc_stack.ss_sp = stack;
	ctx[0].uc_stack.ss_size = sizeof stack;
	ctx[0].uc_link = &sched;
	makecontext(&ctx[0], (void (*)(void))sum8, 8, 1, 2, 3, 4, 5, 6, 7, 8);
	swapcontext(&sched, &ctx[0]);
	printf("total %ld\n", total);
	fprintf(stderr, "made main 1 schedule 1 worker %ld step %ld inner %ld leaf %ld pong %ld sum8 1\n", n_worker, n_step,
		n_inner, n_leaf, n_pong);
	return 6;
}
