/*
 * The function tracer: one record per call of an enabled function; and
 * the C entry of the call-site trampolines (ftrace_caller5/6 and the
 * mcount ones: x86_64/entry.S), which at function_graph pushes the call
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

#include "tracer.h"
#include "take.h"

void return_to_handler(void);

/*
 * The hot path of the call-site trampolines (ftrace_caller5/6 and the
 * mcount ones), with the site's address and where the function's return
 * address (the parent ip) is on the stack. function: one record.
 * function_graph: push the call and hijack its return through
 * return_to_handler.
 */
static inline __attribute__((always_inline)) void entry(uintptr_t ip, uintptr_t *parent_slot, int graph)
{
	struct tbuf *b = enter((uintptr_t)(parent_slot + 1));
	if (!b)
		return;
	if (!graph) {
		record_call(b, now(), ip, *parent_slot);
	} else if (ftrt_graph_push(b, ip, (uintptr_t)(parent_slot + 1), *parent_slot, (uintptr_t)return_to_handler)) {
		*parent_slot = (uintptr_t)return_to_handler;
	}
	unbusy(b, 0);
}

void ftrt_entry(uintptr_t ip, uintptr_t *parent_slot)
{
	entry(ip, parent_slot, ftrt_mode == FTRT_GRAPH);
}

/*
 * The tracers' ops records: a site with a pre-function literal calls its
 * function's record's handler (arm64's ftrace_ops_caller), which is
 * ftrt_entry for one tracer, without asking which tracer runs.
 */
static void ops_function(uintptr_t ip, uintptr_t *parent_slot, const struct ftrt_ops *ops)
{
	(void)ops;
	entry(ip, parent_slot, 0);
}

static void ops_graph(uintptr_t ip, uintptr_t *parent_slot, const struct ftrt_ops *ops)
{
	(void)ops;
	entry(ip, parent_slot, 1);
}

static void ops_nop(uintptr_t ip, uintptr_t *parent_slot, const struct ftrt_ops *ops)
{
	(void)ip, (void)parent_slot, (void)ops;
}

const struct ftrt_ops ftrt_ops_nop = { .func = ops_nop };
const struct ftrt_ops ftrt_ops_function = { .func = ops_function };
const struct ftrt_ops ftrt_ops_graph = { .func = ops_graph };
