/*
 * ftrace.h's accessors of a struct ftrace_regs (regs.h), for arm64, and
 * the tracer's call from a list of ops (ops.c). Async-signal-safe: they
 * run in callbacks.
 */
#include <stdint.h>

#include "../ftrace.h"
#include "../ftrt.h"
#include "../live.h"
#include "regs.h"

/* arm64 serves ops (ops.S, opstramp.c). */
const char *ftrt_arch_ops_refused(void)
{
	return NULL;
}

/* x0-x7, then the stack's at the function's entry: not known at a -pg
 * site, after the prologue (0). */
unsigned long ftrace_regs_get_argument(struct ftrace_regs *f, unsigned int n)
{
	if (n < 8)
		return f->x[n];
	return f->kind == FREGS_ENTRY ? ((const unsigned long *)f->sp)[n - 8] : 0;
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
