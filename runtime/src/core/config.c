/*
 * The config record: what `ftpatch enable` baked into this file.
 *
 * One record per module that links the runtime, in a section of its own
 * (".ftrt_config") so that ftpatch finds it by section name in the linked
 * file and rewrites it there, beside the sites it patches. The program
 * never writes it: the section is allocated read-only ("a"), so at run
 * time it lies in a read-only segment like .rodata.
 *
 * As linked, the record holds only its magic and size: tracer 0 and no
 * flags mean "not patched", and the load-time pass does what the
 * environment asks (FTRACE, FTRACE_FILTER). After `ftpatch enable`, flags
 * has FTRT_CFG_PATCHED: every site in the table is already a NOP or a
 * call into the runtime, and the pass only checks them, then starts the
 * recorded tracer (see ftrt_init in patch.c).
 *
 * used: kept by the compiler though nothing in this file reads it.
 * retain (SHF_GNU_RETAIN): kept by `ld --gc-sections` though nothing
 * references the section (patch.c does, but a program may be linked with
 * a runtime whose pass is replaced, as the tests do).
 * hidden: each module (an executable, a shared object) reads its own
 * record; a reference must never be bound to another module's by symbol
 * interposition.
 */
#include "ftrt.h"

__attribute__((section(FTRT_CFG_SECTION), used, retain, visibility("hidden")))
const struct ftrt_config ftrt_config = {
	.magic = FTRT_CFG_MAGIC,
	.size = sizeof(struct ftrt_config),
};
