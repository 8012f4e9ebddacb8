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

/* One site to change: from old to new, len bytes at ip (x86-64: 5 or 6,
 * one instruction either side). */
struct ftrt_poke {
	uintptr_t ip;
	unsigned char len;
	unsigned char old[8], new[8];
};

/* text.c. Open what writes code (/proc/self/mem) and register for the
 * core-serialising membarrier: 0, or -errno (ENOSYS: no membarrier;
 * EACCES or EPERM: /proc/self/mem refused). Again after a fork: the
 * child's registration is its own. */
int ftrt_text_open(void) HIDDEN;
/* Queue a write of len (at most 8) bytes at addr, in address order
 * after the last queued; ftrt_text_flush writes the queued writes: each
 * run of them close together in one write of its span, the bytes
 * between them as they are. 0, or -errno. */
int ftrt_text_queue(uintptr_t addr, const void *bytes, size_t len) HIDDEN;
int ftrt_text_flush(void) HIDDEN;
/* Queue and write every site's new bytes whole (ftrt_text_queue,
 * ftrt_text_flush): 0, or the first -errno. */
int ftrt_text_put_new(const struct ftrt_poke *p, size_t n) HIDDEN;
/* Make every thread of the process serialise its instruction stream
 * before it runs another instruction (membarrier SYNC_CORE). */
void ftrt_text_sync(void) HIDDEN;
/* Why ftrt_text_open failed, for the API's caller. */
const char *ftrt_text_why(void) HIDDEN;

/* poke.c. Apply the batch p[0, n), sorted by ip, while threads run. 0,
 * or -errno with nothing changed (a write refused before the first
 * site's first byte), or with the batch half applied (a write refused
 * later: each site is its old or its new instruction, and a thread
 * meeting one runs it). */
int ftrt_arch_poke(struct ftrt_poke *p, size_t n) HIDDEN;
/* Why this architecture's port cannot change sites while threads run,
 * or NULL when it can. */
const char *ftrt_arch_live_refused(void) HIDDEN;
/* In a child after fork (single-threaded): finish the batch a thread of
 * the parent was applying when it forked, each site given its new
 * instruction whole, so no site of the child keeps an int3. */
void ftrt_arch_poke_after_fork(void) HIDDEN;
/* The SIGTRAP the runtime handles (trap.c asks): 1 when the trap is a
 * site being changed, or one just changed, and the thread will go on
 * (uc adjusted); 0 when it is the program's. */
int ftrt_arch_trap(const siginfo_t *si, void *uc) HIDDEN;
/* What the site at ip holds: 1 enabled (a call of the runtime, or a jump
 * to a trampoline of its own), 0 disabled (a NOP), -1 anything else; its
 * length in *len. ftrt_targets is its module's. */
int ftrt_arch_live_state(uintptr_t ip, int *len) HIDDEN;
/* The bytes that enable the site at ip of len bytes, at a function's
 * entry or after its prologue (want), into buf: a call of the module's
 * caller trampoline, which serves every tracer (ftrt_targets). 0, or -1
 * out of reach. */
int ftrt_arch_live_call(uintptr_t ip, int len, int want, unsigned char *buf) HIDDEN;

/* The bytes that disable the enabled site at ip of len bytes, into buf
 * (x86-64: the load-time pass's NOP; arm64: its bl a NOP, an area's
 * `mov x9, x30` kept). */
void ftrt_arch_live_off(uintptr_t ip, int len, unsigned char *buf) HIDDEN;
/* Whether the enabled site at ip calls a trampoline that follows the
 * process-wide tracer, which a change of tracer need not rewrite. */
int ftrt_arch_live_shared(uintptr_t ip, int len) HIDDEN;

/* The bytes that make the site at ip of len bytes (want: where it is,
 * as ftrt_arch_live_call's) call the ops record rec (ops.c: one ops's,
 * or module owner's list), through a trampoline made for the record
 * and the module (x86-64), into buf. 0, or -1 (no trampoline in reach,
 * or none could be made). */
struct ftrt_ops;
int ftrt_arch_live_ops(uintptr_t ip, int len, int want, const struct ftrt_ops *rec, int owner, unsigned char *buf) HIDDEN;
/* The ops record the enabled site at ip of len bytes calls through its
 * trampoline; NULL when it calls none (the tracer's forms). */
const struct ftrt_ops *ftrt_arch_live_ops_rec(uintptr_t ip, int len) HIDDEN;
/* Where the site at ip of len bytes calls (its call's target, through a
 * veneer), or 0 when it calls nothing. */
uintptr_t ftrt_arch_live_target(uintptr_t ip, int len) HIDDEN;
/* The tracer, from a list of ops that has it (ops.c): the function at
 * ip, with its registers as the ops caller saved them. */
struct ftrace_regs;
void ftrt_arch_ops_tracer(uintptr_t ip, struct ftrace_regs *fregs) HIDDEN;

/* ops.c. The record site i of l should call (one ops's, or its module's
 * list's), or NULL: no ops wants it; and in *direct the direct
 * trampoline it should call instead when in reach (one direct ops with
 * no callback alone wants it), else 0. */
struct live_mod;
const struct ftrt_ops *ftrt_ops_site(const struct live_mod *l, size_t i, uintptr_t *direct) HIDDEN;
/* Whether a is, or was, a direct trampoline of an ops: a site that calls
 * it is enabled (poke.c). */
int ftrt_ops_direct_known(uintptr_t a) HIDDEN;
/* The bytes that make the site at ip of len bytes (want: where it is)
 * call the direct trampoline addr, into buf: 0, or -1 (out of reach, or
 * not an entry site). */
int ftrt_arch_live_direct(uintptr_t ip, int len, int want, uintptr_t addr, unsigned char *buf) HIDDEN;
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

/* snapshot.c: a snapshot of the flight recorder into dir (NULL or "":
 * snapshot-N in the trace's directory), the directory made into made
 * (size bytes). 0, or -errno with ftrt_snapshot_why saying why. */
int ftrt_snapshot(const char *dir, char *made, size_t size) HIDDEN;
const char *ftrt_snapshot_why(void) HIDDEN;

/* ctl.c: listen for ftpatch ctl when FTRACE_CTL=1 (lifetime.c, when the
 * program's initialisers begin). */
void ftrt_ctl_start(void) HIDDEN;

/* live.c: after a module's load-time pass (lifetime.c wires it), the
 * live filter calls made so far applied to its sites. With the
 * registry's lock held. */
struct ftrt_mod;
void ftrt_live_added(const struct ftrt_mod *md) HIDDEN;

/* live.c: at start, in a process that may patch itself (trap.c). */
void ftrt_live_arm(void) HIDDEN;

/* live.c, for the trap: whether ip is a site of a module the live index
 * holds (read without a lock: a module's sites stay while it runs). */
int ftrt_live_is_site(uintptr_t ip) HIDDEN;

/* trap.c. Take SIGTRAP (once): the program's action, as it was, is kept
 * and run for every trap that is not the runtime's. 0, or -errno. */
int ftrt_trap_install(void) HIDDEN;
/* Take the signals a fault raises, and SIGABRT (the flight recorder,
 * at the trace's start): a death of one writes the rings first. */
void ftrt_trap_fatal(void) HIDDEN;
/* At start, before any thread: arm the wrappers when the program links
 * the API. */
void ftrt_trap_start(void) HIDDEN;
/* Whether SIGTRAP is kept out of every mask the program sets from now
 * on (live patching may happen in this process). */
extern int ftrt_trap_armed HIDDEN;

#endif
