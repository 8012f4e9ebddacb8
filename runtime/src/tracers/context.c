/*
 * Contexts: function_graph through coroutines made by makecontext.
 *
 * A context made by makecontext runs on a stack the program gave it, and
 * swapcontext moves a thread between contexts in any order: a coroutine
 * yields from inside nested calls and is resumed later, after other
 * coroutines' calls have come and gone. One shadow stack per thread
 * would mix their calls and pop one coroutine's calls at another's
 * returns. So each context gets a shadow stack of its own, found from
 * the stack pointer of the code that runs (graph.h, shadow.c's ftrt_stack_at).
 *
 * The program's calls of makecontext are wrapped (--wrap=makecontext, as
 * the exec functions are: see exec.c): the wrapper, in assembly
 * (arch/x86_64/entry.S) so that the arguments for the context's function,
 * however many, reach the C library's makecontext as they were given,
 * calls ftrt_context_made with the context first. Not seen: a shared
 * object's calls of makecontext, and stack switching by other means
 * (libraries with switch code of their own); calls on such stacks are
 * graphed as the thread's own and may be popped at the wrong returns.
 *
 * The table of contexts is appended to under a lock by makecontext's
 * callers and read without one by the tracer (ftrt_context_at, in a
 * signal handler too): a record is filled before it is published (the
 * count's release store), and its stack's extent never changes after.
 * A context made again on a stack already in the table reuses its record
 * (a new id, an empty shadow stack); one made on a stack that overlaps
 * another's retires that one. Records are never unmapped: a thread may
 * still be reading one. When the table is full, the next context cannot
 * be known by its stack: from then on no call is graphed in the process,
 * each is recorded as a call (ftrt_graph_ungraphed, counted in the
 * metadata as contexts_lost).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "core/ftrt.h"
#include "graph.h"
#include "record/tracer.h"

#define CTX_MAX 4096 /* contexts whose stacks are known at once */

static struct ftrt_ctx *ctxs[CTX_MAX];
static _Atomic unsigned count; /* ctxs[0, count) are published */
static atomic_flag lock = ATOMIC_FLAG_INIT;


/*
 * The context ucp, just given its stack and function: make its stack
 * known. Called by the makecontext wrapper before the C library's
 * makecontext (arch/x86_64/entry.S). makecontext is not async-signal-safe, so
 * neither is this: it takes a lock and maps memory.
 */
static void made(const ucontext_t *ucp);

#ifdef FTRT_PRELOAD
/* The C library's makecontext, which the preloaded runtime's
 * __real_makecontext branches to (ISA/makecontext.S). */
void *ftrt_next_makecontext __attribute__((visibility("hidden")));
#endif

void ftrt_context_made(const void *uc)
{
	ftrt_in_runtime++; /* its mmap and sched_yield are the runtime's, not library calls of the program's */
#ifdef FTRT_PRELOAD
	static void *cache;
	ftrt_next_makecontext = ftrt_next("makecontext", &cache);
#endif
	made(uc);
	ftrt_in_runtime--;
}

static void made(const ucontext_t *ucp)
{
	uintptr_t lo = (uintptr_t)ucp->uc_stack.ss_sp, hi = lo + ucp->uc_stack.ss_size;
	if (ucp->uc_stack.ss_size == 0 || hi < lo)
		return; /* makecontext will not run it either */
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		sched_yield();
	uint64_t id = atomic_fetch_add_explicit(&ftrt_ctx_made, 1, memory_order_relaxed) + 1;
	unsigned n = atomic_load_explicit(&count, memory_order_relaxed);
	struct ftrt_ctx *same = NULL;
	for (unsigned i = 0; i < n; i++) {
		struct ftrt_ctx *c = ctxs[i];
		if (!atomic_load_explicit(&c->live, memory_order_relaxed))
			continue;
		if (c->lo == lo && c->hi == hi)
			same = c;
		else if (c->lo < hi && lo < c->hi)
			atomic_store_explicit(&c->live, 0, memory_order_relaxed); /* its stack is this one's now */
	}
	if (same) {
		/* The coroutine that ran here is gone: its calls never returned. */
		same->stack.depth = 0;
		same->stack.stopped = 0;
		same->stack.chosen = 0;
		same->stack.notrace = 0;
		atomic_store_explicit(&same->id, id, memory_order_relaxed);
	} else {
		struct ftrt_ctx *c = MAP_FAILED;
		if (n < CTX_MAX)
			c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c != MAP_FAILED) {
			c->lo = lo;
			c->hi = hi;
			atomic_store_explicit(&c->id, id, memory_order_relaxed);
			atomic_store_explicit(&c->live, 1, memory_order_relaxed);
			ctxs[n] = c;
			atomic_store_explicit(&count, n + 1, memory_order_release);
		} else {
			atomic_fetch_add_explicit(&ftrt_ctx_lost, 1, memory_order_relaxed);
			ftrt_graph_ungraphed();
		}
	}
	atomic_fetch_add_explicit(&ftrt_ctx_gen, 1, memory_order_release);
	atomic_flag_clear_explicit(&lock, memory_order_release);
	ftrt_graph_contexts();
}

struct ftrt_ctx *ftrt_context_at(uintptr_t sp, uintptr_t *lo, uintptr_t *hi)
{
	unsigned n = atomic_load_explicit(&count, memory_order_acquire);
	uintptr_t l = 0, h = UINTPTR_MAX;
	/* Newest first: where a retired record and its successor both hold
	 * sp (a reader may see the retirement late), the successor wins. */
	for (unsigned i = n; i-- > 0;) {
		struct ftrt_ctx *c = ctxs[i];
		if (!atomic_load_explicit(&c->live, memory_order_relaxed))
			continue;
		if (c->lo < sp && sp <= c->hi) {
			*lo = c->lo;
			*hi = c->hi;
			return c;
		}
		if (c->hi < sp && c->hi > l)
			l = c->hi;
		else if (c->lo >= sp && c->lo < h)
			h = c->lo;
	}
	*lo = l;
	*hi = h;
	return NULL;
}
