/*
 * ftrace.h's graph users (fgraph), as the kernel's self-tests try them;
 * each step prints what the callbacks saw, the same in every run and
 * mode (FTRACE unset, function, function_graph):
 *
 *   filters  two users with filters of their own: each sees the entries
 *            and returns of its functions alone, with their return values
 *   data     1, 2, 4, 8 and 256 bytes reserved at each entry and found
 *            whole at the return, through recursion, with one user and
 *            with four
 *   values   floating-point and long double results kept whatever a
 *            retfunc computes
 *   longjmp  calls left by a longjmp run no retfunc, and the calls after
 *            go on
 *   unregister  a user unregistered while its call is under way, and
 *            freed: the call returns, no callback runs again
 *   fprobe   entry and exit handlers: arguments (an integer, a string,
 *            a double) carried in the entry's data to the exit, with the
 *            return value and the caller's return address; an entry
 *            handler that skips the exit; unregistered; too much data
 *   stress   eight threads, and signal handlers on them, call a user's
 *            functions while it is registered and unregistered (and
 *            freed) ROUNDS times: every result right, every call's data
 *            its own, no callback after unregister returns
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ftrace.h>

#include "attrs.h"


static volatile long zero;

NOINLINE long g_a1(long x) { return x + 1 + zero; }
NOINLINE long g_a2(long x) { return g_a1(x) * 2 + zero; }
NOINLINE long g_b1(long x) { return x - 1 + zero; }
NOINLINE long g_both(long x) { return g_a2(x) + g_b1(x) + zero; }
NOINLINE long g_rec(long n) { return n <= 0 ? 0 : n + g_rec(n - 1) + zero; }
NOINLINE double g_fp(double x) { return x * 1.5 + (double)zero; }
NOINLINE long double g_ld(long double x) { return x * 2.25L + (long double)zero; }

static void fail(const char *what)
{
	fprintf(stderr, "fgraph: %s: %s\n", what, ftrace_error());
	exit(2);
}

/* ---- filters ---- */

struct seen {
	int entries, returns;
	long retsum;
};
static struct seen seen_a, seen_b;

static int ent_count(struct ftrace_graph_ent *e, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)e, (void)fregs;
	((struct seen *)g->private)->entries++;
	unsigned long *var = fgraph_get_task_var(g);
	if (var)
		*var += 10; /* the thread's own word for this user */
	return 1;
}

static void ret_count(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	struct seen *s = g->private;
	s->returns++;
	s->retsum += (long)r->retval;
	if (r->retval != ftrace_regs_get_return_value(fregs))
		printf("retval %lu, regs say %lu\n", r->retval, ftrace_regs_get_return_value(fregs));
}

static void filters(void)
{
	struct fgraph_ops ga = { .entryfunc = ent_count, .retfunc = ret_count, .private = &seen_a };
	struct fgraph_ops gb = { .entryfunc = ent_count, .retfunc = ret_count, .private = &seen_b };
	if (ftrace_set_filter(&ga.ops, "g_a*", 1) < 0 || ftrace_set_filter(&gb.ops, "g_b*,g_both", 1) < 0)
		fail("set_filter");
	if (register_fgraph(&ga) || register_fgraph(&gb))
		fail("register_fgraph");
	long r = g_both(10);
	printf("filters: g_both(10) = %ld; a: %d entries %d returns sum %ld; b: %d entries %d returns sum %ld\n", r,
	       seen_a.entries, seen_a.returns, seen_a.retsum, seen_b.entries, seen_b.returns, seen_b.retsum);
	unsigned long *va = fgraph_get_task_var(&ga), *vb = fgraph_get_task_var(&gb);
	printf("filters: task variables a=%lu b=%lu\n", va ? *va : 0, vb ? *vb : 0);
	if (unregister_fgraph(&ga) || unregister_fgraph(&gb))
		fail("unregister_fgraph");
	seen_a = seen_b = (struct seen){ 0 };
	g_both(10);
	printf("filters: unregistered: a %d b %d\n", seen_a.entries + seen_a.returns, seen_b.entries + seen_b.returns);
}

/* ---- data ---- */

static const int sizes[] = { 1, 2, 4, 8, 256 };
static long data_ok, data_bad, data_calls;

static unsigned char pattern(unsigned long func, int depth, int idx, int k)
{
	return (unsigned char)(func * 31 + (unsigned)depth * 7 + (unsigned)idx * 13 + (unsigned)k);
}

/* Each call's size by its depth, turned by the user's idx. */
static int size_of(int depth, int idx)
{
	return sizes[(depth + idx) % 5];
}

static int ent_data(struct ftrace_graph_ent *e, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)fregs;
	int size = size_of(e->depth, g->idx);
	unsigned char *p = fgraph_reserve_data(g->idx, size);
	if (!p)
		return 0;
	for (int k = 0; k < size; k++)
		p[k] = pattern(e->func, e->depth, g->idx, k);
	return 1;
}

static void ret_data(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)fregs;
	int size = 0;
	unsigned char *p = fgraph_retrieve_data(g->idx, &size);
	data_calls++;
	if (!p || size != size_of(r->depth, g->idx)) {
		data_bad++;
		return;
	}
	for (int k = 0; k < size; k++)
		if (p[k] != pattern(r->func, r->depth, g->idx, k)) {
			data_bad++;
			return;
		}
	data_ok++;
}

static void data(int users)
{
	struct fgraph_ops g[4];
	memset(g, 0, sizeof g);
	for (int i = 0; i < users; i++) {
		g[i].entryfunc = ent_data;
		g[i].retfunc = ret_data;
		if (ftrace_set_filter(&g[i].ops, "g_rec", 1) < 0 || register_fgraph(&g[i]))
			fail("register data");
	}
	data_ok = data_bad = data_calls = 0;
	long r = g_rec(20);
	printf("data, %d user%s: g_rec(20) = %ld; %ld returns, %ld whole, %ld not\n", users, users > 1 ? "s" : "", r, data_calls,
	       data_ok, data_bad);
	for (int i = 0; i < users; i++)
		if (unregister_fgraph(&g[i]))
			fail("unregister data");
}

/* ---- values ---- */

static volatile double noise;

static void ret_noise(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)r, (void)g, (void)fregs;
	noise = noise * 3.25 + 1.5; /* in the registers that hold a double result */
	long double l = (long double)noise * 7.5L;
	noise += (double)l;
}

static void values(void)
{
	struct fgraph_ops g = { .retfunc = ret_noise };
	if (ftrace_set_filter(&g.ops, "g_fp,g_ld", 1) < 0 || register_fgraph(&g))
		fail("register values");
	double d = g_fp(4.0);
	long double l = g_ld(4.0L);
	printf("values: g_fp(4) = %g, g_ld(4) = %Lg\n", d, l);
	unregister_fgraph(&g);
}

/* ---- longjmp ---- */

static jmp_buf env;
static int lj_returns;

NOINLINE void g_jump(int n)
{
	if (n == 0)
		longjmp(env, 1);
	g_jump(n - 1);
	zero += 0;
}

static void ret_lj(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)r, (void)g, (void)fregs;
	lj_returns++;
}

static void jumps(void)
{
	struct fgraph_ops g = { .retfunc = ret_lj };
	if (ftrace_set_filter(&g.ops, "g_jump,g_a1", 1) < 0 || register_fgraph(&g))
		fail("register longjmp");
	if (setjmp(env) == 0)
		g_jump(5);
	int left = lj_returns;
	long r = g_a1(1);
	printf("longjmp: %d returns of the calls left, then g_a1(1) = %ld and %d return\n", left, r, lj_returns - left);
	unregister_fgraph(&g);
}

/* ---- unregister under way ---- */

static volatile int in_slow, go_on;
static int slow_entries, slow_returns;

NOINLINE long g_slow(long x)
{
	in_slow = 1;
	while (!go_on)
		;
	return x * 5 + zero;
}

static int ent_slow(struct ftrace_graph_ent *e, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)e, (void)g, (void)fregs;
	slow_entries++;
	return 1;
}

static void ret_slow(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)r, (void)g, (void)fregs;
	slow_returns++;
}

static long slow_result;

static void *slow_thread(void *arg)
{
	(void)arg;
	slow_result = g_slow(7);
	return NULL;
}

static void unregister_under_way(void)
{
	struct fgraph_ops *g = calloc(1, sizeof *g);
	g->entryfunc = ent_slow;
	g->retfunc = ret_slow;
	if (ftrace_set_filter(&g->ops, "g_slow", 1) < 0 || register_fgraph(g))
		fail("register slow");
	pthread_t t;
	pthread_create(&t, NULL, slow_thread, NULL);
	while (!in_slow)
		;
	if (unregister_fgraph(g))
		fail("unregister slow");
	memset(g, 0xa5, sizeof *g);
	free(g);
	go_on = 1;
	pthread_join(t, NULL);
	printf("unregister under way: g_slow(7) = %ld, %d entry, %d returns\n", slow_result, slow_entries, slow_returns);
}

/* ---- fprobe ---- */

/* The first argument unused: at an arm64 -pg site gcc's mov x0, x30 has
 * taken its register. */
NOINLINE long g_args(long unused, long n, const char *s, double d) { return unused + n + (long)strlen(s) + (long)d + zero; }
NOINLINE long g_skip(long unused, long n) { return unused + n * 2 + zero; }

struct probe_data {
	long n;
	char s[16];
	double d;
};
static char probe_out[256];
static int probe_exits, probe_ret_ip_ok;

static int probe_entry(struct fprobe *fp, unsigned long ip, unsigned long ret_ip, struct ftrace_regs *fregs, void *data)
{
	(void)fp, (void)ip, (void)ret_ip;
	struct probe_data *pd = data;
	memset(pd, 0, sizeof *pd);
	pd->n = (long)ftrace_regs_get_argument(fregs, 1);
	if (pd->n == 3) { /* g_args's call (g_skip's are 99 and 1) */
		strncpy(pd->s, (const char *)ftrace_regs_get_argument(fregs, 2), sizeof pd->s - 1);
		pd->d = ftrace_regs_get_fp_argument(fregs, 0);
	}
	return pd->n == 99; /* g_skip(99): no exit */
}

NOINLINE long call_probe(void);

static void probe_exit(struct fprobe *fp, unsigned long ip, unsigned long ret_ip, struct ftrace_regs *fregs, void *data)
{
	(void)fp, (void)ip;
	const struct probe_data *pd = data;
	probe_exits++;
	probe_ret_ip_ok += ret_ip > (unsigned long)call_probe && ret_ip < (unsigned long)call_probe + 512;
	if (pd->s[0])
		snprintf(probe_out, sizeof probe_out, "g_args(%ld, \"%s\", %g) = %ld", pd->n, pd->s, pd->d,
			 (long)ftrace_regs_get_return_value(fregs));
}

NOINLINE long call_probe(void)
{
	long r = g_args(0, 3, "abc", 2.5);
	r += g_skip(0, 99) + zero;
	r += g_skip(0, 1) + zero;
	return r;
}

static void probes(void)
{
	struct fprobe fp = { .entry_handler = probe_entry, .exit_handler = probe_exit, .entry_data_size = sizeof(struct probe_data) };
	if (register_fprobe(&fp, "g_args,g_skip", NULL))
		fail("register_fprobe");
	long r = call_probe();
	printf("fprobe: %s; %ld in all, %d exits, %d ret_ip in the caller, %lu missed\n", probe_out, r, probe_exits,
	       probe_ret_ip_ok, fp.nmissed);
	if (unregister_fprobe(&fp))
		fail("unregister_fprobe");
	probe_exits = 0;
	call_probe();
	printf("fprobe: unregistered: %d exits\n", probe_exits);
	struct fprobe bad = { .entry_handler = probe_entry, .entry_data_size = FPROBE_DATA_MAX + 1 };
	printf("fprobe: too much data: %s\n", register_fprobe(&bad, "g_args", NULL) ? "refused" : "taken");
}

/* ---- registered and unregistered while threads call ---- */

#define THREADS 8
#define ROUNDS 200
NOINLINE long g_hot(long x) { return g_a1(x) + 1 + zero; }

static volatile int gone, stop;
static long late, bad_sums;
static long hot_rets, handled, budget; /* changed with __atomic builtins */
/* Calls a round, all told: enough to meet every change, few enough that
 * a trace of them stays small. */
#define BUDGET (THREADS * 1000)

static int ent_hot(struct ftrace_graph_ent *e, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)e, (void)fregs;
	if (gone)
		__atomic_fetch_add(&late, 1, __ATOMIC_RELAXED);
	long *d = fgraph_reserve_data(g->idx, 8);
	if (d)
		*d = (long)e->func;
	return 1;
}

static void ret_hot(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	(void)fregs;
	if (gone)
		__atomic_fetch_add(&late, 1, __ATOMIC_RELAXED);
	long *d = fgraph_retrieve_data(g->idx, NULL);
	if (!d || *d != (long)r->func)
		__atomic_fetch_add(&bad_sums, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&hot_rets, 1, __ATOMIC_RELAXED);
}

static void on_usr1(int sig)
{
	(void)sig;
	if (g_hot(3) != 5)
		__atomic_fetch_add(&bad_sums, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
}

static void *hot(void *arg)
{
	long i = (long)arg;
	while (!stop) {
		if (__atomic_fetch_sub(&budget, 1, __ATOMIC_RELAXED) <= 0) {
			sched_yield();
			continue;
		}
		if (g_hot(i) != i + 2)
			__atomic_fetch_add(&bad_sums, 1, __ATOMIC_RELAXED);
		i = (i + 1) & 1023;
	}
	return NULL;
}

static void stress(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t th[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, hot, (void *)i);
	long rets = 0;
	for (int r = 0; r < ROUNDS; r++) {
		struct fgraph_ops *g = calloc(1, sizeof *g);
		g->entryfunc = ent_hot;
		g->retfunc = ret_hot;
		gone = 0;
		if (ftrace_set_filter(&g->ops, "g_hot,g_a1", 1) < 0 || register_fgraph(g))
			fail("register stress");
		__atomic_store_n(&budget, BUDGET, __ATOMIC_RELAXED);
		pthread_kill(th[r % THREADS], SIGUSR1);
		while (__atomic_load_n(&hot_rets, __ATOMIC_RELAXED) < 10 && __atomic_load_n(&budget, __ATOMIC_RELAXED) > 0)
			;
		if (unregister_fgraph(g))
			fail("unregister stress");
		gone = 1;
		memset(g, 0xa5, sizeof *g);
		free(g);
		rets += __atomic_exchange_n(&hot_rets, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&budget, 0, __ATOMIC_RELAXED);
	}
	stop = 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	printf("stress: %d rounds, returns %s, handlers %s, callbacks after unregister %ld, wrong results or data %ld\n", ROUNDS,
	       rets >= 10L * ROUNDS ? "yes" : "no", handled ? "ran" : "never ran", late, bad_sums);
}

int main(void)
{
	filters();
	data(1);
	data(4);
	values();
	jumps();
	unregister_under_way();
	probes();
	stress();
	return 0;
}
