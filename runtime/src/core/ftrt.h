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

struct dl_phdr_info; /* <link.h>'s, with _GNU_SOURCE */

#include "abi.h"
#include "arch/site.h"

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
/*
 * A loaded module's tables, found from its file (tables.c) by the
 * preloaded runtime for a module that no linker or stub describes: its
 * __mcount_loc, or, without one, the sites of its patchable areas
 * (ftrt_arch_area_site); its __patchable_function_entries; and whether
 * it links the runtime or the module stub (it has a config record),
 * and so describes itself.
 */
struct ftrt_tables {
	const uintptr_t *start, *stop, *areas, *areas_end;
	/* The sites among start..stop made from functions' prologues
	 * (ftpatch instrument's FTRT_PROLOGUE_SECTION), sorted. */
	const uintptr_t *prologues, *prologues_end;
	int linked;
};
/* The tables of the file at path, loaded at bias: 0, or -1 when the
 * file cannot be read as ELF. unrelocated: the loader has mapped the
 * file but not relocated it yet (a dlopen's object, described between
 * the two): the tables are copies, relocated here. */
int ftrt_tables_read(const char *path, uintptr_t bias, int unrelocated, struct ftrt_tables *t) __attribute__((visibility("hidden")));

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
	/* Read only when size covers them (a stub never sets them): the
	 * sites among start..stop made from functions' prologues, sorted
	 * (ftpatch instrument's table, or record -P's plans). The functions
	 * were compiled without tracing flags, so the compiler may keep
	 * values in call-clobbered registers across calls to them (gcc's
	 * -fipa-ra): every path the runtime takes for such a site preserves
	 * every register. */
	const uintptr_t *prologues, *prologues_end;
	/* For sites made at load (record -P: patch/prologue.c), whose
	 * trampolines no symbol covers: the function of each of prologues,
	 * by whose symbol the pass names it; NULL when the file's own
	 * symbols name the trampolines (ftpatch instrument's). */
	const uintptr_t *prologue_funcs;
};
/* The module whose sites the architecture's site code writes from now
 * on (its targets, and which of its sites were made from prologues:
 * arch/site.h's ftrt_targets and ftrt_prologues; none for a description
 * too old or too small to list them). */
void ftrt_module_use(const struct ftrt_module *m) __attribute__((visibility("hidden")));

/*
 * A module the runtime serves (registry.c): the program first, then each
 * shared object in the order the loader ran their constructors. Records
 * outlive dlclose (unload set), so the trace's metadata can name every
 * module that ran while it was recorded.
 */
/* A module's GOT slots of other modules' functions (patch/libcall.c):
 * found, redirected, whose function could not be found, that could not
 * be written. */
struct ftrt_libcall_stats {
	uint64_t slots, hooked, unresolved, failed;
};
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
	struct ftrt_libcall_stats libcalls; /* what its library-call pass did (patch/libcall.c) */
	/* Its sites made from prologues and, for those made at load, their
	 * functions (the description's, copied at registration: a record
	 * outlives the module, whose description goes with it; the arrays
	 * are the runtime's, kept for the process's life). */
	const uintptr_t *prologues, *prologue_funcs;
	size_t nprologues;
	/* Described by the preloaded runtime when a dlopen mapped it, before
	 * the loader relocated it (process/loader.c): its GOT slots are not
	 * yet what the loader will make them, so its library calls are not
	 * hooked. */
	int unrelocated;
};
/* Module records the runtime keeps (registry.c); past this many loads,
 * records of unloaded modules are reused. */
#define FTRT_MOD_MAX 256
/* record -P's functions left alone because their bytes were not the
 * file's (patch/prologue.c), over the process's life. */
extern uint64_t ftrt_prologue_changed __attribute__((visibility("hidden")));
/* Records reused after FTRT_MOD_MAX modules: their names are lost. */
extern uint64_t ftrt_modules_forgotten __attribute__((visibility("hidden")));
/* Non-zero while this thread runs the runtime's own work that may call
 * the C library (a module's registration and pass, its unregistration,
 * the runtime's own threads): such calls through the program's GOT
 * slots are the runtime's, not the program's, and are never traced as
 * library calls (tracers/libcall.c). */
extern __thread int ftrt_in_runtime __attribute__((tls_model("initial-exec"), visibility("hidden")));
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
int ftrt_register_self(const struct ftrt_module *self, uintptr_t inside);
/* Register a module that no stub describes (the preloaded runtime's:
 * its tables found by tables.c), which lies at the address inside;
 * unrelocated: mapped by a dlopen, not yet relocated (ftrt_mod's
 * unrelocated). 0, or -1. */
int ftrt_module_register_at(struct ftrt_module *m, uintptr_t inside, int unrelocated) __attribute__((visibility("hidden")));
/* After the program's own registration: serve the registrations that
 * came before the runtime started (the preloaded runtime's, whose start
 * comes after the constructors of the shared objects loaded with the
 * program). */
void ftrt_modules_start(void) __attribute__((visibility("hidden")));
/* The process is exiting (lifetime.c): a module unregistered from now on
 * keeps what was built for it, as other threads may still run it. */
void ftrt_modules_exiting(void) __attribute__((visibility("hidden")));
/* A shared object without sites gets a record of this description when
 * the library calls of every module are traced (FTRACE_LIBCALL=nest):
 * its pass hooks its GOT slots (patch/libcall.c), and the metadata names
 * it, so its calls are named. No table, no config, no targets. */
extern const struct ftrt_module ftrt_module_plain __attribute__((visibility("hidden")));
/* What a scan of the loaded objects asks of the layer that hooks library
 * calls (patch/libcall.c): whether to serve an object (want), whether a
 * plain record's hooks are still in place (still: its object was not
 * unloaded and another, or the same, loaded at its place), and, for a
 * scan that runs outside any pass, what must be done before the
 * registry's lock is taken (prepare: the loader's lookups, which take
 * the loader's lock, which a thread running a constructor holds while it
 * waits for the registry's; 0: the object is gone) and undone after
 * (done). */
struct ftrt_scan_calls {
	int (*want)(const struct dl_phdr_info *info);
	int (*still)(int owner);
	int (*prepare)(uintptr_t inside, const char *name);
	void (*done)(void);
};
/* The scan that keeps those records as the loaded objects are: a record
 * (and its pass) for each loaded object calls->want says to serve that
 * has none, and unloaded (its pass's work gone) each plain record whose
 * object is no longer loaded or no longer still. locked: from a pass
 * (the registry's lock held, in the loader's context); else the lock is
 * taken here, and each new object prepared first. Not while the process
 * exits. */
void ftrt_modules_scan(const struct ftrt_scan_calls *calls, int locked) __attribute__((visibility("hidden")));

/* What registry.c sets off when its records change, which it calls
 * through these, never by name: the load-time pass's start (init, before
 * a shared object registers), a module's pass (pass), and the trace's
 * metadata rewritten (changed). Given once, by lifetime.c, before the
 * program's pass. */
struct ftrt_modules_calls {
	void (*init)(void);
	void (*pass)(struct ftrt_mod *md);
	void (*changed)(void);
	void (*gone)(int owner); /* a module was unloaded: what the live part and the subtree filters kept of it goes */
	uint64_t (*stamp)(void); /* the trace's clock now, for a module's load and unload; 0 when no trace is open */
	/* a shared object is about to be registered, before the lock is
	 * taken: what may wait (capture.c asks a socket) */
	void (*adding)(const struct ftrt_module *m);
};
/* The path (malloc'd; NULL: not a loaded object) and the hex GNU
 * build-id ("" for none) of the loaded object holding inside. */
char *ftrt_module_identify(uintptr_t inside, char build_id[129]) __attribute__((visibility("hidden")));
void ftrt_modules_wire(const struct ftrt_modules_calls *c) __attribute__((visibility("hidden")));

/* Exported from the program (ftpatch flags --libs makes the linker
 * export them), called by each module's stub. 0, or -1 when the
 * description is one this runtime cannot serve (the module then runs
 * untraced, its sites calling its own hooks, which return). */
int ftrt_module_register(struct ftrt_module *m);
void ftrt_module_unregister(struct ftrt_module *m);

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
/* ftrt_symbols_mark for the sites s[0, m) of module md, whose sites made
 * at load from prologues (record -P) lie in trampolines no symbol
 * covers: each is named, and classified, by its function's address
 * (md's description's prologue_funcs) instead. */
int ftrt_symbols_mark_mod(const struct ftrt_mod *md, const uintptr_t *s, size_t m, unsigned char *want, unsigned char *marks,
			  int (*pick)(const char *name), const char **names);
/* Say which plain globs of FTRACE_GRAPH_FUNCS named no traced function
 * of the modules registered so far (options.c): once, when the program's
 * initialisers begin, the shared objects loaded with it registered
 * (lifetime.c). */
void ftrt_graph_funcs_check(void) __attribute__((visibility("hidden")));

/* The tracers (tracer.h says which file holds what). */
extern unsigned ftrt_max_depth __attribute__((visibility("hidden")));
extern uint64_t ftrt_thresh_tsc __attribute__((visibility("hidden")));
/* Open the trace in the directory dir (recorded: the binary's recorded
 * location); -1 with *why (what is wrong with dir) when it cannot be made. */
int ftrt_trace_start(const char *dir, int recorded, const char **why);
/* What ftrt_trace_start calls to arm the trace's end at exit (lifetime.c's
 * ftrt_exit_watch), and, for the flight recorder, to take the signals a
 * fault raises so a death writes the rings (process/trap.c's
 * ftrt_trap_fatal): given before the trace can start, so the trace's
 * opening names nothing above it. */
void ftrt_trace_arm(void (*at_exit)(void), void (*fatal)(void)) __attribute__((visibility("hidden")));
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
/* After ftpatch record -p ended the trace (ftrt_trace_end, then this):
 * its descriptors closed, each thread's stream and the directory (its
 * lock let go with it), those still the runtime's alone (trace.c). */
void ftrt_trace_close(void) __attribute__((visibility("hidden")));
/* After such an end (ftrt_end_detached 2), before the next trace opens
 * (ftpatch record -p again): every thread's buffer emptied for a new
 * stream, the counts zeroed; the end's flags (ftrt_ending,
 * ftrt_end_detached) are left up until the new trace is open
 * (ftrt_trace_start lowers them). 0; -EBUSY when a thread is still
 * inside the tracer (its buffer held past the end's wait): nothing
 * changed (end.c). */
int ftrt_trace_again(void) __attribute__((visibility("hidden")));
/* The fatal signal whose handler ends the trace (trap.c: the flight
 * recorder's rings written as the program dies), for the metadata. */
extern int ftrt_end_signal __attribute__((visibility("hidden")));
/* ftpatch record -p ended the trace (live.c's ftrt_live_end): 1 while
 * it ends it, the final metadata saying so (META_KEY_DETACHED); 2 once
 * ended, after which no end (the process's exit, an exec) writes again,
 * until another trace opens (ftrt_trace_again, then ftrt_trace_start:
 * 0). The process runs on. */
extern int ftrt_end_detached __attribute__((visibility("hidden")));
/* The process is ending with status, what exit or _exit was given
 * (lifetime.c's exit handler, exit.c's _exit): its low 8 bits, what the
 * parent's wait sees, go in the metadata (exit_code). Not in a child
 * that shares its parent's memory (vfork). Async-signal-safe. */
void ftrt_trace_status(int status) __attribute__((visibility("hidden")));
/* Before an exec (exec.c): write this thread's buffer out; tracing goes
 * on if the exec fails. Async-signal-safe. */
void ftrt_trace_exec(void) __attribute__((visibility("hidden")));
/* Whether a trace is open (record/state.c). */
int ftrt_tracing(void);
/*
 * The environment (env.c): whether the process runs in secure-execution
 * mode (AT_SECURE: setuid, setgid, file capabilities), and every FTRACE*
 * variable the runtime reads, through ftrt_env, which gives NULL there.
 * ftrt_env_capture notes the settings the process started with (at its
 * first pass); a child given an environment of its own with no FTRACE*
 * variable gets them (exec.c), and preloaded the LD_PRELOAD entry that
 * loads the runtime: ftrt_child_env_size says how many
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
/* A session (session.c): ftrt_session_open makes or joins the session
 * at path (as ftrt_dir_make makes a directory) and makes this process's
 * image in it, whose descriptor it returns (-1 with *why set);
 * ftrt_session_image makes this process's image in the session already
 * open (forked: a child just forked, whose first it is), a descriptor
 * or -errno; ftrt_image_no is which image of its process the last one
 * made is (1, then one more at each exec). */
int ftrt_session_open(const char *path, int recorded, const char **why) __attribute__((visibility("hidden")));
long ftrt_session_image(int forked) __attribute__((visibility("hidden")));
/* The session's directory let go (its descriptor, and the shared lock
 * that says the session is in use): ftpatch record -p's end. */
void ftrt_session_close(void) __attribute__((visibility("hidden")));
extern unsigned ftrt_image_no __attribute__((visibility("hidden")));
/* The image's parent process when it was made. */
extern int ftrt_image_ppid __attribute__((visibility("hidden")));
/* Whether that image is a forked child's (ftrt_session_image's forked). */
extern int ftrt_image_forked __attribute__((visibility("hidden")));

#endif
