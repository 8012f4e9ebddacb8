/*
 * ftrace.h's ops on arm64: not yet. The ops callers that keep q0-q7 for
 * a callback of the program's, and the trampolines near a module's
 * code, are still to come, so registering an ops is refused (ops.c asks
 * ftrt_arch_ops_refused); the accessors read what struct ftrace_regs
 * (regs.h) holds.
 */
#include <stdint.h>

#include "../ftrace.h"
#include "../ftrt.h"
#include "../live.h"
#include "regs.h"

const char *ftrt_arch_ops_refused(void)
{
	return "ops are not supported on arm64 yet";
}

unsigned long ftrace_regs_get_argument(struct ftrace_regs *f, unsigned int n)
{
	return n < 8 ? f->x[n] : ((const unsigned long *)f->sp)[n - 8];
}

unsigned long long ftrace_regs_get_fp_argument_bits(struct ftrace_regs *f, unsigned int n)
{
	(void)f, (void)n;
	return 0;
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

int ftrace_regs_set_instruction_pointer(struct ftrace_regs *f, unsigned long ip)
{
	(void)f, (void)ip;
	return -1;
}

int ftrace_override_function_with_return(struct ftrace_regs *f)
{
	(void)f;
	return -1;
}

int ftrt_arch_live_ops(uintptr_t ip, int len, int want, const struct ftrt_ops *rec, int owner, unsigned char *buf)
{
	(void)ip, (void)len, (void)want, (void)rec, (void)owner, (void)buf;
	return -1;
}

const struct ftrt_ops *ftrt_arch_live_ops_rec(uintptr_t ip, int len)
{
	(void)ip, (void)len;
	return NULL;
}

void ftrt_arch_ops_tracer(uintptr_t ip, struct ftrace_regs *f)
{
	ftrt_entry_regs(ip, f);
}
