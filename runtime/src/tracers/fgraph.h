/*
 * Graph users (fgraph.c): what graph.c, ops.c and api.c call, and what
 * each architecture gives it (arch/x86_64/fregs.c, arch/arm64/fregs.c).
 */
#ifndef FTRT_FGRAPH_H
#define FTRT_FGRAPH_H

#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))

struct tbuf;
struct shadow;
struct ftrace_regs;
struct fgraph_ops;


/* graph.c's exit, the call sh popped (busy held): each user's retfunc,
 * the call's stack pointer at its return sp. */
void ftrt_fgraph_return(struct tbuf *b, const struct shadow *sh, uintptr_t sp) HIDDEN;

/* api.c's: 0, or -errno with ftrt_fgraph_why saying why. */
int ftrt_fgraph_register(struct fgraph_ops *g) HIDDEN;
int ftrt_fgraph_unregister(struct fgraph_ops *g) HIDDEN;
const char *ftrt_fgraph_why(void) HIDDEN;
/* fprobe.c's, for api.c. */
struct fprobe;
int ftrt_fprobe_register(struct fprobe *fp, const char *filter, const char *notfilter) HIDDEN;
int ftrt_fprobe_unregister(struct fprobe *fp) HIDDEN;
const char *ftrt_fprobe_why(void) HIDDEN;
/* In a user's entryfunc (busy held): the real return address of the
 * call at sp whose return slot holds v (the tracer's or a user's hook
 * replaced it: the shadow entry's), else v. */
uintptr_t ftrt_fgraph_real_return(uintptr_t v, uintptr_t sp) HIDDEN;
/* For capture.c: in a user's entryfunc, the thread's buffer (taken);
 * in a retfunc, the buffer when the call's EXIT is to be recorded after
 * it, else NULL, and in *fp what ftrt_arch_fp_save saved at the return
 * (the x87 and vector registers a result may be in). */
struct tbuf *ftrt_fgraph_entering(void) HIDDEN;
struct tbuf *ftrt_fgraph_returning(const unsigned char **fp) HIDDEN;
/* capture.c (FTRACE_ARGS, FTRACE_RETVAL): start, when the program's
 * initialisers begin (lifetime.c); a module is being registered, before
 * the registry's lock is taken (registry.c, through lifetime.c's
 * wiring: its own entries are asked for then); a module was added (ops.c,
 * with the lock, before the ops' view is made anew). */
struct ftrt_mod;
struct ftrt_module;
void ftrt_capture_start(void) HIDDEN;
void ftrt_capture_adding(const struct ftrt_module *m) HIDDEN;
void ftrt_capture_added(const struct ftrt_mod *md) HIDDEN;
/* A library call of slot s (its capture flag set) was entered, and
 * recorded: its arguments, and its return hooked for the return value,
 * from the registers ftrace_libcall saved (tracers/libcall.c). */
struct ftrt_libslot;
void ftrt_capture_libcall(const struct ftrt_libslot *s, struct ftrace_regs *fregs) HIDDEN;
/* argask.c: ask FTRACE_ARGS_SOCKET about the module at path (its hex
 * build-id, "" for none): its FTRACE_ARGS (alen bytes) and, after a
 * '\n', its FTRACE_RETVAL (rlen bytes), in a buffer to free; NULL when
 * there is no socket or no answer. */
#include <stddef.h>
char *ftrt_args_ask(const char *path, const char *build_id, size_t *alen, size_t *rlen) HIDDEN;

/* The architecture's. How the return of the function at the site ip of
 * fregs is hooked, as the tracer hooks it: where its return address is
 * kept while it runs (slot: x86-64, its slot on the stack; arm64,
 * fregs->lr, the ops caller's x30 on the way out, or at a -pg site the
 * frame record's saved x30), the stack pointer it will return with (the
 * shadow entry's), where it really returns (ret), and what the slot is
 * to hold (val: return_to_handler, signed as the prologue signs at an
 * arm64 -pg site). 0, or -1 when it cannot be hooked (an arm64 -pg
 * prologue not understood: mcount.c). */
struct fgraph_hook {
	uintptr_t *slot;
	uintptr_t sp, ret, val;
};
int ftrt_arch_fgraph_hook(struct ftrace_regs *fregs, uintptr_t ip, struct fgraph_hook *h) HIDDEN;
/* arm64's, at a -pg site (mcount.c): fp the function's frame record,
 * parent its return address, stripped. */
int ftrt_arm64_mcount_hook(uintptr_t ip, uintptr_t *fp, uintptr_t parent, struct fgraph_hook *h) HIDDEN;
/* arm64's, for the stack arguments at a -pg site (mcount.c): the
 * function's entry sp, its frame record being fp; 0 when its prologue is
 * not understood. */
uintptr_t ftrt_arm64_mcount_entry_sp(uintptr_t ip, const uintptr_t *fp) HIDDEN;
/* For the arguments and return values (capture.c), each architecture's:
 * the address of the first stack argument of the function at the site
 * ip whose entry fregs holds (0: not known); vector register n's 128
 * bits (xmm, q: n < 8); integer return register i (0, 1: rax, rdx; x0,
 * x1); and, at a return, the x87's st0 from fp (what ftrt_arch_fp_save
 * saved; -1 where there is none), 10 bytes in out's 16. */
uintptr_t ftrt_arch_stack_args(const struct ftrace_regs *fregs, uintptr_t ip) HIDDEN;
/* Whether integer argument register n still holds the argument at the
 * site fregs was saved at (arm64's -pg sites have put the return
 * address in x0 for _mcount: the first argument is gone). */
int ftrt_arch_int_arg_known(const struct ftrace_regs *fregs, unsigned n) HIDDEN;
void ftrt_arch_vec(const struct ftrace_regs *fregs, unsigned n, uint64_t out[2]) HIDDEN;
uint64_t ftrt_arch_ret_int(const struct ftrace_regs *fregs, unsigned i) HIDDEN;
int ftrt_arch_ret_x87(const unsigned char *fp, uint64_t out[2]) HIDDEN;
/* At a return (graph.c's exit, from return_to_handler, whose frame
 * below sp holds the return registers): fregs with them, sp and the
 * real return address ret, and the floating-point ones from fp, what
 * ftrt_arch_fp_save saved. */
void ftrt_arch_fgraph_exit_regs(struct ftrace_regs *fregs, uintptr_t sp, uintptr_t ret, const unsigned char *fp) HIDDEN;
/* Save and restore the floating-point and vector state a return value
 * may be in (x86-64: fxsave's 512 bytes, x87 and SSE; arm64: q0-q7 and
 * fpsr), around the program's retfuncs; full (the call was at a site
 * made from a prologue, ftrt_arch_fregs_prologue), every vector
 * register a retfunc may change besides, as the function's callers may
 * keep values in any of them across the call (gcc's -fipa-ra): x86-64
 * the rest of ymm0-15, zmm0-31 and k0-7 as the CPU has them
 * (arch/x86_64/vecsave.h), arm64 q8-q31 and fpcr. buf of
 * FTRT_ARCH_FP_SAVE bytes, 64-byte aligned. Saved before anything else
 * at a return: the C library's memset and memcpy, which the compiler
 * may call, use them. */
#if defined(__x86_64__)
#define FTRT_ARCH_FP_SAVE (512 + 2176) /* fxsave's, then vecsave.h's VS_SIZE */
#else
#define FTRT_ARCH_FP_SAVE 528
#endif
void ftrt_arch_fp_save(unsigned char *buf, int full) HIDDEN;
void ftrt_arch_fp_restore(const unsigned char *buf, int full) HIDDEN;
/* Whether fregs were saved at a site made from a prologue (its ops
 * caller keeps every register). */
int ftrt_arch_fregs_prologue(const struct ftrace_regs *fregs) HIDDEN;
#if defined(__x86_64__)
/* Chooses what x86-64 keeps of the vector state at a site made from a
 * prologue (fregs.c's ftrt_vec_kind): at start (ftrt_tracers_wire). */
void ftrt_arch_vec_init(void) HIDDEN;
#endif

#endif
