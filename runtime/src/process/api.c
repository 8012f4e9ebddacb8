/*
 * ftrace.h's functions: errno and ftrace_error() around live.c's work.
 * In an object of its own, so a program links it only when it calls the
 * API; trap.c tells by a weak reference whether it did (SIGTRAP is then
 * the runtime's from the start).
 */
#define _GNU_SOURCE
#include <errno.h>

#include "ftrace.h"
#include "patch/live.h"
#include "patch/ops.h"
#include "record/tracer.h"
#include "tracers/argread.h"
#include "tracers/fgraph.h"

static __thread const char *why __attribute__((tls_model("initial-exec")));

/* r, or -1 with errno and the reason (what failed says) for r < 0. */
static int fail(int r, const char *(*what)(void))
{
	if (r >= 0)
		return r;
	why = what();
	errno = -r;
	return -1;
}

static int result(int r)
{
	return fail(r, ftrt_live_why);
}

int ftrace_set_functions(const char *globs)
{
	return result(ftrt_live_set(globs));
}

int ftrace_enable_functions(const char *globs)
{
	return result(ftrt_live_enable(globs));
}

int ftrace_disable_functions(const char *globs)
{
	return result(ftrt_live_disable(globs));
}

int ftrace_set_tracer(const char *name)
{
	return result(ftrt_live_tracer(name));
}

const char *ftrace_current_tracer(void)
{
	return ftrt_live_tracer_name();
}

void tracing_off(void)
{
	ftrt_live_pause(1);
}

void tracing_on(void)
{
	ftrt_live_pause(0);
}

int tracing_is_on(void)
{
	return !__atomic_load_n(&ftrt_paused, __ATOMIC_RELAXED);
}

int ftrace_snapshot(const char *dir, char *made, size_t size)
{
	char buf[4096];
	return fail(ftrt_snapshot(dir, made ? made : buf, made ? size : sizeof buf), ftrt_snapshot_why);
}

static int ops_result(int r)
{
	return fail(r, ftrt_ops_why);
}

/* A callback's ftrace_regs_get_argument may read stack arguments, through
 * the pipe where process_vm_readv is refused. */
int register_ftrace_function(struct ftrace_ops *ops)
{
	ftrt_argread_start();
	return ops_result(ftrt_ops_register(ops));
}

int unregister_ftrace_function(struct ftrace_ops *ops)
{
	return ops_result(ftrt_ops_unregister(ops));
}

int register_ftrace_direct(struct ftrace_ops *ops, unsigned long addr)
{
	return ops_result(ftrt_ops_direct(ops, addr));
}

int modify_ftrace_direct(struct ftrace_ops *ops, unsigned long addr)
{
	return ops_result(ftrt_ops_direct_modify(ops, addr));
}

int unregister_ftrace_direct(struct ftrace_ops *ops, unsigned long addr, int free_filters)
{
	return ops_result(ftrt_ops_direct_unregister(ops, addr, free_filters));
}

int ftrace_set_filter(struct ftrace_ops *ops, const char *globs, int reset)
{
	return ops_result(ftrt_ops_filter(ops, globs, reset, 0));
}

int ftrace_set_notrace(struct ftrace_ops *ops, const char *globs, int reset)
{
	return ops_result(ftrt_ops_filter(ops, globs, reset, 1));
}

int register_fgraph(struct fgraph_ops *gops)
{
	ftrt_argread_start();
	return fail(ftrt_fgraph_register(gops), ftrt_fgraph_why);
}

int unregister_fgraph(struct fgraph_ops *gops)
{
	return fail(ftrt_fgraph_unregister(gops), ftrt_fgraph_why);
}

int register_fprobe(struct fprobe *fp, const char *filter, const char *notfilter)
{
	ftrt_argread_start();
	return fail(ftrt_fprobe_register(fp, filter, notfilter), ftrt_fprobe_why);
}

int unregister_fprobe(struct fprobe *fp)
{
	return fail(ftrt_fprobe_unregister(fp), ftrt_fprobe_why);
}

long ftrace_enabled_sites(void)
{
	return (long)ftrt_live_enabled();
}

const char *ftrace_error(void)
{
	return why ? why : "";
}
