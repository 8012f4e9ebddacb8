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
 *
 * The arguments and return value (FTRACE_ARGS, FTRACE_RETVAL) of a
 * slot whose function has an entry (its cold entry's capture flag, set
 * by capture.c, with LIBSLOT_GENERAL): the entry asks for them, and the assembly, having saved
 * the vector registers too, calls ftrt_libcall_capture, which hands
 * the call to the capture as an ops caller hands a site's (capture.c's
 * ftrt_capture_libcall). A slot without one costs one load and test.
 */
#include <stdint.h>

#include "arch/arch.h"
#include "core/ftrt.h"
#include "entry.h"
#include "fgraph.h"
#include "patch/libcall.h"
#include "record/tracer.h"

/* FTRACE_LIBCALL=nest: the stack pointer this thread's last dlopen,
 * dlmopen or dlclose returns with, until the loaded objects are scanned
 * again (0: none pending). */
static __thread uintptr_t loaded_sp __attribute__((tls_model("initial-exec")));

/*
 * A call of one of the loader's functions (patch/libslots.c's
 * ftrt_lib_loader_call). Objects a dlopen loads without sites are served, and
 * those a dlclose unloaded forgotten, by a scan of the loaded objects
 * once it has returned: at the thread's next call of the loader's
 * functions (a dlsym of the object's functions, most often) made from
 * where it was made or above (its stack pointer at return no lower, and
 * within a megabyte: a signal handler on an alternate stack does not
 * scan), never inside it (a constructor's call), where the loader's work
 * is half done. The scan takes locks and calls the C library, as the
 * program's own call of dlsym does here; it uses no argument register
 * the loader's functions take (integers and pointers alone).
 */
static void loader_call(const struct ftrt_libslot_cold *s, uintptr_t sp)
{
	uintptr_t p = loaded_sp;
	if (p && sp >= p && sp - p < (1u << 20)) {
		loaded_sp = 0;
		ftrt_in_runtime++;
		ftrt_libcalls_rescan();
		ftrt_in_runtime--;
	}
	if (s->loader == 1)
		loaded_sp = sp;
}

/* Where the call's return address is kept while the function runs, and
 * its stack pointer once it returns, in the frame ftrace_libcall saved
 * (x86-64: the return address is on the stack at fregs->sp; arm64:
 * x30, saved in fregs->lr, and sp as at the entry). */
static inline uintptr_t *return_slot(struct ftrace_regs *f, uintptr_t *sp)
{
#if defined(__aarch64__)
	*sp = f->sp;
	return (uintptr_t *)&f->lr;
#else
	*sp = f->sp + 8;
	return (uintptr_t *)f->sp;
#endif
}

struct ftrt_libcall_to ftrt_libcall_entry(uint32_t idx, struct ftrace_regs *fregs)
{
	const struct ftrt_libslot *s = ftrt_libslot(idx);
	struct ftrt_libcall_to to = { s->target, 0 };
	/* The tracer itself running on this thread (ftrt_tb busy): a call
	 * of the runtime's own, as are those of its start, end and threads;
	 * a function in a module with sites records its own calls. */
	struct tbuf *b = ftrt_tb;
	unsigned flags = ftrt_libslot_flags(s);
	if (ftrt_thread_busy || ftrt_in_runtime || (b && b->busy) || (flags & LIBSLOT_SKIP))
		return to;
	uintptr_t sp, *parent_slot = return_slot(fregs, &sp);
	/* A slot whose cold entry says more (LIBSLOT_GENERAL): the loader's
	 * functions, a capture. */
	const struct ftrt_libslot_cold *c = flags & LIBSLOT_GENERAL ? ftrt_libslot_cold(idx) : NULL;
	if (c && c->loader)
		loader_call(c, sp);
	if (flags & LIBSLOT_PLAIN)
		ftrt_entry_plain(ftrt_libslot_ip(s), parent_slot, sp);
	else
		ftrt_entry_sp(ftrt_libslot_ip(s), parent_slot, sp);
	if (c && __builtin_expect(__atomic_load_n(&c->capture, __ATOMIC_ACQUIRE), 0))
		to.slot = (uintptr_t)s;
	return to;
}

void ftrt_libcall_capture(struct ftrace_regs *fregs, const struct ftrt_libslot *s)
{
	ftrt_capture_libcall(s, fregs);
}
