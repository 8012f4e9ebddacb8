/*
 * ftrt: the ftpatch runtime, linked into a traced program.
 *
 * This slice holds the entry hooks and the load-time pass over the site
 * table: before main runs, every site listed between __start___mcount_loc
 * and __stop___mcount_loc is checked and turned into a NOP, so a program
 * nobody asked to trace runs with nothing but NOPs at its function
 * entries. Tracers come next.
 *
 * Built without instrumentation and with -mgeneral-regs-only, so nothing
 * here calls a hook or clobbers the FP/SIMD registers that carry
 * arguments and return values.
 */
#ifndef FTRT_H
#define FTRT_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

/* The first index of the sorted a[0, n) whose value is key or more (n:
 * none): the runtime's searches of sorted addresses. */
static inline size_t ftrt_lower_bound(const uintptr_t *a, size_t n, uintptr_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* What the load-time pass did to a module's table: kept in its record
 * (struct ftrt_mod), written into the trace's metadata. */
struct ftrt_stats {
	uint64_t entries;  /* words in the table, zero words included */
	uint64_t zero;     /* zero words: padding, or sites in discarded sections */
	uint64_t dups;     /* addresses listed twice */
	uint64_t patched;  /* calls turned into NOPs */
	uint64_t nops;     /* sites already a single NOP (recordmcount --nop, -mnop-mcount, clang's padding) */
	uint64_t skipped;  /* sites whose bytes were not what a site may hold: left alone */
	uint64_t failed;   /* sites that could not be written */
	uint64_t enabled;  /* sites made to call the tracer */
	uint64_t unsupported; /* sites the filter chose that the tracer cannot serve */
	uint64_t literal;  /* enabled sites served through their pre-function literal (arm64: ftrace_ops_caller) */
	uint64_t misaligned; /* sites with a pre-function slot that is not 8-byte aligned: the shared path */
	uint64_t init_ns;  /* time the load-time pass took */
	uint64_t pages;    /* code pages made writable (and written): 0 for a pre-patched file */
	uint64_t config;   /* what the pass made of .ftrt_config: an FTRT_CFG_STATE_* */
};

/* The config record (abi.h lays it out), in section FTRT_CFG_SECTION. */
extern const struct ftrt_config ftrt_config __attribute__((visibility("hidden")));

/* FTRT_CFG_STATE_*'s name, for the trace's metadata (`config <name>`). */
const char *ftrt_config_state(uint64_t state);

/* The load-time pass (patch.c), which starts the trace: from the
 * program's .preinit_array (lifetime.c), before any constructor. */
void ftrt_init(void);
/* The program's .preinit_array function (lifetime.c). */
void ftrt_preinit(int argc, char **argv, char **envp);
/* Arm the trace's end at exit, after every exit function (lifetime.c);
 * called when the trace starts. */
void ftrt_exit_watch(void) __attribute__((visibility("hidden")));

/*
 * Modules: the program and every shared object with sites each have a
 * table of their own, and one runtime (the program's) serves them all,
 * as the kernel's ftrace serves each module's mcount table.
 *
 * A shared object links the module stub (module/: hooks that return,
 * trampolines that jump into the runtime, a config record) instead of
 * the runtime. When the loader runs its constructors, the stub hands the
 * runtime this description of itself (ftrt_module_register); its
 * destructor takes it back (ftrt_module_unregister) before dlclose
 * unmaps it. The two halves may come from different ftpatch versions:
 * the runtime checks size and version first.
 *
 * targets[] are what a site of the module may call: the hooks its
 * compiler called, and the trampolines `ftpatch enable` writes calls to.
 * In a shared object these are its own (hidden) copies, within rel32
 * reach of its code; the trampolines among them jump through slots[],
 * which the runtime fills with its own entry points at registration.
 */
#define FTRT_T_ENUM(id, sym) FTRT_T_##id, /* sym */
enum { FTRT_TARGETS_ARCH(FTRT_T_ENUM) FTRT_T_N };
#undef FTRT_T_ENUM
/* The hooks and trampolines (entry.S; a shared object's in module/). */
#define FTRT_T_DECLARE(id, sym) void sym(void);
FTRT_TARGETS_ARCH(FTRT_T_DECLARE)
#undef FTRT_T_DECLARE
/* targets[] of a module whose hooks and trampolines go by their usual
 * names (the program's are the runtime's; a shared object's are its
 * stub's hidden copies). */
#define FTRT_T_INIT(id, sym) [FTRT_T_##id] = (uintptr_t)sym,
#define FTRT_TARGETS { FTRT_TARGETS_ARCH(FTRT_T_INIT) }
/* The first trampoline among the targets: the hooks come before it, the
 * stub last. */
#if defined(__aarch64__)
enum { FTRT_T_FIRST_TRAMP = FTRT_T_CALLER };
#else
enum { FTRT_T_FIRST_TRAMP = FTRT_T_CALLER5 };
#endif
/* The slots a module's trampolines jump through, in targets[] order from
 * FTRT_T_FIRST_TRAMP. */
#define FTRT_SLOTS (FTRT_T_STUB - FTRT_T_FIRST_TRAMP)

/* A stub and a runtime of different versions do not serve each other:
 * 2 added the chain trampolines (targets[] and slots grew); 3 the
 * patchable areas, and arm64's ftrace_ops_caller. */
#define FTRT_MODULE_VERSION 3
struct ftrt_module {
	uint32_t size;                   /* sizeof(struct ftrt_module) */
	uint32_t version;                /* FTRT_MODULE_VERSION */
	const uintptr_t *start, *stop;   /* the module's __mcount_loc, relocated */
	/* The compiler's list of where each patchable area starts
	 * (__patchable_function_entries, relocated; empty without
	 * -fpatchable-function-entry): on arm64, an area that starts 8
	 * bytes before an 8-byte aligned function holds its literal. */
	const uintptr_t *areas, *areas_end;
	const struct ftrt_config *config; /* the module's own record (.ftrt_config) */
	uintptr_t targets[FTRT_T_N];     /* the module's hooks and trampolines */
	uintptr_t *slots;                /* FTRT_SLOTS jump slots: filled by the runtime */
	uintptr_t handle;                /* the runtime's: 0 while not registered */
};

/*
 * A module the runtime serves (registry.c): the program first, then each
 * shared object in the order the loader ran their constructors. Records
 * outlive dlclose (unload set), so the trace's metadata can name every
 * module that ran while it was recorded.
 */
struct ftrt_mod {
	const struct ftrt_module *desc;
	const char *path;   /* the file, as the loader named it; NULL: the program */
	uintptr_t bias;     /* run-time address - file address */
	uintptr_t lo, hi;   /* its loaded segments' run-time extent */
	uintptr_t text_lo, text_hi; /* its executable segment's, from the start of its first page
			     * (mapped and readable while it is loaded); 0, 0 with several */
	char build_id[129]; /* hex GNU build-id, "" when it has none */
	uint64_t load;      /* trace timestamp of registration; 0: before the trace began */
	uint64_t unload;    /* of unregistration; 0: loaded until the end */
	int owner;          /* its number (1..), owner of what the pass built for it */
	int live;           /* registered and not yet unregistered */
	struct ftrt_stats stats; /* what its pass did */
};
/* Module records the runtime keeps (registry.c); past this many loads,
 * records of unloaded modules are reused. */
#define FTRT_MOD_MAX 256
/* Records reused after FTRT_MOD_MAX modules: their names are lost. */
extern uint64_t ftrt_modules_forgotten __attribute__((visibility("hidden")));
/* Run the load-time pass over one module's table (patch.c). */
void ftrt_pass(struct ftrt_mod *md);
/* Whether a is in the executable segment of the loaded module whose
 * executable segment holds in: code there can be read (frame.h reads a
 * prologue across a page boundary). Lock-free and async-signal-safe:
 * in is code a thread runs, so its module stays loaded meanwhile. */
int ftrt_module_text_holds(uintptr_t in, uintptr_t a) __attribute__((visibility("hidden")));
/* The records, for the trace's metadata: NULL past the last. */
const struct ftrt_mod *ftrt_module_at(int i);
/* Hold the records still (a thread may dlopen or dlclose while the
 * metadata is written at the end): 1 when held, 0 when another holder did
 * not let go within a second (the metadata is written anyway). */
int ftrt_modules_hold(void);
void ftrt_modules_release(void);
/* Hold them, waiting as long as it takes (the live API, live.c: a module's
 * pass and a live change never write code at once). */
void ftrt_modules_lock(void) __attribute__((visibility("hidden")));
void ftrt_modules_after_fork(void) __attribute__((visibility("hidden")));
/* The program's own record (registered by ftrt_init). */
int ftrt_register_self(const struct ftrt_module *self);
/* The process is exiting (lifetime.c): a module unregistered from now on
 * keeps what was built for it, as other threads may still run it. */
void ftrt_modules_exiting(void) __attribute__((visibility("hidden")));

/* What registry.c sets off when its records change, which it calls
 * through these, never by name: the load-time pass's start (init, before
 * a shared object registers), a module's pass (pass), and the trace's
 * metadata rewritten (changed). Given once, by lifetime.c, before the
 * program's pass. */
struct ftrt_modules_calls {
	void (*init)(void);
	void (*pass)(struct ftrt_mod *md);
	void (*changed)(void);
	void (*gone)(int owner); /* a module was unloaded: what the live part kept of it goes */
	/* a shared object is about to be registered, before the lock is
	 * taken: what may wait (capture.c asks a socket) */
	void (*adding)(const struct ftrt_module *m);
};
/* The path (malloc'd; NULL: not a loaded object) and the hex GNU
 * build-id ("" for none) of the loaded object holding inside. */
char *ftrt_module_identify(uintptr_t inside, char build_id[129]) __attribute__((visibility("hidden")));
/* The live part's index of module owner's sites goes (live.c). */
void ftrt_live_forget(int owner) __attribute__((visibility("hidden")));
void ftrt_modules_wire(const struct ftrt_modules_calls *c) __attribute__((visibility("hidden")));

/* Exported from the program (ftpatch flags --libs makes the linker
 * export them), called by each module's stub. 0, or -1 when the
 * description is one this runtime cannot serve (the module then runs
 * untraced, its sites calling its own hooks, which return). */
int ftrt_module_register(struct ftrt_module *m);
void ftrt_module_unregister(struct ftrt_module *m);

/* Per architecture (arch/x86_64/site.c): read the site at ip and say what it
 * holds (reading 8 bytes from ip, which walk() makes sure are there);
 * write a NOP over it. */
enum ftrt_site_state {
	FTRT_SITE_CALL,    /* the compiler's call to a hook */
	FTRT_SITE_NOP,     /* one NOP covering the site */
	FTRT_SITE_NOPS,    /* several NOPs covering the site (-fpatchable-function-entry) */
	FTRT_SITE_UNKNOWN, /* anything else: never written */
};

/* The module whose sites the pass is over: its targets decide which calls
 * are hooks and which are the runtime's (site.c, patch.c). */
extern const uintptr_t *ftrt_targets __attribute__((visibility("hidden")));

/* Where the segment whose sites are being classified begins (sites.c's
 * walk sets it): the architecture may read before a site, but not
 * before this. */
extern uintptr_t ftrt_walk_seg_lo __attribute__((visibility("hidden")));

enum ftrt_site_state ftrt_arch_classify(const unsigned char *ip, int *len);
const unsigned char *ftrt_arch_nop(int len);
/* Probe which NOPs this CPU runs (or take FTRACE_NOP's choice); returns
 * the style's name: p6, k8 or jmp. */
const char *ftrt_arch_probe(const char *force);
/* The call that enables the site at ip of len bytes (into buf, 8 bytes),
 * where want says (WANT_ENTRY: at a function's entry; WANT_MCOUNT: after
 * its prologue, -pg; WANT_CHAIN: at its entry after push %r10); 0, or -1
 * when the trampoline is out of reach. */
int ftrt_arch_call(uintptr_t ip, int len, int want, unsigned char *buf);
/* What ftrt_arch_call's site of len bytes calls, for the load-time
 * pass's inline path; 0 when it does not call (function_graph's jump to
 * an entry site's own trampoline). */
uintptr_t ftrt_arch_call_target(int len, int want);
/* For a module's pass: the starts of its patchable areas [start, end)
 * (its __patchable_function_entries, relocated; any order), which the
 * architecture may need to tell what a site's area holds (arm64's
 * literal.c); (NULL, NULL) after the pass. */
void ftrt_arch_areas(const uintptr_t *start, const uintptr_t *end);
/* What the site at ip of len bytes becomes when the pass leaves it
 * disabled: its NOP (ftrt_arch_nop), or, in a traced run, at an arm64
 * patchable area, `mov x9, x30; nop`. */
const unsigned char *ftrt_arch_off(uintptr_t ip, int len);
/* Before a module's pass: what ftrt_arch_call builds from now on
 * (per-site trampolines) belongs to module `owner` (never shared with
 * another module, so it can go when the module does). */
void ftrt_arch_begin(int owner);
/* At the end of a module's pass: make what ftrt_arch_call built for it
 * read-only and executable. */
void ftrt_arch_seal(void);
/* The module `owner` is unloaded: unmap what was built for it. */
void ftrt_arch_release(int owner);
/* Whether the site at ip calls the entry hook (__fentry__), in any form. */
int ftrt_arch_entry_call(const unsigned char *ip);
/* Whether a site at ip is at the entry of the function [start, end):
 * before its frame is built, with nothing but endbr64 and NOPs before it
 * (-fpatchable-function-entry with -mfentry), or a chain site whose push
 * %r10 starts the function (after endbr64). Reads nothing outside the
 * function. */
int ftrt_arch_at_entry(uintptr_t ip, uintptr_t start, uintptr_t end);
/* Whether the site at ip of len bytes is a chain site: gcc's `push %r10;
 * [endbr64;] [nop...;] call __fentry__; pop %r10` of a GNU C nested
 * function, which keeps its static chain across the call; the return
 * address is then a word above the top of the stack. Reads the site's 8
 * bytes and back to lo at most (the start of its segment). */
int ftrt_arch_chain(uintptr_t ip, int len, uintptr_t lo);

/* What the load-time pass makes of a site. */
enum {
	WANT_NOP,
	WANT_ENTRY,   /* call the tracer, at a function's entry */
	WANT_MCOUNT,  /* after the prologue (-pg) */
	WANT_CHAIN,   /* at a function's entry after push %r10: found by ftrt_arch_chain when a WANT_ENTRY site is written */
	WANT_UNKNOWN, /* not decided yet: for the symbol table (patch.c's choose) */
	WANT_AUTO,    /* no filter: enable a call of __fentry__, leave the rest WANT_UNKNOWN */
};

/* The module's functions (symbols.c). ftrt_symbols_open maps the ELF
 * file at path and finds its symbol table (-1: unreadable, or stripped);
 * ftrt_symbols_mark then sets want[i] for each of the sorted sites s[i]
 * (run-time addresses, the file loaded at bias) that lies in a function:
 * WANT_ENTRY or WANT_MCOUNT, or, when pick is given and its verdict on
 * the function's name lacks PICK_TRACE, WANT_NOP; and marks[i] (when
 * given) the verdict's mark (its low byte: MARK_CHOSEN, MARK_NOTRACE or
 * 0, layout.h); and names[i] (when given, with pick) the function's
 * name, in the mapped file (valid until ftrt_symbols_close). The sites
 * in no function are left alone. Without pick no name is read.
 * ftrt_symbols_close unmaps the file. */
#define PICK_TRACE 0x100
int ftrt_symbols_open(const char *path);
int ftrt_symbols_mark(uintptr_t bias, const uintptr_t *s, size_t m, unsigned char *want, unsigned char *marks,
		      int (*pick)(const char *name), const char **names);
void ftrt_symbols_close(void);
/* Say which plain globs of FTRACE_GRAPH_FUNCS named no traced function
 * of the modules registered so far (options.c): once, when the program's
 * initialisers begin, the shared objects loaded with it registered
 * (lifetime.c). */
void ftrt_graph_funcs_check(void) __attribute__((visibility("hidden")));

/* The tracers (tracer.h says which file holds what). */
extern int ftrt_mode;
extern unsigned ftrt_max_depth __attribute__((visibility("hidden")));
extern uint64_t ftrt_thresh_tsc __attribute__((visibility("hidden")));
uint64_t ftrt_ns_to_tsc(uint64_t ns);
/* Open the trace in the directory dir (recorded: the binary's recorded
 * location); -1 with *why (what is wrong with dir) when it cannot be made. */
int ftrt_trace_start(const char *dir, int recorded, const char **why);
/* What ftrt_trace_start calls to arm the trace's end at exit (lifetime.c's
 * ftrt_exit_watch), given before the trace can start: the trace's opening
 * names nothing above it. */
void ftrt_trace_arm(void (*at_exit)(void)) __attribute__((visibility("hidden")));
/* The tracer's options are set (after ftrt_trace_start): the assembly
 * fast paths may run from here on. */
void ftrt_trace_go(void);
/* Whether the process listens for ftpatch ctl: FTRACE_CTL=1, or its
 * config record's FTRT_CFG_CTL (options.c). */
int ftrt_ctl_wanted(void) __attribute__((visibility("hidden")));
/* FTRACE_BUFFER=writer: start the writer thread (writer.c), when the
 * program's initialisers begin (lifetime.c). */
void ftrt_writer_start(void) __attribute__((visibility("hidden")));
/* The module records changed; the caller holds them (registry.c): while
 * the run goes on, rewrite the trace's metadata ("ended 0"). */
void ftrt_trace_meta_update(void) __attribute__((visibility("hidden")));
/* The trace's end: flush every buffer of this process and, in the one
 * that made the trace, write the final metadata. From exit (atexit) and
 * _exit (exit.c); async-signal-safe. Nothing when no trace is open. */
void ftrt_trace_end(void) __attribute__((visibility("hidden")));
/* The fatal signal whose handler ends the trace (trap.c: the flight
 * recorder's rings written as the program dies), for the metadata. */
extern int ftrt_end_signal __attribute__((visibility("hidden")));
/* The process is ending with status, what exit or _exit was given
 * (lifetime.c's exit handler, exit.c's _exit): its low 8 bits, what the
 * parent's wait sees, go in the metadata (exit_code). Not in a child
 * that shares its parent's memory (vfork). Async-signal-safe. */
void ftrt_trace_status(int status) __attribute__((visibility("hidden")));
/* Before an exec (exec.c): write this thread's buffer out; tracing goes
 * on if the exec fails. Async-signal-safe. */
void ftrt_trace_exec(void) __attribute__((visibility("hidden")));
/* Whether a trace is open, and its clock now (a record's timestamp). */
int ftrt_tracing(void);
uint64_t ftrt_now(void);
void ftrt_entry(uintptr_t ip, uintptr_t *parent_slot);
struct ftrace_regs; /* the architecture's (arch/arm64/regs.h) */
/* ftrt_entry for the trampolines that save a struct ftrace_regs
 * (FTRT_ARCH_FREGS: arm64's ftrace_caller). */
void ftrt_entry_regs(uintptr_t ip, struct ftrace_regs *fregs);
void ftrt_entry_frame(uintptr_t ip, uintptr_t *fp, uintptr_t parent);
/*
 * An ops record, as the kernel's struct ftrace_ops: what serves a
 * function whose site reaches it through the function's own pre-function
 * literal (arm64's ftrace_ops_caller loads the record's address from the
 * literal and calls func with it). func gets, as the kernel's does, the
 * site, the parent ip, the record and the function's registers at the
 * site (its return address in fregs->lr, which function_graph
 * replaces). One per tracer of the runtime (function.c); ftrt_ops_nop's
 * does nothing.
 */
struct ftrt_ops {
	void (*func)(uintptr_t ip, uintptr_t parent_ip, const struct ftrt_ops *ops, struct ftrace_regs *fregs);
};
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
/* Unwind info for a hook (frames.c): whether hook is one of this thread's
 * graphed calls' hooks, and if so where its shadow stack is, and an area
 * of FTRT_FRAME_INFO bytes of the thread's for the info. */
#define FTRT_FRAME_INFO 256
struct ftrt_hook_info {
	unsigned char *area;
	uintptr_t shadow; /* &shadow[0]: struct shadow, as layout.h lays it out */
	uintptr_t depth;  /* &depth: uint32_t */
};
int ftrt_graph_hook_info(uintptr_t hook, struct ftrt_hook_info *hi) __attribute__((visibility("hidden")));
/* Whether a throw reaches unwind.c's hooks (not in a static link with
 * libgcc_eh). Weak: unwind.c is linked only where C++ catches. */
int ftrt_unwind_hooked(void) __attribute__((weak));

/*
 * The environment (env.c): whether the process runs in secure-execution
 * mode (AT_SECURE: setuid, setgid, file capabilities), and every FTRACE*
 * variable the runtime reads, through ftrt_env, which gives NULL there.
 * ftrt_env_capture notes the settings the process started with (at its
 * first pass); a child given an environment of its own with no FTRACE*
 * variable gets them (exec.c): ftrt_child_env_size says how many
 * pointers its copy needs (0: leave it as it is), ftrt_child_env_fill
 * makes it. Async-signal-safe, both.
 */
int ftrt_secure(void) __attribute__((visibility("hidden")));
const char *ftrt_env(const char *name) __attribute__((visibility("hidden")));
void ftrt_env_capture(void) __attribute__((visibility("hidden")));
size_t ftrt_child_env_size(char *const envp[]) __attribute__((visibility("hidden")));
void ftrt_child_env_fill(char **out, char *const envp[]) __attribute__((visibility("hidden")));

/*
 * The trace directory and its files (dir.c). ftrt_dir_set_mode applies
 * FTRACE_MODE (NULL: the private default, 0700 and 0600). ftrt_dir_make
 * makes the trace directory and returns its descriptor, locked for as
 * long as the process runs, or -1 with *why set. ftrt_file_create
 * creates a file in it (O_CREAT|O_EXCL|O_NOFOLLOW): a descriptor, or
 * -errno; async-signal-safe.
 */
void ftrt_dir_set_mode(const char *mode) __attribute__((visibility("hidden")));
int ftrt_dir_make(const char *path, int recorded, const char **why) __attribute__((visibility("hidden")));
long ftrt_file_create(int dir, const char *name) __attribute__((visibility("hidden")));

#endif
