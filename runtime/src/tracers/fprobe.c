/*
 * fprobe (ftrace.h): entry and exit handlers on a set of functions, as
 * the kernel's, built on a graph user (fgraph.c) of the fprobe's own
 * (fp->gops). Each call's data, reserved at its entry: the caller's
 * return address, then the program's entry_data_size bytes.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "fgraph.h"
#include "ftrace.h"
#include "patch/live.h"
#include "patch/ops.h"

/* The caller's return address: the shadow entry's, once the tracer or
 * another user hooked the return; else what the slot holds. */
static unsigned long caller_of(struct ftrace_regs *fregs, uintptr_t ip)
{
	struct fgraph_hook h;
	if (ftrt_arch_fgraph_hook(fregs, ip, &h) != 0)
		return 0;
	return (unsigned long)ftrt_fgraph_real_return(h.ret, h.sp);
}

static int entry(struct ftrace_graph_ent *e, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	struct fprobe *fp = (struct fprobe *)((char *)g - offsetof(struct fprobe, gops));
	unsigned long ret_ip = caller_of(fregs, e->func);
	unsigned char *d = fgraph_reserve_data(g->idx, (int)(8 + fp->entry_data_size));
	if (!d) {
		__atomic_fetch_add(&fp->nmissed, 1, __ATOMIC_RELAXED);
		return 0;
	}
	memcpy(d, &ret_ip, 8);
	int skip = fp->entry_handler ? fp->entry_handler(fp, e->func, ret_ip, fregs, fp->entry_data_size ? d + 8 : NULL) : 0;
	return !skip && fp->exit_handler;
}

static void ret(struct ftrace_graph_ret *r, struct fgraph_ops *g, struct ftrace_regs *fregs)
{
	struct fprobe *fp = (struct fprobe *)((char *)g - offsetof(struct fprobe, gops));
	int size = 0;
	unsigned char *d = fgraph_retrieve_data(g->idx, &size);
	if (!d || size < 8)
		return;
	unsigned long ret_ip;
	memcpy(&ret_ip, d, 8);
	fp->exit_handler(fp, r->func, ret_ip, fregs, fp->entry_data_size ? d + 8 : NULL);
}

static const char *why = "";

const char *ftrt_fprobe_why(void)
{
	return why;
}

int ftrt_fprobe_register(struct fprobe *fp, const char *filter, const char *notfilter)
{
	if (!fp || (!fp->entry_handler && !fp->exit_handler) || fp->entry_data_size > FPROBE_DATA_MAX || !filter || !*filter) {
		why = "no fprobe, no handler, no filter, or entry_data_size above FPROBE_DATA_MAX";
		return -EINVAL;
	}
	memset(&fp->gops, 0, sizeof fp->gops);
	fp->gops.entryfunc = entry;
	fp->gops.retfunc = ret;
	fp->nmissed = 0;
	int n = ftrt_ops_filter(&fp->gops.ops, filter, 1, 0);
	if (n >= 0 && notfilter && *notfilter)
		n = ftrt_ops_filter(&fp->gops.ops, notfilter, 1, 1);
	if (n < 0) {
		why = ftrt_ops_why();
		return n;
	}
	int err = ftrt_fgraph_register(&fp->gops);
	if (err)
		why = ftrt_fgraph_why();
	return err;
}

int ftrt_fprobe_unregister(struct fprobe *fp)
{
	if (!fp) {
		why = "no fprobe";
		return -EINVAL;
	}
	int err = ftrt_fgraph_unregister(&fp->gops);
	if (err)
		why = ftrt_fgraph_why();
	return err;
}
