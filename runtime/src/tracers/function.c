/*
 * The function tracer: one record per call of an enabled function; and
 * the C entry of the call-site trampolines (ftrace_caller5/6 and the
 * mcount ones: arch/x86_64/entry.S), which at function_graph pushes the call
 * (graph.c). Calls graph.c and what tracer.h inlines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "record/tracer.h"
#include "take.h"

void return_to_handler(void);

/*
 * The hot path of the call-site trampolines (x86-64's ftrace_caller5/6
 * and the mcount ones, arm64's ftrace_caller and the ops records), with
 * the site (ip), where the function's return address (the parent ip) is
 * (parent_slot), and the stack pointer at the site (sp). function: one
 * record. function_graph: push the call and hijack its return through
 * return_to_handler. graph: 1 function_graph, 0 function, BY_MODE the
 * tracer running (ftrt_mode, read only once the call is to be recorded),
 * PLAIN function_graph's record of a call whose return is not hooked
 * (ftrt_graph_call: on the shadow stack of the context it runs on, as
 * the subtree filters say).
 */
enum { BY_MODE = -1, PLAIN = 2 };
static inline __attribute__((always_inline)) void entry(uintptr_t ip, uintptr_t *parent_slot, uintptr_t sp, int graph)
{
	if (paused())
		return;
	struct tbuf *b = enter(sp);
	if (!b)
		return;
	if (graph == BY_MODE) {
		int mode = __atomic_load_n(&ftrt_mode, __ATOMIC_RELAXED);
		if (mode != FTRT_FUNCTION && mode != FTRT_GRAPH) {
			unbusy(b, 0); /* nop: a site enabled live calls the caller, which serves every tracer */
			return;
		}
		graph = mode == FTRT_GRAPH;
	}
	if (graph == PLAIN) {
		ftrt_graph_call(b, ip, sp, *parent_slot);
	} else if (!graph) {
		record_call(b, now(), ip, *parent_slot);
	} else if (ftrt_graph_push(b, ip, sp, *parent_slot, (uintptr_t)return_to_handler)) {
		*parent_slot = (uintptr_t)return_to_handler;
	}
	unbusy(b, 0);
}

/* x86-64: the slot is the return address on the stack, just below the
 * stack pointer the function returns with. */
void ftrt_entry(uintptr_t ip, uintptr_t *parent_slot)
{
	entry(ip, parent_slot, (uintptr_t)(parent_slot + 1), BY_MODE);
}

void ftrt_entry_sp(uintptr_t ip, uintptr_t *parent_slot, uintptr_t sp)
{
	entry(ip, parent_slot, sp, BY_MODE);
}

void ftrt_entry_plain(uintptr_t ip, uintptr_t *parent_slot, uintptr_t sp)
{
	int mode = __atomic_load_n(&ftrt_mode, __ATOMIC_RELAXED);
	/* A plain call, whatever the tracer: its return is not hooked. */
	if (mode == FTRT_FUNCTION)
		entry(ip, parent_slot, sp, 0);
	else if (mode == FTRT_GRAPH)
		entry(ip, parent_slot, sp, PLAIN);
}

#if FTRT_ARCH_FREGS
/* entry for a struct ftrace_regs: the return address is its lr. */
static inline __attribute__((always_inline)) void regs_entry(uintptr_t ip, struct ftrace_regs *fregs, int graph)
{
	entry(ip, (uintptr_t *)&fregs->lr, (uintptr_t)fregs->sp, graph);
}

void ftrt_entry_regs(uintptr_t ip, struct ftrace_regs *fregs)
{
	regs_entry(ip, fregs, BY_MODE);
}

/*
 * The tracers' ops records: a site with a pre-function literal calls its
 * function's record's handler (arm64's ftrace_ops_caller), which is
 * ftrt_entry_regs for one tracer, without asking which tracer runs.
 */
static void ops_function(uintptr_t ip, uintptr_t parent_ip, const struct ftrt_ops *ops, struct ftrace_regs *fregs)
{
	(void)parent_ip, (void)ops;
	regs_entry(ip, fregs, 0);
}

static void ops_graph(uintptr_t ip, uintptr_t parent_ip, const struct ftrt_ops *ops, struct ftrace_regs *fregs)
{
	(void)parent_ip, (void)ops;
	regs_entry(ip, fregs, 1);
}

static void ops_nop(uintptr_t ip, uintptr_t parent_ip, const struct ftrt_ops *ops, struct ftrace_regs *fregs)
{
	(void)ip, (void)parent_ip, (void)ops, (void)fregs;
}

const struct ftrt_ops ftrt_ops_nop = { .func = ops_nop };
const struct ftrt_ops ftrt_ops_function = { .func = ops_function };
const struct ftrt_ops ftrt_ops_graph = { .func = ops_graph };
#endif
