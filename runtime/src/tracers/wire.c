/*
 * What the tracers give the layers below them at start (lifetime.c calls
 * ftrt_tracers_wire before the program's load-time pass), so that
 * nothing below names a tracer: the entry points the ISA's site code
 * writes calls and jumps to that no module's targets hold, and the
 * tracers' own ops records (arch/site.h's ftrt_arch_entries); and the
 * buffer code's two calls into the tracers' state (record/tracer.h's
 * ftrt_record_up): taking a thread's buffer, and a thread's open calls
 * recorded as left when it exits.
 */
#include <stdint.h>

#include "arch/site.h"
#include "fgraph.h"
#include "graph.h"
#include "record/encode.h"
#include "take.h"
#include "tracers.h"

/* take.h's take, for the buffer code (end.c, before an exec). */
static int take_buffer(struct tbuf *b, uintptr_t ref)
{
	return take(b, ref);
}

/* Every graphed call open on the stack sp is on, recorded as left at ts
 * (thread.c, at a thread's exit: pthread_exit and cancellation leave
 * them). */
static void left_all(struct tbuf *b, uintptr_t sp, uint64_t ts)
{
	struct shadow_stack *s = ftrt_stack_at(b, sp, ts, 1);
	while (s->depth > 0)
		pop_left(b, s, ts, 1);
}

void ftrt_tracers_wire(void)
{
	struct ftrt_arch_entries *e = &ftrt_arch_entries;
#if defined(__x86_64__)
	ftrt_arch_vec_init();
	e->graph_enter = (uintptr_t)ftrace_graph_enter;
	e->graph_leave = (uintptr_t)ftrace_graph_leave;
	e->prologue_graph_enter = (uintptr_t)ftrace_prologue_graph_enter;
	e->prologue_graph_leave = (uintptr_t)ftrace_prologue_graph_leave;
	e->libgraph_enter = (uintptr_t)ftrace_libgraph_enter;
	e->ops_caller = (uintptr_t)ftrace_ops_caller;
	e->ops_mcount_caller = (uintptr_t)ftrace_ops_mcount_caller;
	e->ops_chain_caller = (uintptr_t)ftrace_ops_chain_caller;
	e->ops_prologue_caller = (uintptr_t)ftrace_ops_prologue_caller;
#else
	e->prologue_caller = (uintptr_t)ftrace_prologue_caller;
	e->prologue_stub = (uintptr_t)ftrace_prologue_stub;
	e->ops_regs_caller = (uintptr_t)ftrace_ops_regs_caller;
	e->ops_regs_mcount_caller = (uintptr_t)ftrace_ops_regs_mcount_caller;
	e->ops_prologue_caller = (uintptr_t)ftrace_ops_prologue_caller;
	e->tracer_ops[0] = &ftrt_ops_nop;
	e->tracer_ops[FTRT_FUNCTION] = &ftrt_ops_function;
	e->tracer_ops[FTRT_GRAPH] = &ftrt_ops_graph;
#endif
	static const struct ftrt_record_calls record = { .take = take_buffer, .left_all = left_all };
	ftrt_record_up = record;
}
