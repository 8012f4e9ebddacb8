/*
 * Changing sites while the program's threads run them (the live part,
 * ftrace.h's API): what live.c, text.c, trap.c and the architecture's
 * poke.c share.
 *
 *   live.c   the API's work (filter, tracer, pause), one batch of
 *            changes at a time
 *   liveindex.c  the sites of every module by function name
 *   poke.c   the architecture's protocol for one batch (x86-64: int3 on
 *            each site's first byte, sync every core, the rest, sync,
 *            the first byte), and what a thread that meets a site being
 *            changed does (x86-64: the SIGTRAP it takes)
 *   text.c   writing code that may be running: through /proc/self/mem,
 *            never by making a page writable; syncing every core
 *            (membarrier)
 *   trap.c   SIGTRAP: the runtime's handler first, the program's after
 *            it, and the program's calls that would block or take it
 */
#ifndef FTRT_LIVE_H
#define FTRT_LIVE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))

#include "arch/poke.h"

/* ops.c. The record site i of l should call (one ops's, or its module's
 * list's), or NULL: no ops wants it; and in *direct the direct
 * trampoline it should call instead when in reach (one direct ops with
 * no callback alone wants it), else 0. */
struct live_mod;
const struct ftrt_ops *ftrt_ops_site(const struct live_mod *l, size_t i, uintptr_t *direct) HIDDEN;
/* Whether any ops is registered. */
int ftrt_ops_registered(void) HIDDEN;
/* A module's pass is done (live.c's ftrt_live_added): the registered
 * ops that choose its functions get them. With the registry's lock. */
struct ftrt_mod;
void ftrt_ops_added(const struct ftrt_mod *md) HIDDEN;

/* live.c, for ops.c (with the registry's lock held): ready to patch
 * (SIGTRAP, the writer, every module indexed), 0 or -errno; every
 * site of module owner (0: of every module) made to call what the
 * tracer and the ops want (0, or -errno); whether a glob list (compiled
 * into g, or g NULL) chooses a function's name (C++: cxx). */
int ftrt_live_prepare(void) HIDDEN;
int ftrt_live_resite(int owner) HIDDEN;
struct ftrt_globs;
int ftrt_live_chooses(const char *list, const struct ftrt_globs *g, const char *name, int cxx) HIDDEN;

/* How a live filter call changes what it chooses (and the rest): set
 * (chosen on, the rest off), enable, disable. */
enum { OP_SET, OP_ENABLE, OP_DISABLE };

/* libcall.c, for the live filters (FTRACE_LIBCALL on): the library-call
 * slots of every loaded module whose function list chooses, made traced
 * or not as op says; the slots changed, or -errno. prepare, before the
 * registry's lock is taken, looks up the functions of the lazy slots it
 * will make traced (the loader's lookups take the loader's lock);
 * finish, after, forgets them. added: op replayed on a module just
 * loaded (ftrt_live_added), with the lock held. */
void ftrt_libcalls_live_prepare(int op, const char *list) HIDDEN;
int ftrt_libcalls_live(int op, const char *list) HIDDEN;
int ftrt_libcalls_live_module(const struct ftrt_mod *md, int op, const char *list) HIDDEN;
void ftrt_libcalls_live_finish(void) HIDDEN;
/* In a child after fork: the lock prepare takes, which a thread of the
 * parent may have held, free (libscan.c's rescans take it too). */
void ftrt_libcalls_after_fork(void) HIDDEN;

/* live.c: the API's work (api.c), each 0 or more, or -errno with
 * ftrt_live_why saying why. The filters return the sites changed. */
int ftrt_live_set(const char *globs) HIDDEN;
int ftrt_live_enable(const char *globs) HIDDEN;
int ftrt_live_disable(const char *globs) HIDDEN;
int ftrt_live_tracer(const char *name) HIDDEN;
const char *ftrt_live_tracer_name(void) HIDDEN;
void ftrt_live_pause(int pause) HIDDEN;
size_t ftrt_live_enabled(void) HIDDEN;
const char *ftrt_live_why(void) HIDDEN;
/* live.c: set when ftpatch attached to the process (ctl.c's
 * ftrt_attach): every site changed live from then on keeps its length
 * (ftrt_arch_live_call's whole), so that a detach can give it back the
 * bytes it had (ftrt_live_restore) with no thread returning into them. */
extern int ftrt_live_whole HIDDEN;
/* live.c: why is what ftrt_live_why says next; returns err. */
int ftrt_live_fail(int err, const char *why) HIDDEN;

/* liveout.c. ftpatch record -p, through ctl.c: where the next trace
 * opens (dir, an absolute path; before the enable that opens it), and
 * its end, every site disabled first (the sites disabled), after which
 * the process records nothing until another record -p gives a
 * directory again. For live.c: the trace opened at an enable when none
 * is, with tracer (the one asked for) when none is chosen yet; 0 or
 * -errno. */
int ftrt_live_out(const char *dir) HIDDEN;
int ftrt_live_end(void) HIDDEN;
/* live.c, for ftrt_live_end, every site disabled: each site that was
 * disabled when first indexed given back the very bytes it had then (a
 * call of __fentry__ through the GOT, a NOP of the compiler's or of
 * recordmcount's), where a live disable leaves its own (the compare,
 * poke.c); then SIGTRAP's action the program's again (trap.c). 0, or
 * -errno with ftrt_live_why saying why. */
int ftrt_live_restore(void) HIDDEN;
int ftrt_live_open_trace(int tracer) HIDDEN;

/* ctl.c: listen for ftpatch ctl when FTRACE_CTL=1 (lifetime.c, when the
 * program's initialisers begin). */
void ftrt_ctl_start(void) HIDDEN;

/* live.c: after a module's load-time pass (lifetime.c wires it), the
 * live filter calls made so far applied to its sites. With the
 * registry's lock held. */
struct ftrt_mod;
void ftrt_live_added(const struct ftrt_mod *md) HIDDEN;

/* The live part's index of module owner's sites goes: the module was
 * unloaded (lifetime.c wires it to the registry). */
void ftrt_live_forget(int owner) HIDDEN;

/* live.c: at start, in a process that may patch itself (trap.c). */
void ftrt_live_arm(void) HIDDEN;

/* live.c, for the trap: whether ip is a site of a module the live index
 * holds (read without a lock: a module's sites stay while it runs). */
int ftrt_live_is_site(uintptr_t ip) HIDDEN;

#endif
