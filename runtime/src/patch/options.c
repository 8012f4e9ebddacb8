/*
 * The load-time pass's settings: the environment (FTRACE, FTRACE_FILTER,
 * the graph tracer's options and subtree filters), read once whichever
 * module's pass comes first; a module's config record, checked; a
 * function's verdict by its name (ftrt_symbols_mark's pick). Calls
 * filter.c, subtree.c, env.c and the clock (ftrt_ns_to_tsc).
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "core/clock.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "pass.h"
#include "patch.h"
#include "record/tracer.h"
#include "subtree.h"

/*
 * The config record, if it is one this runtime understands. Read through
 * a pointer the compiler cannot see through: the record is a const
 * object initialised in config.c, but its bytes at run time are what
 * ftpatch wrote into the file, not that initialiser.
 */
const struct ftrt_config *ftrt_config_check(const struct ftrt_config *c)
{
	static const char magic[8] = FTRT_CFG_MAGIC;
	if (!c)
		return NULL;
	__asm__("" : "+r"(c));
	if (__builtin_memcmp(c->magic, magic, sizeof magic) != 0 || c->size != sizeof *c)
		return NULL;
	return c;
}

/* libstdc++'s demangler: linked in a C++ program, absent (NULL) in C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status) __attribute__((weak));

static uint64_t graph_hits; /* FTRACE_GRAPH_FUNCS's plain globs that named a traced function (filter_match) */

/* A duration: digits, an optional fraction, a unit (ns, us, ms, s; ns
 * when none). 0 when malformed. */
static uint64_t parse_duration(const char *s)
{
	uint64_t whole = 0, frac = 0, div = 1, mult;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		whole = whole * 10 + (uint64_t)(*p++ - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (div < 1000000000) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				div *= 10;
			}
	if (!strcmp(p, "") || !strcmp(p, "ns"))
		mult = 1;
	else if (!strcmp(p, "us"))
		mult = 1000;
	else if (!strcmp(p, "ms"))
		mult = 1000000;
	else if (!strcmp(p, "s"))
		mult = 1000000000;
	else
		return 0;
	return whole * mult + frac * mult / div;
}

/* FTRACE_DEPTH=N: graph at most N nested calls. FTRACE_THRESH=T (ns, or
 * with us/ms/s): keep no call shorter than T that called nothing traced. */
void ftrt_tracer_options(void)
{
	const char *depth = ftrt_env(ENV_DEPTH), *thresh = ftrt_env(ENV_THRESH);
	if (depth && *depth) {
		long d = strtol(depth, NULL, 10);
		if (d > 0 && d < (long)ftrt_max_depth)
			ftrt_max_depth = (unsigned)d;
	}
	if (thresh && *thresh && ftrt_mode == FTRT_GRAPH) {
		uint64_t ns = parse_duration(thresh);
		if (ns)
			ftrt_thresh_tsc = ftrt_ns_to_tsc(ns);
		else
			ftrt_say("ftrt: FTRACE_THRESH: want a duration like 500ns, 2.5us, 1ms; ignored\n");
	}
}

struct ftrt_opts ftrt_opts;

/*
 * Whether function_graph can run here: whether it keeps the program's
 * exceptions working: not when the program has C++'s unwinder linked
 * in statically, which the runtime cannot hook (unwind.c), and a throw
 * through a graphed frame would end it. Then it is traced with function instead, and told so.
 * A program without unwind.c (no C++ catch) has no such throw.
 */
int ftrt_graph_safe(void)
{
	if (!ftrt_patch_up.unwind_hooked || ftrt_patch_up.unwind_hooked())
		return 1;
	ftrt_say("ftrt: function_graph: this statically linked program's C++ exceptions cannot be followed through graphed calls; "
	    "tracing with function instead\n");
	return 0;
}

void ftrt_read_env(void)
{
	if (ftrt_opts.read)
		return;
	ftrt_opts.read = 1;
	ftrt_env_capture();
	ftrt_opts.mode = ftrt_env(ENV_TRACER);
	ftrt_opts.filter = ftrt_env(ENV_FILTER);
	ftrt_opts.env = (ftrt_opts.mode && *ftrt_opts.mode) || (ftrt_opts.filter && *ftrt_opts.filter);
	ftrt_opts.graph_funcs = ftrt_env(ENV_GRAPH_FUNCS);
	ftrt_opts.graph_notrace = ftrt_env(ENV_GRAPH_NOTRACE);
	if (ftrt_opts.graph_funcs && !*ftrt_opts.graph_funcs)
		ftrt_opts.graph_funcs = NULL;
	if (ftrt_opts.graph_notrace && !*ftrt_opts.graph_notrace)
		ftrt_opts.graph_notrace = NULL;
	if (ftrt_opts.mode && *ftrt_opts.mode) {
		if (strcmp(ftrt_opts.mode, FTRT_TRACER_FUNCTION) == 0)
			ftrt_opts.tracer = FTRT_FUNCTION;
		else if (strcmp(ftrt_opts.mode, FTRT_TRACER_GRAPH) == 0)
			ftrt_opts.tracer = FTRT_GRAPH;
		else if (strcmp(ftrt_opts.mode, FTRT_TRACER_NOP) == 0)
			ftrt_opts.tracer = FTRT_NOP;
		else
			ftrt_say("ftrt: FTRACE: want function, function_graph or nop; tracing nothing\n");
	}
}

/*
 * What the pass makes of a function by its name (ftrt_symbols_mark's
 * pick): PICK_TRACE when FTRACE_FILTER chooses it, with, when the
 * subtree filters are on, its mark (MARK_NOTRACE, which wins, or
 * MARK_CHOSEN). A mangled name is demangled only when a list has C++
 * punctuation (cxx_globs): demangling costs a microsecond and an
 * allocation per function.
 */
int ftrt_pick(const char *name)
{
	/* No filter of any kind: every name, unmarked (asked for every
	 * function of a pass, and every library-call slot). */
	if ((!ftrt_opts.filter || !*ftrt_opts.filter) && !ftrt_subtree)
		return PICK_TRACE;
	static int cxx = -1;
	if (cxx < 0)
		cxx = __cxa_demangle &&
		      (ftrt_cxx_globs(ftrt_opts.filter) || (ftrt_subtree && (ftrt_cxx_globs(ftrt_opts.graph_funcs) || ftrt_cxx_globs(ftrt_opts.graph_notrace))));
	char *dem = NULL;
	int status;
	if (cxx && name[0] == '_' && name[1] == 'Z') {
		dem = __cxa_demangle(name, NULL, NULL, &status);
		if (status != 0) {
			free(dem);
			dem = NULL;
		}
	}
	int v = 0;
	if (ftrt_filter_match(ftrt_opts.filter, name, dem, NULL)) {
		v = PICK_TRACE;
		int chosen = ftrt_subtree && ftrt_opts.graph_funcs && ftrt_filter_match(ftrt_opts.graph_funcs, name, dem, &graph_hits);
		if (ftrt_subtree && ftrt_opts.graph_notrace && ftrt_filter_match(ftrt_opts.graph_notrace, name, dem, NULL))
			v |= MARK_NOTRACE;
		else if (chosen)
			v |= MARK_CHOSEN;
	}
	if (dem)
		free(dem); /* not free(NULL): a call through the program's slot, for every name of a pass */
	return v;
}

/*
 * The subtree filters, once the process's tracer is known: on under
 * function_graph (subtree.c); under function they mean nothing, which is
 * said once.
 */
void ftrt_subtree_setup(void)
{
	static int done;
	if (done || (!ftrt_opts.graph_funcs && !ftrt_opts.graph_notrace) || !ftrt_mode)
		return;
	done = 1;
	if (ftrt_mode == FTRT_GRAPH) {
		ftrt_subtree_funcs = ftrt_opts.graph_funcs;
		ftrt_subtree_notrace = ftrt_opts.graph_notrace;
		ftrt_subtree = SUBTREE_ON | (ftrt_opts.graph_funcs ? SUBTREE_FUNCS : 0);
	} else if (ftrt_mode == FTRT_FUNCTION) {
		ftrt_say("ftrt: FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE choose what function_graph records; "
		    "the function tracer records every call of the traced functions\n");
	}
}

void ftrt_graph_funcs_check(void)
{
	if (!(ftrt_subtree & SUBTREE_FUNCS) || !ftrt_tracing())
		return;
	char glob[256];
	int k = 0;
	for (const char *p = ftrt_opts.graph_funcs; (p = ftrt_glob_next(p, glob)) != NULL; k++)
		if (glob[0] && glob[0] != '!' && k < 64 && !(graph_hits >> k & 1)) {
			struct say s;
			ftrt_say_begin(&s);
			ftrt_say_text(&s, "FTRACE_GRAPH_FUNCS: \"");
			ftrt_say_str(&s, glob);
			ftrt_say_text(&s, "\" matches no traced function (of those loaded at start)");
			ftrt_say_end(&s);
		}
}

/* The trace location ftpatch enable --trace-dir recorded in the
 * program's config record: an absolute path, or NULL. */
const char *ftrt_recorded_dir(void)
{
	const struct ftrt_config *c = ftrt_config_check(&ftrt_config);
	if (!c || c->trace_dir[0] != '/' || !__builtin_memchr(c->trace_dir, 0, sizeof c->trace_dir))
		return NULL;
	return c->trace_dir;
}

/* Whether the process listens for ftpatch ctl (ctl.c): FTRACE_CTL=1, or
 * the program's config record says so (ftpatch enable --ctl) and
 * FTRACE_CTL is not 0; never in a secure-execution process. */
int ftrt_ctl_wanted(void)
{
	static int wanted = -1; /* decided once, at start (lifetime.c's preinit, through trap.c) */
	if (wanted < 0) {
		const char *v = ftrt_secure() ? NULL : ftrt_env(ENV_CTL);
		const struct ftrt_config *c = ftrt_config_check(&ftrt_config);
		wanted = ftrt_secure() ? 0 : v && *v ? strcmp(v, "1") == 0 : c && (c->flags & FTRT_CFG_CTL);
	}
	return wanted;
}
