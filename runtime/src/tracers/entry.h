/*
 * The tracers' entry points: what the entry assembly (tracers/<isa>/)
 * calls at a traced call and its return, what the unwinder's hooks call
 * (walk.c), the tracers' own ops records, and what they give the layers
 * below at start (wire.c).
 */
#ifndef FTRT_ENTRY_H
#define FTRT_ENTRY_H

#include <stdint.h>

#include "arch/site.h"

/* The tracers' hand-over to the layers below (wire.c), from
 * process/lifetime.c before the program's pass. */
void ftrt_tracers_wire(void) __attribute__((visibility("hidden")));

/* The entry assembly's symbols the ISA's site code reaches through
 * ftrt_arch_entries (wire.c takes their addresses). */
#if defined(__x86_64__)
void ftrace_graph_enter(void);
void ftrace_graph_leave(void);
void ftrace_prologue_graph_enter(void);
void ftrace_prologue_graph_leave(void);
void ftrace_libgraph_enter(void);
void ftrace_ops_caller(void);
void ftrace_ops_mcount_caller(void);
void ftrace_ops_chain_caller(void);
#else
void ftrace_prologue_caller(void);
void ftrace_prologue_stub(void);
void ftrace_ops_regs_caller(void);
void ftrace_ops_regs_mcount_caller(void);
#endif
void ftrace_ops_prologue_caller(void);

/* The tracer, from a list of ops that has it (patch/ops.c, through
 * ftrt_patch_up): the function at ip, with its registers as the ops
 * caller saved them (tracers/<isa>/fregs.c). */
void ftrt_arch_ops_tracer(uintptr_t ip, struct ftrace_regs *fregs) __attribute__((visibility("hidden")));

/* The C entry of the call-site trampolines (function.c; on arm64 -pg's,
 * tracers/arm64/mcount.c's ftrt_entry_frame), and function_graph's
 * entry and exit (graph.c). */
void ftrt_entry(uintptr_t ip, uintptr_t *parent_slot);
/* ftrt_entry of a call whose stack pointer at return is sp (a library
 * call's: tracers/libcall.c). */
void ftrt_entry_sp(uintptr_t ip, uintptr_t *parent_slot, uintptr_t sp) __attribute__((visibility("hidden")));
/* ftrt_entry_sp recording a plain call under either tracer, its return
 * never hooked (function_graph shows it without a duration). */
void ftrt_entry_plain(uintptr_t ip, uintptr_t *parent_slot, uintptr_t sp) __attribute__((visibility("hidden")));
struct ftrace_regs; /* the architecture's (arch/<isa>/regs.h) */
struct ftrt_libslot;
/* A library call's common entry (tracers/<isa>/libcall.S), where its
 * stub goes, and its C part (libcall.c): ftrt_libcall_entry records the
 * call of the slot idx, whose argument registers (the integer ones and
 * sp, with x30 as lr on arm64) the assembly saved in fregs, and returns
 * (in two registers: rax and rdx, x0 and x1) the function to go on to
 * and, when its arguments or return value are captured, the slot, which
 * the assembly passes on to ftrt_libcall_capture once it has saved the
 * vector registers too (and set the ip or pc to the function). */
struct ftrt_libcall_to {
	uintptr_t fn;
	uintptr_t slot; /* 0: no capture */
};
void ftrace_libcall(void) __attribute__((visibility("hidden")));
struct ftrt_libcall_to ftrt_libcall_entry(uint32_t idx, struct ftrace_regs *fregs) __attribute__((visibility("hidden")));
void ftrt_libcall_capture(struct ftrace_regs *fregs, const struct ftrt_libslot *s) __attribute__((visibility("hidden")));
/* ftrt_entry for the trampolines that save a struct ftrace_regs
 * (FTRT_ARCH_FREGS: arm64's ftrace_caller). */
void ftrt_entry_regs(uintptr_t ip, struct ftrace_regs *fregs);
void ftrt_entry_frame(uintptr_t ip, uintptr_t *fp, uintptr_t parent);
extern const struct ftrt_ops ftrt_ops_nop, ftrt_ops_function, ftrt_ops_graph;
int ftrt_graph_enter(uintptr_t ip, uintptr_t *slot, uintptr_t hook);
uintptr_t ftrt_graph_exit(uintptr_t sp);
/* Walks of the stack (walk.c says how): an exception's (unwind.c) or,
 * exc NULL, a backtrace's (backtrace.c). Suspend gives the unwinder the
 * real return addresses (1: a level opened, which resume closes); land
 * drops the calls made by the frame whose landing pad runs next, by the
 * stack pointer the pad runs with; resume, at the catch or the walk's
 * end, hooks the survivors again
 * (sp: the catching frame's stack pointer, a fallback should no landing
 * pad have been seen; 0: none). */
int ftrt_graph_suspend(const void *exc);
void ftrt_graph_land(uintptr_t sp);
void ftrt_graph_resume(const void *exc, uintptr_t sp);
/* The definition of name after the program's (libgcc_s's, libstdc++'s),
 * for the unwinder's entry points the runtime interposes (frames.c,
 * unwind.c); looked up once into *cache: threads that race there store
 * the same value. */
void *ftrt_next(const char *name, void **cache) __attribute__((visibility("hidden")));

#ifdef FTRT_PRELOAD
/*
 * The preloaded runtime (runtime.SharedLibName) has no linker's --wrap:
 * it defines the C library's function name itself, as an alias of its
 * wrapper __wrap_name, which the loader binds every module's calls to
 * (the runtime comes first in the lookup order); and the wrapper's
 * __real_name calls the C library's, looked up once (ftrt_next).
 */
#define FTRT_INTERPOSE(name) __asm__(".globl " #name "\n\t.type " #name ", %function\n\t.set " #name ", __wrap_" #name)
#define FTRT_REAL(ret, name, params, args)                            \
	ret __real_##name params                                      \
	{                                                             \
		static void *cache;                                   \
		return ((ret(*) params)ftrt_next(#name, &cache)) args; \
	}
#endif
/* Unwind info for a hook (frames.c): whether hook is one of this thread's
 * graphed calls' hooks, and if so where its shadow stack is, and an area
 * of FTRT_FRAME_INFO bytes of the thread's for the info. */
struct ftrt_hook_info {
	unsigned char *area;
	uintptr_t shadow; /* &shadow[0]: struct shadow, as layout.h lays it out */
	uintptr_t depth;  /* &depth: uint32_t */
};
int ftrt_graph_hook_info(uintptr_t hook, struct ftrt_hook_info *hi) __attribute__((visibility("hidden")));
/* Whether a throw reaches unwind.c's hooks (not in a static link with
 * libgcc_eh). Weak: unwind.c is linked only where C++ catches. */
int ftrt_unwind_hooked(void) __attribute__((weak));


#endif
