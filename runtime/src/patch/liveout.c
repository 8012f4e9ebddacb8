/*
 * The trace a live process records into (live.h): opened at the first
 * enable of a process started untraced; for ftpatch record -p, given its
 * directory first (ftrt_live_out) and ended while the process runs on
 * (ftrt_live_end), after which another record -p may open a new one.
 * Calls live.c (the sites disabled), patch.c (the trace opened), the
 * record layer (its end, its state made ready again) and text.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "arch/poke.h"
#include "live.h"
#include "pass.h"
#include "patch.h"
#include "record/tracer.h"

/* A directory given (ftrt_live_out) since the last trace opened. */
static int out_fresh;

int ftrt_live_open_trace(int tracer)
{
	if (__atomic_load_n(&ftrt_end_detached, __ATOMIC_ACQUIRE) == 2 && ftrt_mode != FTRT_NOP) {
		/* ftpatch record -p ended the last one: another record -p
		 * opens the next, into the directory it gives, with every
		 * thread's buffer emptied (ftrt_trace_again). */
		if (!out_fresh)
			return ftrt_live_fail(-ESHUTDOWN, "ftpatch record -p ended the process's trace: another needs its directory first (ctl out DIR)");
		if (ftrt_trace_again() != 0)
			return ftrt_live_fail(-EBUSY, "a thread of the process is still inside the tracer of the trace that ended; try again");
		ftrt_opts.trace = 0; /* opened anew below */
	} else if (__atomic_load_n(&ftrt_ending, __ATOMIC_RELAXED)) {
		return ftrt_live_fail(-ESHUTDOWN, "the process is exiting: its trace has ended");
	}
	if (ftrt_tracing() || ftrt_mode == FTRT_NOP)
		return 0;
	out_fresh = 0;
	if (!ftrt_mode)
		ftrt_mode = tracer == FTRT_GRAPH && !ftrt_graph_safe() ? FTRT_FUNCTION : tracer;
	ftrt_live_enabled_peak = ftrt_live_enabled_delta; /* the new trace's own */
	if (ftrt_trace_open() != 0)
		return ftrt_live_fail(-EACCES, "the trace directory cannot be made");
	ftrt_trace_meta_update();
	return 0;
}

int ftrt_live_out(const char *dir)
{
	if (!dir || dir[0] != '/')
		return ftrt_live_fail(-EINVAL, "the trace directory is an absolute path");
	if (__atomic_load_n(&ftrt_ending, __ATOMIC_RELAXED) && __atomic_load_n(&ftrt_end_detached, __ATOMIC_ACQUIRE) != 2)
		return ftrt_live_fail(-ESHUTDOWN, "the process is exiting: its trace has ended");
	if (ftrt_tracing())
		return ftrt_live_fail(-EBUSY, "the process has a trace open already (another ftpatch record -p?)");
	size_t n = strlen(dir);
	if (n >= sizeof ftrt_trace_out_given)
		return ftrt_live_fail(-ENAMETOOLONG, "the trace directory's path is too long");
	memcpy(ftrt_trace_out_given, dir, n + 1);
	out_fresh = 1;
	return 0;
}

int ftrt_live_end(void)
{
	if (!ftrt_tracing())
		return ftrt_live_fail(-ENOENT, "no trace is open");
	/* Every site back to its NOP first, so that no thread enters the
	 * tracer for the trace that is ending; calls under way return
	 * through the return handler, which the runtime keeps. */
	int r = ftrt_live_disable("*");
	if (r < 0)
		return r;
	/* Then every site as the process had it before the first live
	 * change, and SIGTRAP's action its own: a detach leaves the code
	 * byte for byte as it was. A failure here leaves the sites
	 * disabled, which is what the end needs. */
	ftrt_live_restore();
	ftrt_end_detached = 1;
	ftrt_trace_end();
	/* Ended: no later end (the process's exit) writes over it, until
	 * another record -p opens a new trace. */
	__atomic_store_n(&ftrt_end_detached, 2, __ATOMIC_RELEASE);
	ftrt_trace_close(); /* and its descriptors closed: the process holds what it held before */
	ftrt_modules_lock(); /* the writers' lock: none writes code through it meanwhile */
	ftrt_text_close();
	ftrt_modules_release();
	return r;
}
