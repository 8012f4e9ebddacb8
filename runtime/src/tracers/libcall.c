/*
 * A library call's C entry (patch/libcall.c redirects the slots; the
 * ISA's ftrace_libcall, tracers/<isa>/libcall.S, calls this): the call
 * recorded under its slot's address, as a site's call is under the
 * site's (function.c's entry: a record, or function_graph's push and
 * return hook), and the function it goes on to.
 *
 * Hot path: no lock, no allocation, no libc call. A call the runtime
 * itself makes through the program's slots (its start-up and end, its
 * own threads, making a thread's buffer: ftrt_thread_busy; from inside
 * the tracer) is not the program's, and goes straight on: so does one
 * a signal handler makes while the tracer runs on its thread, which a
 * site's call would count as dropped.
 */
#include <stdint.h>

#include "core/ftrt.h"
#include "entry.h"
#include "patch/libcall.h"
#include "record/tracer.h"

uintptr_t ftrt_libcall_entry(uint32_t idx, uintptr_t *parent_slot, uintptr_t sp)
{
	const struct ftrt_libslot *s = ftrt_libslot(idx);
	/* The tracer itself running on this thread (ftrt_tb busy): a call
	 * of the runtime's own, as are those of its start, end and threads;
	 * a function in a module with sites records its own calls. */
	struct tbuf *b = ftrt_tb;
	unsigned flags = ftrt_libslot_flags(s);
	if (ftrt_thread_busy || ftrt_in_runtime || (b && b->busy) || (flags & LIBSLOT_SKIP))
		return s->target;
	if (flags & LIBSLOT_PLAIN)
		ftrt_entry_plain(ftrt_libslot_ip(s), parent_slot, sp);
	else
		ftrt_entry_sp(ftrt_libslot_ip(s), parent_slot, sp);
	return s->target;
}
