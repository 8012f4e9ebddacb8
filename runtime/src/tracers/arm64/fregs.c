/*
 * ftrace.h's accessors of a struct ftrace_regs (regs.h), for arm64, and
 * the tracer's call from a list of ops (ops.c). Async-signal-safe: they
 * run in callbacks.
 */
#include <stdint.h>

#include "arch/arm64/regs.h"
#include "core/ftrt.h"
#include "ftrace.h"
#include "patch/live.h"
#include "tracers/argread.h"
#include "tracers/entry.h"
#include "tracers/fgraph.h"

/* x0-x7, then the stack's at the function's entry, as an item of
 * FTRACE_ARGS reads them: never faulting (a function at the top of its
 * stack has nothing mapped above it), 0 past the first ARG_STACK_MAX
 * bytes or where they cannot be read; not known at a -pg site, after
 * the prologue (0). */
unsigned long ftrace_regs_get_argument(struct ftrace_regs *f, unsigned int n)
{
	if (n < 8)
		return f->x[n];
	return f->kind == FREGS_ENTRY ? ftrt_stack_word(ftrt_arch_stack_args(f, f->pc), n - 8) : 0;
}

unsigned long long ftrace_regs_get_fp_argument_bits(struct ftrace_regs *f, unsigned int n)
{
	return n < 8 ? f->q[n][0] : 0;
}

unsigned long ftrace_regs_get_stack_pointer(struct ftrace_regs *f)
{
	return f->sp;
}

unsigned long ftrace_regs_get_instruction_pointer(struct ftrace_regs *f)
{
	return f->pc;
}

unsigned long ftrace_regs_get_return_value(struct ftrace_regs *f)
{
	return f->x[0];
}

void ftrace_regs_set_return_value(struct ftrace_regs *f, unsigned long ret)
{
	f->x[0] = ret;
}

/* At a patchable area's site, before the prologue: the ops caller
 * returns to pc with x30 the caller's return address and sp as at the
 * entry, so the function at ip runs in its place. */
int ftrace_regs_set_instruction_pointer(struct ftrace_regs *f, unsigned long ip)
{
	if (f->kind != FREGS_ENTRY)
		return -1;
	f->pc = ip;
	return 0;
}

void ftrt_ops_return(void);

/* Going on at a lone ret (ops.S) returns to whatever lr is then. */
int ftrace_override_function_with_return(struct ftrace_regs *f)
{
	return ftrace_regs_set_instruction_pointer(f, (unsigned long)(uintptr_t)ftrt_ops_return);
}

void ftrt_arch_ops_tracer(uintptr_t ip, struct ftrace_regs *f)
{
	if (f->kind == FREGS_ENTRY)
		ftrt_entry_regs(ip, f);
	else
		ftrt_entry_frame(ip, (uintptr_t *)f->fp, f->lr);
}

void return_to_handler(void);

/* Graph users (fgraph.h): at a patchable area the return address is the
 * ftrace_regs' lr, which the ops caller puts back in x30; a -pg site's
 * is in the frame record, signed perhaps: mcount.c hooks it as the
 * tracer does. */
int ftrt_arch_fgraph_hook(struct ftrace_regs *f, uintptr_t ip, struct fgraph_hook *h)
{
	if (f->kind != FREGS_ENTRY)
		return ftrt_arm64_mcount_hook(ip, (uintptr_t *)f->fp, f->lr, h);
	h->slot = (uintptr_t *)&f->lr;
	h->sp = f->sp;
	h->ret = f->lr;
	h->val = (uintptr_t)return_to_handler;
	return 0;
}

/* return_to_handler (entry.S) keeps x0-x8 from 80 bytes below the stack
 * pointer the function returned with. */
void ftrt_arch_fgraph_exit_regs(struct ftrace_regs *f, uintptr_t sp, uintptr_t ret, const unsigned char *fp)
{
	const uint64_t *save = (const uint64_t *)(sp - 80);
	__builtin_memset(f, 0, sizeof *f);
	for (int i = 0; i < 9; i++)
		f->x[i] = save[i];
	f->sp = sp;
	f->pc = ret;
	f->kind = FREGS_MCOUNT; /* nothing to redirect at a return */
	__builtin_memcpy(f->q, fp, sizeof f->q); /* ftrt_arch_fp_save's q0-q7 */
}

/* Arguments and return values (capture.c). At a patchable area the
 * stack arguments start at sp, the function's at its entry; at a -pg
 * site, after the prologue, at the entry sp its prologue says (mcount.c;
 * 0 when it cannot be read). */
uintptr_t ftrt_arch_stack_args(const struct ftrace_regs *f, uintptr_t ip)
{
	if (f->kind == FREGS_ENTRY)
		return f->sp;
	return ftrt_arm64_mcount_entry_sp(ip, (const uintptr_t *)f->fp);
}

/* A -pg site comes after gcc's "mov x0, x30", which gives _mcount the
 * caller's return address in x0: the first argument is no longer in a
 * register there (the prologue copied it to one the compiler chose).
 * x1-x7 still hold theirs: the prologue only copies them. */
int ftrt_arch_int_arg_known(const struct ftrace_regs *f, unsigned n)
{
	return !(f->kind == FREGS_MCOUNT && n == 0);
}

void ftrt_arch_vec(const struct ftrace_regs *f, unsigned n, uint64_t out[2])
{
	out[0] = n < 8 ? f->q[n][0] : 0;
	out[1] = n < 8 ? f->q[n][1] : 0;
}

uint64_t ftrt_arch_ret_int(const struct ftrace_regs *f, unsigned i)
{
	return f->x[i & 1];
}

/* No x87: a long double is returned in q0. */
int ftrt_arch_ret_x87(const unsigned char *fp, uint64_t out[2])
{
	(void)fp;
	out[0] = out[1] = 0;
	return -1;
}

/* q0-q7 (a floating-point or HFA result) and fpsr; full (a site made
 * from a prologue), q8-q31 and fpcr besides, which the function's
 * callers may keep values in (gcc's -fipa-ra) and a retfunc change. */
void ftrt_arch_fp_save(unsigned char *buf, int full)
{
	__asm__ volatile("stp q0, q1, [%0]\n\tstp q2, q3, [%0, #32]\n\tstp q4, q5, [%0, #64]\n\tstp q6, q7, [%0, #96]\n\t"
			 "mrs x9, fpsr\n\tstr x9, [%0, #512]"
			 :
			 : "r"(buf)
			 : "x9", "memory");
	if (!full)
		return;
	__asm__ volatile("stp q8, q9, [%0, #128]\n\tstp q10, q11, [%0, #160]\n\tstp q12, q13, [%0, #192]\n\t"
			 "stp q14, q15, [%0, #224]\n\tstp q16, q17, [%0, #256]\n\tstp q18, q19, [%0, #288]\n\t"
			 "stp q20, q21, [%0, #320]\n\tstp q22, q23, [%0, #352]\n\tstp q24, q25, [%0, #384]\n\t"
			 "stp q26, q27, [%0, #416]\n\tstp q28, q29, [%0, #448]\n\tstp q30, q31, [%0, #480]\n\t"
			 "mrs x9, fpcr\n\tstr x9, [%0, #520]"
			 :
			 : "r"(buf)
			 : "x9", "memory");
}

void ftrt_arch_fp_restore(const unsigned char *buf, int full)
{
	if (full)
		__asm__ volatile("ldp q8, q9, [%0, #128]\n\tldp q10, q11, [%0, #160]\n\tldp q12, q13, [%0, #192]\n\t"
				 "ldp q14, q15, [%0, #224]\n\tldp q16, q17, [%0, #256]\n\tldp q18, q19, [%0, #288]\n\t"
				 "ldp q20, q21, [%0, #320]\n\tldp q22, q23, [%0, #352]\n\tldp q24, q25, [%0, #384]\n\t"
				 "ldp q26, q27, [%0, #416]\n\tldp q28, q29, [%0, #448]\n\tldp q30, q31, [%0, #480]\n\t"
				 "ldr x9, [%0, #520]\n\tmsr fpcr, x9"
				 :
				 : "r"(buf)
				 : "x9", "memory");
	__asm__ volatile("ldp q0, q1, [%0]\n\tldp q2, q3, [%0, #32]\n\tldp q4, q5, [%0, #64]\n\tldp q6, q7, [%0, #96]\n\t"
			 "ldr x9, [%0, #512]\n\tmsr fpsr, x9"
			 :
			 : "r"(buf)
			 : "x9", "memory");
}

int ftrt_arch_fregs_prologue(const struct ftrace_regs *f)
{
	return f->prologue != 0;
}
