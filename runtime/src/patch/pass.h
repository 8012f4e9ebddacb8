/*
 * What the files of the load-time pass share: patch.c (the pass over a
 * module, and ftrt_init) calls options.c (the environment and the
 * process-wide choices), sites.c (the walk over the sites, which writes
 * them) and filter.c (glob lists, by name). None of those calls patch.c,
 * and filter.c calls none of them.
 */
#ifndef FTRT_PASS_H
#define FTRT_PASS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "core/filter.h"
#include "core/ftrt.h"

/* The sites (sites.c). */
extern const char *ftrt_nop_style __attribute__((visibility("hidden")));
void ftrt_sites_walk(const uintptr_t *s, unsigned char *want, size_t m, int check_mode) __attribute__((visibility("hidden")));
int ftrt_sites_resolve(unsigned char *want, int a, const unsigned char *ip) __attribute__((visibility("hidden")));
/* What the pass does with a site, once classified. */
enum {
	KEEP,      /* a NOP this CPU runs, and no call wanted there: counted, not written */
	SKIP,      /* bytes no site may hold: counted, never written */
	FAIL,      /* to write, but outside the pages made writable: counted failed, not written */
	DEFER,     /* WANT_AUTO's site other than a call of __fentry__: left for the symbol table (settle) */
	WRITE,     /* a call (the compiler's or ours) or a run of NOPs: becomes what want[] says */
	QUICK,     /* a WRITE known inline to be a 5-byte call of a hook, to become a NOP or a call of the tracer (arch/x86_64/quick.h) */
	WRITE_NOP, /* a NOP that must become a call, or another NOP */
	RECHECK,   /* starts within 6 bytes of the site before it: classified again after that one is written */
};

/* The environment and the process-wide choices (options.c). */
/*
 * Process-wide choices, made once whichever module's pass comes first:
 * what the environment asks, the NOPs this CPU runs, the trace directory.
 */
struct ftrt_opts {
	int read;
	const char *mode, *filter; /* FTRACE, FTRACE_FILTER */
	const char *graph_funcs, *graph_notrace; /* FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE: NULL when unset or empty */
	int env;                   /* FTRACE or FTRACE_FILTER is set: it overrides every config record */
	int tracer;                /* FTRACE's tracer, 0 when unset or not understood */
	int probed;                /* nop_style chosen */
	int trace;                 /* 0: not tried; 1: open; -1: could not be made */
};
extern struct ftrt_opts ftrt_opts __attribute__((visibility("hidden")));
const struct ftrt_config *ftrt_config_check(const struct ftrt_config *c) __attribute__((visibility("hidden")));
void ftrt_tracer_options(void) __attribute__((visibility("hidden")));
int ftrt_graph_safe(void) __attribute__((visibility("hidden")));
void ftrt_read_env(void) __attribute__((visibility("hidden")));
int ftrt_pick(const char *name) __attribute__((visibility("hidden")));
void ftrt_subtree_setup(void) __attribute__((visibility("hidden")));
const char *ftrt_recorded_dir(void) __attribute__((visibility("hidden")));

/* Open the trace, once (patch.c): the directory FTRACE_OUT names, else
 * the recorded one, else ./ftrace.data, and the tracer's options. 0, or
 * -1 when it cannot be (said on stderr). The load-time pass's, and the
 * first live enable's (live.c). */
int ftrt_trace_open(void) __attribute__((visibility("hidden")));
/* The trace directory ftpatch record -p gave (live.c's ftrt_live_out),
 * an absolute path, which ftrt_trace_open takes before FTRACE_OUT; ""
 * for none. */
extern char ftrt_trace_out_given[PATH_MAX] __attribute__((visibility("hidden")));
/* The runtime was loaded into a process already running (ftpatch's
 * attach: process/preload.c says so before the first pass): its threads
 * run the sites while the passes look at them, so no pass writes a
 * byte; every change is the live part's (live.c), through the protocol
 * that writes code while threads run (arch/poke.h), and ftpatch record
 * -p's end gives each site back the bytes it had. */
extern int ftrt_pass_late __attribute__((visibility("hidden")));

#endif
