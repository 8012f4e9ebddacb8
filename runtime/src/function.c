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
void ftrt_entry(uintptr_t ip, uintptr_t *parent_slot)
{
	struct tbuf *b = enter((uintptr_t)(parent_slot + 1));
	if (!b)
		return;
	if (ftrt_mode != FTRT_GRAPH) {
		record_call(b, now(), ip, *parent_slot);
	} else if (ftrt_graph_push(b, ip, (uintptr_t)(parent_slot + 1), *parent_slot, (uintptr_t)return_to_handler)) {
		*parent_slot = (uintptr_t)return_to_handler;
	}
	unbusy(b, 0);
}
