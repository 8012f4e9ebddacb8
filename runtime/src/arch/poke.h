/*
 * Writing code while the program's threads run it: what the live part
 * (patch/live.c, patch/ops.c) and the SIGTRAP handler (process/trap.c)
 * ask of the ISA's protocol (poke.c of each ISA) and of text.c, which
 * writes through /proc/self/mem and syncs every core; and the ISA's
 * reading and making of a site's enabled forms (poke.c, opstramp.c).
 *
 *   poke.c   the architecture's protocol for one batch (x86-64: int3 on
 *            each site's first byte, sync every core, the rest, sync,
 *            the first byte), and what a thread that meets a site being
 *            changed does (x86-64: the SIGTRAP it takes)
 *   text.c   writing code that may be running: through /proc/self/mem,
 *            never by making a page writable; syncing every core
 *            (membarrier)
 *   site.c   the direct trampolines an ops was given (ftrt_arch_direct_*)
 */
#ifndef FTRT_ARCH_POKE_H
#define FTRT_ARCH_POKE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "site.h"

#ifndef HIDDEN
#define HIDDEN __attribute__((visibility("hidden")))
#endif

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
/* ftrt_text_open for writes of data that no thread runs (RELRO):
 * /proc/self/mem alone, without the membarrier's registration and the
 * queue's buffer, which only code needs. 0, or -errno. */
int ftrt_text_open_data(void) HIDDEN;
/* Close what ftrt_text_open opened (if still the runtime's): ftpatch
 * record -p's end, so that the process holds no descriptor it did not
 * hold before; the next write opens it again. Under the lock the
 * writers hold (the module registry's). */
void ftrt_text_close(void) HIDDEN;
/* Queue a write of len (at most 8) bytes at addr, in address order
 * after the last queued; ftrt_text_flush writes the queued writes: each
 * run of them close together in one write of its span, the bytes
 * between them as they are. 0, or -errno. */
int ftrt_text_queue(uintptr_t addr, const void *bytes, size_t len) HIDDEN;
int ftrt_text_flush(void) HIDDEN;
/* Write buf[0, len) at addr at once, as the queue's writes are written:
 * for a span no other thread writes (read-only data, RELRO): 0, or
 * -errno. */
int ftrt_text_write(uintptr_t addr, const void *buf, size_t len) HIDDEN;
/* ftrt_text_write's write alone, through what ftrt_text_open (or
 * ftrt_text_open_data) opened and checked, for a run of writes after one
 * that returned 0 with no program code run since (the program cannot
 * have closed the descriptor meanwhile): 0, or -errno. */
int ftrt_text_write_opened(uintptr_t addr, const void *buf, size_t len) HIDDEN;
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
 * (uc adjusted); 0 when it is the program's. is_site says whether an
 * address is a site the live part knows (patch/liveindex.c's
 * ftrt_live_is_site: read without a lock). */
int ftrt_arch_trap(const siginfo_t *si, void *uc, int (*is_site)(uintptr_t ip)) HIDDEN;
/* What the site at ip holds: 1 enabled (a call of the runtime, or a jump
 * to a trampoline of its own), 0 disabled (a NOP), -1 anything else; its
 * length in *len. ftrt_targets is its module's. */
int ftrt_arch_live_state(uintptr_t ip, int *len) HIDDEN;
/* The bytes that enable the site at ip of len bytes, at a function's
 * entry or after its prologue (want), into buf: a call of the module's
 * caller trampoline, which serves every tracer (ftrt_targets); whole: an
 * instruction as long as the site, which returns past all of it (x86-64:
 * else a 6-byte site is a 5-byte call and a NOP). 0, or -1 out of
 * reach. */
int ftrt_arch_live_call(uintptr_t ip, int len, int want, int whole, unsigned char *buf) HIDDEN;

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
/* The bytes that make the site at ip of len bytes (want: where it is)
 * call the direct trampoline addr, into buf: 0, or -1 (out of reach, or
 * not an entry site). */
int ftrt_arch_live_direct(uintptr_t ip, int len, int want, uintptr_t addr, unsigned char *buf) HIDDEN;
/* Every direct trampoline an ops was given (patch/ops.c notes each,
 * and those it is modified to): a site that calls one is enabled
 * (poke.c). Never forgotten: a site may still call one until it is
 * written. ftrt_arch_direct_note: 0, or -ENOSPC when the table is full. */
int ftrt_arch_direct_note(uintptr_t a) HIDDEN;
/* Whether a is, or was, a direct trampoline of an ops: a site that calls
 * it is enabled (poke.c). */
int ftrt_arch_direct_known(uintptr_t a) HIDDEN;

#endif
