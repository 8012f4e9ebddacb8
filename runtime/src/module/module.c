/*
 * The module stub: what a shared object with sites links instead of the
 * runtime (`ftpatch flags --libs --shared`), so that one runtime, the
 * program's, serves every module of the process.
 *
 * It holds the object's own copies of the hooks its compiler called and
 * of the trampolines `ftpatch enable` writes calls to (module/x86_64/entry.S),
 * all hidden: the object's sites reach them with rel32 calls, wherever
 * the loader puts it. Its constructor hands the runtime a description of
 * the object (struct ftrt_module: its table, its config record, those
 * addresses); the runtime runs the load-time pass over the object's
 * table and fills the slots its trampolines jump through. Its destructor
 * takes the description back before dlclose unmaps the object.
 *
 * A program without the runtime (or linked without the flags that export
 * its registration) leaves the stub on its own: the object's sites call
 * hooks that return, and it runs untraced.
 *
 * Built like the runtime (no instrumentation, general registers only);
 * hidden throughout, so no module's stub is ever bound to another's.
 */
#define _GNU_SOURCE /* secure_getenv */
#include <stdlib.h>
#include <unistd.h>

#include "core/ftrt.h"

extern const uintptr_t __start___mcount_loc[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___mcount_loc[] __attribute__((weak, visibility("hidden")));
/* The compiler's list of patchable areas (-fpatchable-function-entry),
 * which the linker brackets alike; empty without it. */
extern const uintptr_t __start___patchable_function_entries[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___patchable_function_entries[] __attribute__((weak, visibility("hidden")));

/* This object's hooks and trampolines (the architecture's entry.S), hidden. */
#define HIDDEN __attribute__((visibility("hidden")))
#define DECLARE_HIDDEN(id, sym) void sym(void) HIDDEN;
FTRT_TARGETS_ARCH(DECLARE_HIDDEN)
extern uintptr_t ftrt_module_slots[FTRT_SLOTS] HIDDEN;
#if defined(__x86_64__)
_Static_assert(FTRT_SLOTS == 6, "module/x86_64/entry.S has a JUMP and a slot per trampoline of FTRT_T_CALLER5..FTRT_T_STUB");
#elif defined(__aarch64__)
_Static_assert(FTRT_SLOTS == 3, "module/arm64/entry.S has a JUMP and a slot per trampoline of FTRT_T_CALLER..FTRT_T_STUB");
#endif

/* The program's runtime, if it has one and exports it. Weak: the object
 * still loads into a program without it. */
int ftrt_module_register(struct ftrt_module *m) __attribute__((weak));
void ftrt_module_unregister(struct ftrt_module *m) __attribute__((weak));

/* Written by the runtime (handle) and by nothing else: not const. */
static struct ftrt_module self = {
	.size = sizeof self,
	.version = FTRT_MODULE_VERSION,
	.start = __start___mcount_loc,
	.stop = __stop___mcount_loc,
	.areas = __start___patchable_function_entries,
	.areas_end = __stop___patchable_function_entries,
	.config = &ftrt_config,
	.targets = FTRT_TARGETS,
	.slots = ftrt_module_slots,
};

/*
 * The first of the object's initialisers (priority 0: first in its
 * .init_array), so the object's sites are settled before any constructor
 * of its own runs, whatever its priority. The link flags name it
 * undefined (-u) to pull it out of the archive. The program's runtime
 * started at its .preinit_array, before any shared object's initialiser.
 */
__attribute__((visibility("hidden"))) void ftrt_module_init(void)
{
	if (ftrt_module_register) {
		ftrt_module_register(&self);
		return;
	}
	const char *mode = secure_getenv(ENV_TRACER); /* none in a secure-execution process */
	if (mode && *mode) {
		static const char msg[] = "ftrt: a shared object with sites is loaded into a program without the ftpatch "
					  "runtime (link the program with $(ftpatch flags --libs)); it runs untraced\n";
		write(2, msg, sizeof msg - 1);
	}
}

/*
 * The last of the object's finalisers (priority 0: first in its
 * .fini_array, which runs backwards): its destructors, whatever their
 * priority, run traced, and at dlclose none runs after the runtime
 * released what it built for the object.
 */
static void ftrt_module_fini(void)
{
	if (ftrt_module_unregister && self.handle)
		ftrt_module_unregister(&self);
}

/* What constructor(0) and destructor(0) would make, without the warning
 * that priorities up to 100 are the implementation's (we are). */
__attribute__((used, section(".init_array.00000"))) static void (*init_entry)(void) = ftrt_module_init;
__attribute__((used, section(".fini_array.00000"))) static void (*fini_entry)(void) = ftrt_module_fini;
