/*
 * ftrace.h: the ftpatch runtime's API, for a program linked with it
 * (cc ... $(ftpatch flags --libs)) that turns tracing of its own
 * functions on and off while it runs.
 *
 * Sites are enabled and disabled while every thread of the program goes
 * on running them: on x86-64 each changed site gets an int3 first, every
 * core is made to see it (membarrier), then the rest of the new
 * instruction, then its first byte, and a thread that meets a site in
 * between goes on as if it held the new instruction; the code is written
 * through /proc/self/mem, so it is never writable. A call under way when
 * its site changes is recorded whole (entry and exit) or not at all.
 *
 * Every function here may be called from any thread, at any time after
 * main has begun, but not from a signal handler (they take a lock, and
 * the filter functions allocate); the tracing_* functions excepted, which
 * are async-signal-safe. They return 0 or more on success, -1 with errno
 * set on failure, and ftrace_error() then says why.
 *
 * While this API is linked into a program, SIGTRAP is the runtime's
 * first: the program's own handler (installed before or after) still
 * receives every trap that is not a site being changed, with its own
 * mask, flags and stack, and SIGTRAP is kept out of the masks the
 * program sets (sigprocmask, pthread_sigmask, sigaction's sa_mask), and
 * unblocked in its handler, as a thread that blocked it would be killed
 * by the trap of a site being changed.
 *
 * Globs are those of FTRACE_FILTER: a comma-separated list, each a shell
 * glob, `!glob` excluding; C++ functions match by symbol or, when a glob
 * has C++ punctuation, by demangled name. "" chooses every function.
 */
#ifndef FTPATCH_FTRACE_H
#define FTPATCH_FTRACE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Trace exactly the functions globs chooses (the others' sites are
 * disabled: an instruction that does nothing the program sees), or add
 * them to those traced (enable), or take them out (disable). Returns how
 * many sites changed. The first that enables a site in a process started
 * without FTRACE opens the trace (FTRACE_OUT, else ./ftrace.data) with
 * the tracer ftrace_set_tracer chose, by default function_graph. A
 * shared object loaded later gets the calls made before, in order (the
 * latest call choosing a function decides), when it is loaded.
 *
 * Errors: ENOSYS, the system allows no safe change of running code (no
 * membarrier; /proc/self/mem refused); ENOMEM; EACCES, the trace
 * directory cannot be made; ENOENT, no symbol table to find functions in.
 */
int ftrace_set_functions(const char *globs);
int ftrace_enable_functions(const char *globs);
int ftrace_disable_functions(const char *globs);

/* Which tracer records: "function" (one record a call), "function_graph"
 * (entries and exits, durations) or "nop" (the sites called, nothing
 * recorded). Calls under way keep the tracer they began with. EINVAL: no
 * such tracer; ENOTSUP: function_graph cannot follow this program's C++
 * exceptions (a static link). */
int ftrace_set_tracer(const char *name);
/* The tracer recording, or the one the first enable will start. */
const char *ftrace_current_tracer(void);

/* Pause recording, and resume it, without changing a site: enabled sites
 * still call the tracer, which records nothing while paused (a graphed
 * call that began before is still recorded whole). Cheap, and
 * async-signal-safe, as the kernel's functions of the same names. */
void tracing_off(void);
void tracing_on(void);
int tracing_is_on(void);

/* A snapshot of the flight recorder (FTRACE_BUFFER=ring:SIZE): what
 * every thread's ring holds now, written as a whole trace directory
 * (ftpatch replay reads it) into dir, or, dir NULL or "", into
 * snapshot-N inside the trace's directory; tracing goes on. The
 * directory made goes into made (size bytes), when given. ENOTSUP: the
 * trace is not a flight recorder's (it is written as it goes); ENOENT:
 * no trace is open; EACCES: the directory cannot be made. */
int ftrace_snapshot(const char *dir, char *made, size_t size);

/*
 * ops: code of the program's own, called at the entry of the functions
 * it chooses, as the kernel's struct ftrace_ops. func is called with the
 * function's site (ip: its first instruction, or, -pg, its call of
 * mcount), its caller's return address (parent_ip), the ops and the
 * function's registers at the site (fregs: read and changed with the
 * ftrace_regs_* functions below). Callbacks run in the traced thread,
 * perhaps in a signal handler, at any function the filter chooses: they
 * must be async-signal-safe and keep errno. A callback's own calls of
 * traced functions are called back too, unless flags has
 * FTRACE_OPS_FL_RECURSION.
 *
 * One ops alone on a function is called directly (the site calls a
 * trampoline made for the ops, near its code), so ops registered for
 * other functions cost a function nothing; several ops on one function,
 * or an ops and the tracer, go through a list. The registers a callback
 * may clobber under the C calling convention (the argument registers,
 * the vector registers that carry floating-point arguments) are kept
 * for the function: x86-64 keeps xmm0-7 whole, not the upper halves of
 * ymm and zmm registers; arm64 keeps q0-q7 (not the SVE state). At a
 * site made from a function's prologue every register is kept: x86-64
 * r11 and xmm0-15, ymm0-15 or zmm0-31 and k0-7 (as the CPU has them)
 * and mxcsr, arm64 x9-x15, x18 and q0-q31; so are they around a graph
 * user's return callbacks after such a function.
 *
 * A callback is never called back for its own function (the kernel's
 * are notrace; a program's usually have a site); functions it calls are
 * best kept out of the filter (ftrace_set_notrace), or guarded with
 * FTRACE_OPS_FL_RECURSION.
 *
 * Fields of the runtime's own (internal) are zero before the first
 * register, and left alone by the program until the ops is unregistered.
 */
struct ftrace_ops;
struct ftrace_regs;
/* The program's own pointer in each structure below: `private`, the
 * kernel's name, in C; `priv` in C++, where private is a keyword. */
#ifdef __cplusplus
#define FTRACE_PRIVATE void *priv
#else
#define FTRACE_PRIVATE void *private
#endif
typedef void (*ftrace_func_t)(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op, struct ftrace_regs *fregs);

/* Set by the runtime while the ops is registered. */
#define FTRACE_OPS_FL_ENABLED (1ul << 0)
/* The runtime keeps the callback from being called again while it runs
 * in the same thread: by its own traced calls, or by a signal handler's
 * (the kernel's flag of the same name). */
#define FTRACE_OPS_FL_RECURSION (1ul << 1)
/* The callback may change where the function goes on
 * (ftrace_regs_set_instruction_pointer). Accepted for the kernel's
 * sake: every ops may. */
#define FTRACE_OPS_FL_IPMODIFY (1ul << 2)

/* Set by register_ftrace_direct: the ops calls direct_call. */
#define FTRACE_OPS_FL_DIRECT (1ul << 3)

struct ftrace_ops {
	ftrace_func_t func;
	unsigned long flags;
	FTRACE_PRIVATE;
	unsigned long direct_call; /* register_ftrace_direct's trampoline */
	unsigned long internal[4]; /* the runtime's */
};

/*
 * The functions ops calls back: globs (FTRACE_FILTER's syntax: `!glob`
 * excludes) added to those set before, or, reset, in their place.
 * ftrace_set_notrace: functions never called back, whatever the filter
 * says. An ops with no filter is called for every function with a site;
 * one whose filter chooses no function, for none. May be called before
 * and while the ops is registered (the sites change at once). Returns
 * how many sites the filter chooses now.
 */
int ftrace_set_filter(struct ftrace_ops *ops, const char *globs, int reset);
int ftrace_set_notrace(struct ftrace_ops *ops, const char *globs, int reset);

/*
 * Start and stop calling ops back, while other threads run. After
 * unregister_ftrace_function returns, the callback is never called
 * again, and no thread is inside it (but the caller, when the callback
 * itself unregisters): the ops may then be freed. At most 64 ops are
 * registered at once, and 256 ops structures over the life of the
 * process (ENOSPC). EBUSY: registered already (register); EINVAL: not
 * registered (unregister), or no callback; ENOSYS and ENOENT as
 * ftrace_set_functions. Registering opens no trace. A site the ops
 * cannot reach (an arm64 area still `nop; nop`, no trampoline in
 * reach) stays as it was.
 */
int register_ftrace_function(struct ftrace_ops *ops);
int unregister_ftrace_function(struct ftrace_ops *ops);

/*
 * Direct calls (the kernel's): a trampoline of the program's own, addr,
 * called at the entry of each function ops's filter chooses, as if the
 * function's first instruction called it. x86-64: entered by a call,
 * the return into the function on top of the stack and the caller's
 * return address above it; every register but r11 and the flags as the
 * function got them, which the trampoline keeps (but for what it means
 * to change) before it returns. arm64: entered by a bl, with x30 the
 * return into the function and x9 the caller's return address (its x30
 * at entry); x16 and x17 may be changed; it returns with `mov x10, x30;
 * mov x30, x9; ret x10` or the like, and starts with `bti c` in a
 * BTI-guarded program. A function whose site reaches addr (rel32; bl)
 * and that nothing else wants calls it directly; else the ops list (or
 * the ops's trampoline) calls the tracer and the callbacks, then
 * branches to addr. Only at entry sites: not at -pg sites after the
 * prologue. At a site made from a function's prologue (ftpatch
 * instrument, record -P) the function was built without tracing flags,
 * so its callers may keep values in any register a call may change
 * (gcc's -fipa-ra): there the trampoline keeps every register but the
 * flags (x86-64: r11 and the vector registers too), or but x16 and x17
 * (arm64, where it is entered with x17, not x9, the caller's return
 * address, after `mov x17, x30`: return with `mov x16, x30; mov x30,
 * x17; ret x16`); and it must have no site of its own made so. One direct trampoline per function: EBUSY when another
 * registered one chooses a function this one does. ops->func may be
 * NULL, or a callback called before the trampoline.
 *
 * modify_ftrace_direct: addr in place of the trampoline, at every
 * function, at once. unregister_ftrace_direct (addr must be the one
 * registered): as unregister_ftrace_function, and free_filters resets
 * the filters. A trampoline may still be running in a thread when
 * these return: keep its code in place.
 */
int register_ftrace_direct(struct ftrace_ops *ops, unsigned long addr);
int modify_ftrace_direct(struct ftrace_ops *ops, unsigned long addr);
int unregister_ftrace_direct(struct ftrace_ops *ops, unsigned long addr, int free_filters);

/*
 * A function's registers, as a callback sees them (the kernel's
 * accessors of the same names). Argument n counts from 0 among the
 * integer and pointer arguments (x86-64: rdi rsi rdx rcx r8 r9, then the
 * stack; arm64: x0-x7, then the stack), fp argument n among the
 * floating-point ones (xmm0-7; d0-d7). The stack's are read without
 * ever faulting (a function at the top of its stack, a coroutine's or a
 * thread's, may have nothing mapped above it), as FTRACE_ARGS's are:
 * the first 512 bytes of them (n up to 69 on x86-64, 71 on arm64), 0
 * past those or where they cannot be read, which a callback cannot tell
 * from a 0 passed. At an arm64 -pg site, after the prologue, x0 holds
 * the return address gcc hands _mcount, not the first argument, and the
 * stack's arguments read as 0. The instruction pointer is where
 * the function goes on; setting it at a function's entry runs another
 * function in its place, with the same arguments, returning to the same
 * caller (a fixed version of the function: a live patch); -1 where that
 * cannot be done (a site after the prologue, -pg, or a GNU C nested
 * function's). ftrace_override_function_with_return makes the function
 * return at once to its caller, with the value ftrace_regs_set_return_value
 * set (call it first). Async-signal-safe, all: they run in callbacks.
 */
unsigned long ftrace_regs_get_argument(struct ftrace_regs *fregs, unsigned int n);
unsigned long long ftrace_regs_get_fp_argument_bits(struct ftrace_regs *fregs, unsigned int n);
unsigned long ftrace_regs_get_stack_pointer(struct ftrace_regs *fregs);
unsigned long ftrace_regs_get_instruction_pointer(struct ftrace_regs *fregs);
unsigned long ftrace_regs_get_return_value(struct ftrace_regs *fregs);
void ftrace_regs_set_return_value(struct ftrace_regs *fregs, unsigned long ret);
int ftrace_regs_set_instruction_pointer(struct ftrace_regs *fregs, unsigned long ip);
int ftrace_override_function_with_return(struct ftrace_regs *fregs);

/* fp argument n as a double. */
static inline double ftrace_regs_get_fp_argument(struct ftrace_regs *fregs, unsigned int n)
{
	unsigned long long bits = ftrace_regs_get_fp_argument_bits(fregs, n);
	double d;
	__builtin_memcpy(&d, &bits, sizeof d);
	return d;
}

/*
 * Graph users (the kernel's fgraph): code of the program's own at the
 * entry and at the return of the functions each user's filter chooses
 * (ftrace_set_filter(&gops->ops, ...)), up to 16 users at once, sharing
 * the shadow stack the function_graph tracer keeps: a call that any user,
 * or the tracer, wants is pushed once, with a bit for each user that
 * wants its return (the tracer is user 0, whose bit is the call's
 * record). entryfunc runs at the entry, after the tracer; its return
 * value says whether retfunc is to run at the return (0: not).
 * retfunc gets the return value (ftrace_regs_get_return_value, also
 * trace->retval; an entryfunc that wants the call's time keeps it with
 * fgraph_reserve_data). A call left without returning (longjmp, an
 * exception, a thread's exit) runs no retfunc. Callbacks run in the
 * traced thread, perhaps in a signal handler: async-signal-safe. Their
 * own traced calls are neither called back nor in the trace.
 *
 * fgraph_reserve_data, in entryfunc: size bytes (at most
 * FGRAPH_DATA_MAX, 8-byte aligned) the same user's retfunc gets back
 * with fgraph_retrieve_data (*size set), for this call; NULL when the
 * thread's room (256 KiB) is used up: never a crash. fgraph_get_task_var:
 * a word per user and thread, zero at first.
 *
 * FTRACE_ARGS and FTRACE_RETVAL take one of the 16 users when set.
 *
 * unregister_fgraph: after it returns, neither callback of the user runs
 * again, even for a call under way, whose return is still made
 * whole; gops may then be freed. EBUSY: registered already; ENOSPC: 16
 * users registered; ENOTSUP: the program's unwinder is linked in
 * statically (as function_graph).
 */
struct ftrace_graph_ent {
	unsigned long func; /* the function's site */
	int depth;          /* calls of the thread's graph under it (0: none) */
};
struct ftrace_graph_ret {
	unsigned long func;   /* the function's site */
	unsigned long retval; /* its return value (x86-64: rax; arm64: x0) */
	int depth;
};
struct fgraph_ops;
typedef int (*trace_func_graph_ent_t)(struct ftrace_graph_ent *trace, struct fgraph_ops *gops, struct ftrace_regs *fregs);
typedef void (*trace_func_graph_ret_t)(struct ftrace_graph_ret *trace, struct fgraph_ops *gops, struct ftrace_regs *fregs);
struct fgraph_ops {
	trace_func_graph_ent_t entryfunc;
	trace_func_graph_ret_t retfunc;
	struct ftrace_ops ops; /* its filter: ftrace_set_filter(&gops->ops, ...) */
	FTRACE_PRIVATE;
	int idx;               /* set by register: its bit, 1..16 */
};
#define FGRAPH_DATA_MAX 256
int register_fgraph(struct fgraph_ops *gops);
int unregister_fgraph(struct fgraph_ops *gops);
void *fgraph_reserve_data(int idx, int size);
void *fgraph_retrieve_data(int idx, int *size);
unsigned long *fgraph_get_task_var(struct fgraph_ops *gops);

/*
 * fprobe (the kernel's): an entry and an exit handler on the functions
 * filter chooses (FTRACE_FILTER's globs), but those notfilter does, built
 * on a graph user of its own. entry_handler gets the function's site
 * (entry_ip), its caller's return address (ret_ip), its registers (the
 * arguments: ftrace_regs_get_argument) and entry_data_size bytes (at
 * most FPROBE_DATA_MAX) the exit_handler gets back for the same call,
 * with the registers at the return (ftrace_regs_get_return_value); an
 * entry_handler that returns non-zero skips the exit_handler of that
 * call. nmissed counts calls whose data found no room. As graph users:
 * at most 16 at once, with the graph users; unregister_fprobe waits
 * until no handler runs; callbacks async-signal-safe.
 */
#define FPROBE_DATA_MAX (FGRAPH_DATA_MAX - 8)
struct fprobe;
typedef int (*fprobe_entry_cb)(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip, struct ftrace_regs *fregs,
			       void *entry_data);
typedef void (*fprobe_exit_cb)(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip, struct ftrace_regs *fregs,
			       void *entry_data);
struct fprobe {
	fprobe_entry_cb entry_handler;
	fprobe_exit_cb exit_handler;
	size_t entry_data_size;
	unsigned long nmissed;
	FTRACE_PRIVATE;
	struct fgraph_ops gops; /* the runtime's */
};
int register_fprobe(struct fprobe *fp, const char *filter, const char *notfilter);
int unregister_fprobe(struct fprobe *fp);

/* How many sites are enabled now, in every module. */
long ftrace_enabled_sites(void);

/* Why the calling thread's last failed call failed. */
const char *ftrace_error(void);

#ifdef __cplusplus
}
#endif

#endif
