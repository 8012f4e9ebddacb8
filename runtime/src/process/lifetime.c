/*
 * When tracing begins and ends: before the program's first constructor,
 * after its last destructor.
 *
 * Begin. The load-time pass (ftrt_init, patch.c), which starts the
 * trace, runs from the program's .preinit_array: the loader (dynamic
 * link) or __libc_start_main (static) runs it before any initialiser.
 * In a dynamic program that is before every shared object's (the loader
 * runs those next, dependencies first; each module's stub registers its
 * table first of its object's, see module/module.c), and before the
 * program's own .init_array, whatever the priorities in it (C
 * constructor(N), C++ init_priority(N), C++ globals). Only preinit
 * functions that the program's own objects bring come before (they are
 * linked first). Only an executable has a .preinit_array (the linker
 * refuses one in a shared object, which links the module stub instead of
 * the runtime); this file comes with the trace (the link names
 * ftrt_preinit undefined: runtime.LinkFlags).
 *
 * The C library is relocated and its early initialisation done by then,
 * but in a dynamic program its own initialiser, which sets environ from
 * the third argument every init function gets, runs later: environ is
 * NULL yet, and getenv would find nothing. It is set here, to the array
 * the C library sets it to.
 *
 * End. exit runs, last registered first, the functions registered with
 * atexit and __cxa_atexit (C++ static destructors among them), and the
 * ones that run the .fini_array functions (C destructors): in a dynamic
 * program the loader's _dl_fini, which __libc_start_main registers just
 * before the program's .init_array runs, and which runs the program's
 * .fini_array and then every shared object's, each object's
 * __cxa_atexit functions with it (__cxa_finalize); in a static program
 * call_fini, which __libc_start_main registers before the .preinit_array
 * runs. The trace ends at the later of two points of exit:
 *
 *   end_handler   registered with on_exit when the trace starts
 *                 (ftrt_exit_watch): as __cxa_atexit with no object, and
 *                 unlike atexit, it belongs to no object, whose
 *                 __cxa_finalize (_dl_fini's of the program) would run it
 *                 among that object's destructors; and it is given the
 *                 status exit was called with (main's return value), for
 *                 the metadata (exit_code). Registered from the
 *                 .preinit_array (or a shared object's initialiser) in a
 *                 dynamic program, it is the first, and runs after every
 *                 other exit function, _dl_fini included;
 *   end_fini      the first entry of the program's .fini_array (priority
 *                 0), which runs last of them: after end_handler in a
 *                 static program, or where the trace started late (a
 *                 module's registration at dlopen) in a dynamic one.
 *
 * Which is the later is known when the handler is registered: the fini
 * entry runs after it in a static program (AT_BASE 0: no interpreter
 * loaded it) and once the program's .init_array has begun (began, set by
 * its first entry); before it, or never (exit from a shared object's
 * constructor, before __libc_start_main registered _dl_fini), otherwise.
 * quick_exit ends the trace from a handler of its own (trace.c), and
 * _exit from the runtime's (exit.c).
 *
 * end_fini, and end_handler should it come first, also tell the module
 * records that the process is exiting before any shared object's
 * destructor unregisters its module (_dl_fini runs the program's
 * .fini_array first): nothing is unmapped then, as other threads may
 * still run their code.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "core/clock.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "patch/libcall.h"
#include "patch/pass.h"
#include "patch/patch.h"
#include "patch/prologue.h"
#include "process.h"
#include "record/tracer.h"
#include "tracers/tracers.h"

extern char **environ;

/* Weak: a program with no instrumented object has no table at all. */
extern const uintptr_t __start___mcount_loc[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___mcount_loc[] __attribute__((weak, visibility("hidden")));
/* The compiler's list of patchable areas (-fpatchable-function-entry),
 * which the linker brackets alike; empty without it. */
extern const uintptr_t __start___patchable_function_entries[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___patchable_function_entries[] __attribute__((weak, visibility("hidden")));

#ifdef FTRT_PRELOAD
/*
 * Preloaded (runtime.SharedLibName, into a program linked without the
 * runtime): no linker bracketed the program's tables for the runtime,
 * nor gave it a .preinit_array. The program's module is described at
 * start (ftrt_init): its tables found from its file (core/tables.c), its
 * targets the runtime's hooks, which its sites call through its PLT or
 * GOT, and trampolines within reach of its code (ftrt_arch_targets_near).
 * The shared objects loaded with it that have sites but no stub are
 * described alike, each by a record of preloaded[] (process/preload.c),
 * and so are those a dlopen loads later (process/loader.c).
 */
static struct ftrt_module self = {
	.size = sizeof self,
	.version = FTRT_MODULE_VERSION,
	.config = &ftrt_config,
};
#else
/*
 * The program's own module: its table, its config record, and the
 * runtime's hooks and trampolines, which its sites call directly.
 */
static const struct ftrt_module self = {
	.size = sizeof self,
	.version = FTRT_MODULE_VERSION,
	.start = __start___mcount_loc,
	.stop = __stop___mcount_loc,
	.areas = __start___patchable_function_entries,
	.areas_end = __stop___patchable_function_entries,
	.config = &ftrt_config,
	.targets = FTRT_TARGETS,
};
#endif

#ifndef FTRT_PRELOAD
/* The program: the first object dl_iterate_phdr reports, its load bias
 * and its segments' extent. */
struct first {
	uintptr_t bias, lo, hi;
};

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct first *f = data;
	f->bias = info->dlpi_addr;
	f->lo = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		f->lo = a < f->lo ? a : f->lo;
		f->hi = a + ph->p_memsz > f->hi ? a + ph->p_memsz : f->hi;
	}
	return 1;
}

/*
 * The program's own module as linked (self), or, in a program ftpatch
 * instrument made from it, the tables of its file (core/tables.c, as
 * the preloaded runtime reads them): instrument moved functions'
 * prologues into trampolines, each an entry site of its own listed in
 * the file's prologue table (FTRT_PROLOGUE_SECTION), which no linker
 * bracketed. The record then holds the compiler's sites and the
 * trampolines', the patchable areas likewise, and which sites were
 * made from prologues, so that the pass keeps every register at them
 * (their functions were compiled without tracing flags). With record
 * -P, the sites made at load from the prologues it chose are added
 * (patch/prologue.c), as the preloaded runtime adds them. A file that
 * cannot be read, or has neither, leaves self as linked.
 */
static const struct ftrt_module *linked_self(void)
{
	static struct ftrt_module me;
	struct first f = { 0 };
	struct ftrt_tables t;
	dl_iterate_phdr(first_object, &f);
	me = self;
	int changed = 0;
	if (ftrt_tables_read("/proc/self/exe", f.bias, 0, &t) == 0 && t.prologues != t.prologues_end) {
		me.start = t.start, me.stop = t.stop;
		me.areas = t.areas, me.areas_end = t.areas_end;
		me.prologues = t.prologues, me.prologues_end = t.prologues_end;
		changed = 1;
	}
	if (ftrt_env(ENV_PROLOGUE_SOCKET) && f.hi > f.lo) {
		char id[129];
		char *named = ftrt_module_identify(f.lo, id);
		char *real = realpath("/proc/self/exe", NULL);
		if (ftrt_prologue_make(&me, real ? real : "/proc/self/exe", id, f.bias, f.lo, f.hi) > 0)
			changed = 1;
		free(named);
		free(real);
	}
	return changed ? &me : &self;
}
#endif

/*
 * Register the program's own module, which runs its load-time pass: from
 * the program's .preinit_array (ftrt_preinit), before any initialiser of
 * the program or of a shared object; a shared object's registration
 * calls it too (the registry's init), and finds it done. The link flags
 * name ftrt_init as undefined (-u), which pulls this object (and with it
 * the preinit entry, the pass and the trace) out of the archive even
 * into a program whose sites call no hook (-fpatchable-function-entry).
 */
void ftrt_init(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	ftrt_clock_init(); /* before any GOT slot is redirected (patch/libcall.c) */
#ifdef FTRT_PRELOAD
	ftrt_pass_late = ftrt_preload_late();
	uintptr_t inside = getauxval(AT_ENTRY);
	struct ftrt_tables t;
	if (ftrt_preload_describe(&self, "/proc/self/exe", inside, &t) != 0)
		ftrt_say("ftrt: the program's site tables cannot be read; its sites stay as they are, untraced\n");
	ftrt_register_self(&self, inside);
	ftrt_modules_start();
	ftrt_preload_scan();
	ftrt_loader_watch(); /* and those a dlopen loads later (loader.c) */
#else
	/* targets[0], its first hook, is an address inside the program. */
	ftrt_register_self(linked_self(), self.targets[0]);
#endif
}

/* A module's load-time pass, then what live calls chose before it was
 * loaded. */
static void pass(struct ftrt_mod *md)
{
	/* FTRACE_LIBCALL=nest: the objects without sites loaded with the
	 * program, or with a shared object with sites, served too (their
	 * library calls hooked: patch/libscan.c), after the program's pass,
	 * which chooses the tracer; before a shared object's, so that those
	 * unloaded since the last scan are forgotten before anything of
	 * the new one's reads the records (the arguments' capture reads
	 * every slot's name). */
	int sited = md->desc != &ftrt_module_plain;
	/* Not while a dlopen's objects are mapped but not relocated
	 * (md->unrelocated): their slots are not yet the loader's. */
	if (sited && md->owner != 1 && !md->unrelocated && ftrt_libcalls_on(LIBCALL_NEST))
		ftrt_libcalls_scan_locked();
	ftrt_pass(md);
	ftrt_live_added(md);
	if (sited && md->owner == 1 && ftrt_libcalls_on(LIBCALL_NEST))
		ftrt_libcalls_scan_locked();
}

/* A module was unloaded: what the live part and the subtree filters
 * kept of it goes. */
static void gone(int owner)
{
	ftrt_subtree_release(owner);
	ftrt_live_forget(owner);
	ftrt_libcalls_release(owner);
}

/* The trace's clock for a module's load and unload (0: no trace). */
static uint64_t module_stamp(void)
{
	return ftrt_tracing() ? ftrt_now() : 0;
}

/* In the program's .preinit_array; called with main's arguments. */
void ftrt_preinit(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	if (!environ)
		environ = envp;
	/* The runtime's parts below call up only through what they are
	 * given here. */
	static const struct ftrt_modules_calls calls = {
		.init = ftrt_init,
		.pass = pass,
		.changed = ftrt_trace_meta_update,
		.gone = gone,
		.stamp = module_stamp,
		.adding = ftrt_capture_adding,
	};
	static const struct ftrt_patch_calls patch = {
		.trap_install = ftrt_trap_install,
		.trap_release = ftrt_trap_release,
		.tracer = ftrt_arch_ops_tracer,
		.added = ftrt_capture_added,
		.unwind_hooked = ftrt_unwind_hooked, /* weak: NULL without C++ catches */
		.libcall_entry = ftrace_libcall,
	};
	ftrt_modules_wire(&calls);
	ftrt_patch_wire(&patch);
	ftrt_tracers_wire();
	ftrt_trace_arm(ftrt_exit_watch, ftrt_trap_fatal);
	ftrt_trap_start();
	ftrt_in_runtime++;
	ftrt_init();
	ftrt_in_runtime--;
}

static int began;       /* the program's .init_array began */
static int fini_after;  /* end_fini runs after end_handler */
static int handler_ran, fini_ran;

/* The program's initialisers begin: every shared object loaded with it
 * has registered its sites by now (their initialisers ran first). */
static void begin(void)
{
	began = 1;
	ftrt_in_runtime++; /* the runtime's own calls of the C library: never library calls of the program's */
	ftrt_graph_funcs_check();
	ftrt_in_runtime--;
}

/* Right after: the runtime's own threads, when asked for (ftpatch ctl's
 * server, the writer thread), once the C library's initialisers have
 * run. */
static void threads(void)
{
	ftrt_in_runtime++;
	ftrt_ctl_start(); /* when FTRACE_CTL asks (ftrt_ctl_wanted) */
	ftrt_writer_start();
	ftrt_capture_start(); /* when FTRACE_ARGS or FTRACE_RETVAL asks */
	ftrt_in_runtime--;
}

static void end_handler(int status, void *unused)
{
	(void)unused;
	handler_ran = 1;
	ftrt_in_runtime++;
	ftrt_trace_status(status);
	ftrt_modules_exiting();
	if (!fini_after || fini_ran)
		ftrt_trace_end();
	ftrt_in_runtime--;
}

static void end_fini(void)
{
	fini_ran = 1;
	ftrt_in_runtime++;
	ftrt_modules_exiting();
	if (handler_ran)
		ftrt_trace_end();
	ftrt_in_runtime--;
}

#ifdef FTRT_PRELOAD
/*
 * Preloaded, the runtime starts from its own first initialiser, with
 * main's arguments: after those of the shared objects loaded with the
 * program (dependencies first: the loader runs a preloaded object's
 * close to last), whose stubs' registrations wait for it
 * (ftrt_modules_start), and before the program's own. The program's
 * initialisers begin right after (begin), and its threads start then.
 * Its last finaliser (end_fini) runs from the loader's _dl_fini, after
 * the program's; end_handler, registered before __libc_start_main
 * registers _dl_fini, runs after it and ends the trace.
 */
static void preload_start(int argc, char **argv, char **envp)
{
	ftrt_preinit(argc, argv, envp);
	begin();
	threads();
}

__attribute__((used, section(".init_array.00000"))) static void (*init_entry)(int, char **, char **) = preload_start;
__attribute__((used, section(".fini_array.00000"))) static void (*fini_entry)(void) = end_fini;
#else
/* Priority 0: what constructor(0) and destructor(0) would make, without
 * the warning that priorities up to 100 are the implementation's (we
 * are). */
__attribute__((used, section(".preinit_array"))) static void (*preinit_entry)(int, char **, char **) = ftrt_preinit;
__attribute__((used, section(".init_array.00000"))) static void (*init_entry)(void) = begin;
__attribute__((used, section(".init_array.00001"))) static void (*threads_entry)(void) = threads;
__attribute__((used, section(".fini_array.00000"))) static void (*fini_entry)(void) = end_fini;
#endif

extern int on_exit(void (*fn)(int, void *), void *arg);

void ftrt_exit_watch(void)
{
	fini_after = !getauxval(AT_BASE) || began;
	on_exit(end_handler, NULL);
}
