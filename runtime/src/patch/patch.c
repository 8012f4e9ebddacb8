/*
 * The load-time pass over the site table.
 *
 * The linker gathers every object's __mcount_loc (recordmcount's, or
 * gcc's own -mrecord-mcount table) between __start___mcount_loc and
 * __stop___mcount_loc; in a PIE the loader has already filled in each
 * word's load address by the time this runs. The pass sorts the table
 * once, then turns every site into a NOP, checking each site's bytes
 * first: a site that holds anything but a call to our hooks or a NOP is
 * skipped and counted, never overwritten.
 *
 * Code pages are made writable only around the writes, only where a site
 * needs one, and given back the protection of their segment at once:
 * a program whose sites are all NOPs already (recordmcount --nop) never
 * has a writable code page. The pass runs from the program's
 * .preinit_array (lifetime.c), before any constructor and, in the
 * programs we serve, before any thread is started.
 *
 * A file pre-patched by `ftpatch enable` says so in its config record
 * (config.c): every site is already a NOP or a call into the runtime. With
 * neither FTRACE nor FTRACE_FILTER set, the pass then only reads: it
 * checks each site, counts it, and starts the tracer the record names. No
 * page is made writable, no byte of code is written. With either set, the
 * environment wins and the normal pass runs over the pre-patched sites.
 *
 * This file runs the pass over one module (ftrt_pass) and starts it for
 * the program (ftrt_init). It calls the pass's parts (pass.h: options.c,
 * sites.c, filter.c), symbols.c, subtree.c, the registry (the program's
 * own record) and the trace's opening (trace.c).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/ftrt.h"
#include "core/say.h"
#include "libcall.h"
#include "pass.h"
#include "patch.h"
#include "record/stack.h"
#include "record/tracer.h"

static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The trace directory, made once, by the first module that traces, with
 * the tracer options read then: the directory ftpatch record -p gave,
 * else FTRACE_OUT, else the location the program's record names, else
 * ./ftrace.data. A secure-execution process
 * (setuid...) reads no FTRACE_OUT, and traces only into the recorded
 * location, which dir.c re-checks; with none, it writes nothing, and
 * says nothing (its stderr is another user's).
 */
char ftrt_trace_out_given[PATH_MAX];
int ftrt_pass_late;

int ftrt_trace_open(void)
{
	if (!ftrt_opts.trace) {
		const char *out = ftrt_env(ENV_OUT), *rec = ftrt_recorded_dir(), *why = "";
		const char *dir = out && *out ? out : rec ? rec : "ftrace.data";
		/* Given by ftpatch record -p through the control socket, whose
		 * peer is the process's user or root (ctl.c), and which only a
		 * tracer the kernel let trace the process started. */
		const char *given = ftrt_trace_out_given[0] ? ftrt_trace_out_given : NULL;
		if (given)
			dir = given;
		if (ftrt_secure() && !rec && !given)
			ftrt_opts.trace = -1;
		else
			ftrt_opts.trace = ftrt_trace_start(dir, dir == rec, &why) == 0 ? 1 : -1;
		if (ftrt_opts.trace > 0) {
			ftrt_tracer_options();
			ftrt_trace_go();
		} else if (!ftrt_secure() || rec) {
			struct say s;
			ftrt_say_begin(&s);
			ftrt_say_text(&s, "the trace directory ");
			ftrt_say_str(&s, dir);
			ftrt_say_text(&s, " ");
			ftrt_say_text(&s, why);
			ftrt_say_text(&s, "; tracing nothing");
			ftrt_say_end(&s);
		}
	}
	return ftrt_opts.trace > 0 ? 0 : -1;
}

/*
 * The process's tracer, given what this module asks for: the first
 * module to ask sets it (the program comes first); a later module that
 * asks for another is served by the process's, and told so.
 */
static int adopt(int tracer, const char *name)
{
	if (!tracer)
		return ftrt_mode;
	if (!ftrt_mode)
		ftrt_mode = tracer == FTRT_GRAPH && !ftrt_graph_safe() ? FTRT_FUNCTION : tracer;
	else if (tracer != ftrt_mode) {
		struct say s;
		ftrt_say_begin(&s);
		ftrt_say_str(&s, name);
		ftrt_say_text(&s, " asks for another tracer than the process runs; its sites serve the process's");
		ftrt_say_end(&s);
	}
	return ftrt_mode;
}

static void report(const struct ftrt_mod *md, size_t nsites)
{
	char buf[600];
	struct say s;
	ftrt_say_begin(&s);
	if (md->path) {
		ftrt_say_str(&s, md->path);
		ftrt_say_text(&s, ": ");
	}
	int n = snprintf(buf, sizeof buf,
			 "%llu sites: %llu patched to NOPs, %llu NOPs already, %llu skipped, %llu failed; "
			 "%llu empty and %llu duplicate table entries; %llu traced, %llu not traceable; %s NOPs; in %llu ns; "
			 "%llu code pages written; config %s; %llu through their literal, %llu with a misaligned one",
			 (unsigned long long)nsites,
			 (unsigned long long)md->stats.patched, (unsigned long long)md->stats.nops,
			 (unsigned long long)md->stats.skipped, (unsigned long long)md->stats.failed,
			 (unsigned long long)md->stats.zero, (unsigned long long)md->stats.dups,
			 (unsigned long long)md->stats.enabled, (unsigned long long)md->stats.unsupported, ftrt_nop_style,
			 (unsigned long long)md->stats.init_ns, (unsigned long long)md->stats.pages,
			 ftrt_config_state(md->stats.config), (unsigned long long)md->stats.literal,
			 (unsigned long long)md->stats.misaligned);
	if (n > 0)
		ftrt_say_text(&s, buf);
	ftrt_say_end(&s);
}

/*
 * A module without a site table. Nothing to do, unless ftpatch enable
 * found its sites by decoding function entries and enabled some: they
 * call the runtime already, and can be neither checked nor changed here
 * (no table says where they are), so the tracer the record names, or
 * FTRACE's, is started for them. FTRACE_FILTER cannot apply, nor can
 * the subtree filters name its functions.
 */
static void no_table(struct ftrt_mod *md)
{
	const struct ftrt_config *cfg = ftrt_config_check(md->desc->config);
	if (!cfg || (cfg->flags & (FTRT_CFG_PATCHED | FTRT_CFG_NOTABLE)) != (FTRT_CFG_PATCHED | FTRT_CFG_NOTABLE) ||
	    cfg->tracer > FTRT_NOP || cfg->enabled == 0)
		return;
	ftrt_pass_stats->config = ftrt_opts.env ? FTRT_CFG_STATE_OVERRIDDEN : FTRT_CFG_STATE_PATCHED;
	ftrt_pass_stats->enabled = cfg->enabled; /* as recorded: there is no table to count them from */
	int tracer = adopt(ftrt_opts.tracer ? ftrt_opts.tracer : (int)cfg->tracer, md->path ? md->path : "the program");
	ftrt_subtree_setup();
	if (tracer == FTRT_FUNCTION || tracer == FTRT_GRAPH) {
		ftrt_trace_open();
		if ((cfg->flags & FTRT_CFG_LIBCALL) && !ftrt_opts.env)
			ftrt_libcalls_hook_baked(md, cfg->libcalls, sizeof cfg->libcalls);
	}
}

/* The symbol table could not be read: say so, and what is traced. */
static void unreadable(const struct ftrt_mod *md, const char *what)
{
	struct say s;
	ftrt_say_begin(&s);
	ftrt_say_text(&s, "cannot read the symbol table of ");
	if (md->path)
		ftrt_say_str(&s, md->path);
	else
		ftrt_say_text(&s, "the program");
	ftrt_say_text(&s, " (stripped?); tracing ");
	ftrt_say_text(&s, what);
	ftrt_say_end(&s);
}

/*
 * With the module's symbol table open: want[i] for each of its sorted
 * sites s[0..m) as FTRACE_FILTER says of its function, and, with the
 * subtree filters on, the sites they mark kept in the module's table
 * (subtree.c). 0, or -1 when there was no memory for it.
 */
static int by_name(const struct ftrt_mod *md, const uintptr_t *s, size_t m, unsigned char *want)
{
	unsigned char *marks = NULL;
	if (ftrt_subtree && m) {
		marks = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (marks == MAP_FAILED)
			return -1;
	}
	int r = ftrt_symbols_mark_mod(md, s, m, want, marks, ftrt_pick, NULL);
	if (r == 0 && marks)
		r = ftrt_subtree_add(md->owner, md->lo, md->hi, s, want, marks, m);
	if (marks)
		munmap(marks, m);
	return r;
}

/*
 * What each of the module's sorted sites s[0..m) becomes when a tracer
 * is asked for: want[i] = WANT_ENTRY or WANT_MCOUNT for the functions
 * FTRACE_FILTER names (default all), WANT_NOP for the rest, and the
 * trace directory made when any is traced; with the subtree filters on
 * (function_graph), the sites they mark (by_name). Returns 1 when, with
 * no filter, that is left to the walk and settle (WANT_AUTO).
 *
 * With no filter (and no subtree filter), no name is needed, and a site
 * that calls __fentry__ is at a function's entry by construction: the
 * walk enables those as it meets them (resolve), and the symbol table is
 * read after it only if some other site needs it (settle: -pg's calls of
 * mcount, after a prologue only a function's start tells; NOPs, from
 * recordmcount --nop or -fpatchable-function-entry). Reading it is most
 * of the pass's cost
 * when every site is traced; and a stripped program built with -mfentry
 * is traced whole (its trace then shows addresses, or names from an
 * unstripped copy: replay --exe). A site of __fentry__ in code no
 * function symbol covers is traced too, which the symbol table would not
 * allow.
 */
static int choose(const struct ftrt_mod *md, const uintptr_t *s, size_t m, unsigned char *want)
{
	const char *filter = ftrt_opts.filter && *ftrt_opts.filter ? ftrt_opts.filter : NULL;
	ftrt_subtree_setup();
	if (!filter && !ftrt_subtree) {
		int go = ftrt_mode == FTRT_NOP || ftrt_trace_open() == 0;
		memset(want, go ? WANT_AUTO : WANT_NOP, m);
		return go;
	}
	if (ftrt_symbols_open(md->path ? md->path : "/proc/self/exe") != 0)
		unreadable(md, "none of it");
	else if ((ftrt_mode == FTRT_NOP || ftrt_trace_open() == 0) && by_name(md, s, m, want) != 0) {
		ftrt_say("ftrt: no memory for the load-time pass's site index; tracing nothing\n");
		memset(want, WANT_NOP, m);
	}
	ftrt_symbols_close();
	return 0;
}

/*
 * The subtree filters' marks of a pre-patched module's sites s[0, m),
 * whose record says which are enabled: every function its symbol table
 * names is taken for traced. Before the trace starts, as the enabled
 * sites call the tracer from then on.
 */
static void mark_patched(const struct ftrt_mod *md, const uintptr_t *s, size_t m)
{
	unsigned char *want = mmap(NULL, m ? m : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (want == MAP_FAILED || ftrt_symbols_open(md->path ? md->path : "/proc/self/exe") != 0)
		unreadable(md, "the sites its record enables, whose functions FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE cannot name");
	else if (by_name(md, s, m, want) != 0)
		ftrt_say("ftrt: no memory for the subtree filters' table of sites; FTRACE_GRAPH_FUNCS and FTRACE_GRAPH_NOTRACE name none of them\n");
	ftrt_symbols_close();
	if (want != MAP_FAILED)
		munmap(want, m ? m : 1);
}

/*
 * After the walk of a table chosen WANT_AUTO: the sites it left as they
 * were (WANT_UNKNOWN) get what the symbol table says, in a second walk
 * over them alone. Until then they hold what they held at start: the
 * compiler's call of mcount (a stub that returns) or a NOP.
 */
static void settle(const struct ftrt_mod *md, const uintptr_t *s, size_t m, const unsigned char *want)
{
	size_t k = 0;
	for (size_t i = 0; i < m; i++)
		k += want[i] == WANT_UNKNOWN;
	if (k == 0)
		return;
	size_t bytes = k * (sizeof(uintptr_t) + 1);
	uintptr_t *s2 = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s2 == MAP_FAILED) {
		ftrt_pass_stats->failed += k;
		return;
	}
	unsigned char *w2 = (unsigned char *)(s2 + k);
	for (size_t i = 0, j = 0; i < m; i++)
		if (want[i] == WANT_UNKNOWN)
			s2[j] = s[i], w2[j++] = WANT_UNKNOWN;
	if (ftrt_symbols_open(md->path ? md->path : "/proc/self/exe") != 0)
		unreadable(md, ftrt_pass_stats->enabled ? "only its sites that call __fentry__" : "none of it");
	else if (ftrt_symbols_mark_mod(md, s2, k, w2, NULL, NULL, NULL) != 0)
		ftrt_say("ftrt: no memory for the load-time pass's site index; tracing its sites that call __fentry__ alone\n");
	ftrt_symbols_close();
	for (size_t j = 0; j < k; j++)
		if (w2[j] == WANT_UNKNOWN)
			w2[j] = WANT_NOP; /* in no function, or unreadable */
	ftrt_sites_walk(s2, w2, k, 0);
	munmap(s2, bytes);
}

/* The module whose sites the pass is over (ftrt.h). */

/*
 * The pass over one module's table (the program's, or a shared object's
 * at its registration): sort it, then either only check it (a file
 * pre-patched by ftpatch enable, with no environment to override it) or
 * turn every site into a NOP or a call to the tracer. Its counts go to
 * the pass's own (ftrt_pass_stats, for sites.c) and are kept in
 * md->stats when it is done.
 */
void ftrt_pass(struct ftrt_mod *md)
{
	const struct ftrt_module *mod = md->desc;
	const char *name = md->path ? md->path : "the program";
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct ftrt_stats counts = { 0 };
	ftrt_pass_stats = &counts;
	ftrt_module_use(mod);
	ftrt_arch_begin(md->owner);
	ftrt_arch_areas(mod->areas, mod->areas_end);
	ftrt_read_env();
	size_t n = mod->start && mod->stop > mod->start ? (size_t)(mod->stop - mod->start) : 0, m = 0;
	const uintptr_t *s = NULL;
	uintptr_t *copy = NULL; /* the table sorted, when it is not as linked */
	unsigned char *want = NULL;
	if (n == 0) {
		no_table(md);
		/* Its library calls all the same: a module without a table
		 * (sites found by ftpatch, or none), or a shared object without
		 * sites served for them alone (FTRACE_LIBCALL=nest: registry.c's
		 * scan); not twice (no_table hooks a baked list). */
		if (!md->libcalls.slots && !md->unrelocated && ftrt_libcalls_on(mod == &ftrt_module_plain ? LIBCALL_NEST : LIBCALL_ON))
			ftrt_libcalls_hook(md);
		goto out;
	}
	ftrt_libcalls_module(md); /* its functions record their own calls */
	ftrt_pass_stats->entries = n;
	/* Each object's table is in address order and the linker lays the
	 * objects out in the order it gathers their tables, so the whole table
	 * is usually sorted already, with no zero or repeated word: then it is
	 * read where it is (a copy costs a page fault per 512 sites). */
	s = mod->start;
	m = n;
	size_t clean = s[0] != 0;
	for (size_t i = 1; i < n && clean; i++)
		clean = s[i - 1] < s[i];
	if (!clean) {
		uintptr_t *c = mmap(NULL, n * sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED) {
			ftrt_pass_stats->failed = n;
			goto out;
		}
		copy = c;
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (mod->start[i])
				c[k++] = mod->start[i];
			else
				ftrt_pass_stats->zero++;
		}
		size_t unsorted = 0;
		for (size_t i = 1; i < k && !unsorted; i++)
			unsorted = c[i - 1] > c[i];
		if (unsorted)
			qsort(c, k, sizeof *c, cmp_addr);
		m = 0;
		for (size_t i = 0; i < k; i++) {
			if (m && c[m - 1] == c[i])
				ftrt_pass_stats->dups++;
			else
				c[m++] = c[i];
		}
		s = c;
	}

	/*
	 * A pre-patched file, and nothing in the environment to say otherwise:
	 * check, start the recorded tracer, write nothing. The record must
	 * count the sites this table holds; one that does not was written
	 * for another table (the file changed after ftpatch), and is ignored.
	 */
	/* Loaded late (pass.h): count what the sites hold, write nothing. */
	if (ftrt_pass_late) {
		ftrt_sites_walk(s, NULL, m, -1);
		goto out;
	}
	const struct ftrt_config *cfg = ftrt_config_check(mod->config);
	if (cfg && (cfg->flags & FTRT_CFG_PATCHED)) {
		if (cfg->sites != m || cfg->tracer > FTRT_NOP) {
			struct say s;
			ftrt_say_begin(&s);
			ftrt_say_str(&s, name);
			ftrt_say_text(&s, ": .ftrt_config does not match the site table (changed after ftpatch enable?); ignored");
			ftrt_say_end(&s);
			ftrt_pass_stats->config = FTRT_CFG_STATE_MISMATCH;
		} else if (ftrt_opts.env) {
			ftrt_pass_stats->config = FTRT_CFG_STATE_OVERRIDDEN;
		} else {
			ftrt_pass_stats->config = FTRT_CFG_STATE_PATCHED;
			int tracer = (int)cfg->tracer;
			adopt(tracer, name);
			ftrt_sites_walk(s, NULL, m, tracer ? tracer : -1);
			/* The enabled sites stay calls; ftrt_entry returns at once
			 * while no trace is open. */
			if (tracer == FTRT_FUNCTION || tracer == FTRT_GRAPH) {
				ftrt_subtree_setup();
				if (ftrt_subtree)
					mark_patched(md, s, m);
				ftrt_trace_open();
				if ((cfg->flags & FTRT_CFG_LIBCALL) && !md->unrelocated)
					ftrt_libcalls_hook_baked(md, cfg->libcalls, sizeof cfg->libcalls);
			}
			goto out;
		}
	}
	if (!ftrt_opts.probed) {
		ftrt_opts.probed = 1;
		ftrt_nop_style = ftrt_arch_probe(ftrt_env(ENV_NOP));
	}

	/* What to trace: FTRACE=function, function_graph or nop (or, when
	 * only FTRACE_FILTER is set in a pre-patched file, the tracer it
	 * records), the functions FTRACE_FILTER names (default all), into
	 * FTRACE_OUT (default ./ftrace.data). */
	want = mmap(NULL, m ? m : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (want == MAP_FAILED) {
		want = NULL;
		ftrt_pass_stats->failed = m;
		goto out;
	}
	int tracer = ftrt_opts.tracer;
	if (!(ftrt_opts.mode && *ftrt_opts.mode) && ftrt_pass_stats->config == FTRT_CFG_STATE_OVERRIDDEN)
		tracer = (int)cfg->tracer;
	int deferred = tracer && adopt(tracer, name) && choose(md, s, m, want);
	ftrt_sites_walk(s, want, m, 0);
	if (deferred)
		settle(md, s, m, want);
	ftrt_arch_seal();
	/* Not the slots of a module not relocated yet (ftrt_mod's
	 * unrelocated): the loader would write over them. */
	if ((tracer == FTRT_FUNCTION || tracer == FTRT_GRAPH) && ftrt_libcall_wanted() && !md->unrelocated)
		ftrt_libcalls_hook(md);
out:
	ftrt_arch_areas(NULL, NULL);
	if (want)
		munmap(want, m ? m : 1);
	if (copy)
		munmap(copy, n * sizeof *copy);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ftrt_pass_stats->init_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	md->stats = counts;
	ftrt_pass_stats = NULL;
	if (ftrt_env(ENV_DEBUG))
		report(md, m);
}

struct ftrt_patch_calls ftrt_patch_up;

void ftrt_patch_wire(const struct ftrt_patch_calls *c)
{
	ftrt_patch_up = *c;
}
