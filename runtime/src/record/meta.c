/*
 * The trace's metadata file, meta: key value lines the reader (Go
 * package trace) needs, written while the run goes on and at its end,
 * each time whole or not at all (a temporary file renamed over meta).
 * Calls stream.c (the writes), registry.c (the modules), subtree.c's
 * settings, dir.c and raw system calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch/fds.h"
#include "tracer.h"

/* The config record's state's name, for the metadata (`config <name>`)
 * and the pass's FTRACE_DEBUG report (ftrt.h). */
const char *ftrt_config_state(uint64_t state)
{
	static const char *const names[] = FTRT_CFG_STATE_NAMES;
	return state < sizeof names / sizeof names[0] ? names[state] : "none";
}

/*
 * A metadata file being written: lines gathered in a buffer (a write
 * system call each would be most of the metadata's cost), each write
 * within RLIMIT_FSIZE, and failed for good at the first that does not go
 * whole. On the stack: the trace's end may write one in a signal handler.
 */
struct meta_out {
	struct ftrt_fd f; /* checked before each write (fds.h) */
	int failed;
	uint32_t n;    /* bytes in buf */
	uint64_t off;  /* where buf goes in the file */
	char buf[512];
};

static void meta_flush(struct meta_out *o)
{
	if (!o->failed && o->n &&
	    (!ftrt_fd_ours(&o->f) || ftrt_fsize_room(o->off) < o->n || ftrt_put(o->f.fd, o->buf, o->n, o->off) != o->n))
		o->failed = 1;
	o->off += o->n;
	o->n = 0;
}

static void meta_put(struct meta_out *o, const char *p, size_t len)
{
	while (len > 0) {
		if (o->n == sizeof o->buf)
			meta_flush(o);
		size_t k = sizeof o->buf - o->n < len ? sizeof o->buf - o->n : len;
		memcpy(o->buf + o->n, p, k);
		o->n += (uint32_t)k;
		p += k;
		len -= k;
	}
}

static void meta_str(struct meta_out *o, const char *s)
{
	meta_put(o, s, strlen(s));
}

static void meta_line(struct meta_out *o, const char *key, uint64_t v)
{
	char buf[96], *p = buf;
	size_t k = strlen(key);
	memcpy(p, key, k);
	p += k;
	*p++ = ' ';
	p = ftrt_utoa(p, v);
	*p++ = '\n';
	meta_put(o, buf, (size_t)(p - buf));
}

/*
 * A setting as the user gave it (v; nothing when NULL), on a line of its
 * own: "key value". Its bytes that would end the line or make it
 * something else than text (control characters) are written as '?', and
 * no more than SETTING_MAX of them, well within a line the reader takes.
 */
#define SETTING_MAX 4096
static void meta_setting(struct meta_out *o, const char *key, const char *v)
{
	if (!v)
		return;
	meta_str(o, key);
	meta_str(o, " ");
	for (size_t i = 0; v[i] && i < SETTING_MAX; i++) {
		char c = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
		meta_put(o, &c, 1);
	}
	meta_str(o, "\n");
}

/*
 * The command line, as /proc/self/cmdline gave it when the trace began
 * (the first metadata is written then, before any thread of the
 * program's own runs; later ones reuse it, so a program that rewrites
 * its argv later does not change it): at most CMDLINE_MAX bytes.
 */
#define CMDLINE_MAX 4096
static char cmdline[CMDLINE_MAX];
static long cmdline_len = -1; /* -1: not read yet */

static void read_cmdline(void)
{
	if (cmdline_len >= 0)
		return;
	cmdline_len = 0;
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/proc/self/cmdline", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (sys_failed(fd))
		return;
	long got = 0, n;
	while (got < CMDLINE_MAX && (n = sys(SYS_read, fd, (long)(cmdline + got), CMDLINE_MAX - got, 0, 0, 0)) > 0)
		got += n;
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	cmdline_len = got;
}

/*
 * "cmdline ARG ARG...": the arguments separated by one space, each
 * byte of an argument that is a space, a backslash or not printable
 * written as \xHH (so an empty argument is nothing between two spaces).
 */
static void meta_cmdline(struct meta_out *o)
{
	static const char hex[] = "0123456789abcdef";
	read_cmdline();
	if (cmdline_len <= 0)
		return;
	meta_str(o, META_KEY_CMDLINE " ");
	for (long i = 0; i < cmdline_len; i++) {
		unsigned char c = (unsigned char)cmdline[i];
		if (c == 0) {
			if (i + 1 < cmdline_len)
				meta_put(o, " ", 1);
			continue;
		}
		if (c <= 0x20 || c >= 0x7f || c == '\\') {
			char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
			meta_put(o, e, 4);
			continue;
		}
		meta_put(o, (const char *)&c, 1);
	}
	meta_str(o, "\n");
}

/* "comm NAME": the process's name now (its first thread's, which
 * prctl(PR_SET_NAME) and pthread_setname_np change; /proc/self/comm),
 * as a setting is written. */
static void meta_comm(struct meta_out *o)
{
	char comm[32];
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/proc/self/comm", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (sys_failed(fd))
		return;
	long n = sys(SYS_read, fd, (long)comm, sizeof comm - 1, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if (n <= 0)
		return;
	comm[n] = 0;
	if (comm[n - 1] == '\n')
		comm[n - 1] = 0;
	meta_setting(o, META_KEY_COMM, comm);
}

/*
 * The peak resident set of the program's own image, KiB: /proc/self/
 * status's VmHWM; 0 when it cannot be read. Not getrusage's ru_maxrss,
 * which keeps the peak of whatever the process ran before its exec: a
 * program started by ftpatch record (Go's clone shares its memory until
 * the exec) would be said to use ftpatch's. Read a piece at a time, the
 * stack of a signal handler being small.
 */
static uint64_t peak_rss(void)
{
	static const char key[] = "\nVmHWM:";
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/proc/self/status", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (sys_failed(fd))
		return 0;
	char buf[256];
	size_t matched = 1; /* the file's start is a line's */
	int digits = 0;
	uint64_t kb = 0;
	long n;
	while ((n = sys(SYS_read, fd, (long)buf, sizeof buf, 0, 0, 0)) > 0) {
		for (long i = 0; i < n; i++) {
			char c = buf[i];
			if (matched < sizeof key - 1) { /* looking for the key */
				matched = c == key[matched] ? matched + 1 : c == '\n';
				continue;
			}
			if (c >= '0' && c <= '9') {
				kb = kb * 10 + (uint64_t)(c - '0');
				digits = 1;
			} else if (digits || c == '\n') {
				sys(SYS_close, fd, 0, 0, 0, 0, 0);
				return kb;
			}
		}
	}
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	return 0;
}

/* What the process used (getrusage(RUSAGE_SELF): every thread of it, not
 * its children), at the trace's end; its peak resident set its own
 * image's (peak_rss). */
static void meta_usage(struct meta_out *o)
{
	struct rusage ru;
	if (sys(SYS_getrusage, RUSAGE_SELF, (long)&ru, 0, 0, 0, 0) != 0)
		return;
	uint64_t peak = peak_rss();
	meta_line(o, META_KEY_RU_UTIME, (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec);
	meta_line(o, META_KEY_RU_STIME, (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec);
	meta_line(o, META_KEY_RU_MAXRSS, peak ? peak : (uint64_t)ru.ru_maxrss);
	meta_line(o, META_KEY_RU_MINFLT, (uint64_t)ru.ru_minflt);
	meta_line(o, META_KEY_RU_MAJFLT, (uint64_t)ru.ru_majflt);
	meta_line(o, META_KEY_RU_INBLOCK, (uint64_t)ru.ru_inblock);
	meta_line(o, META_KEY_RU_OUBLOCK, (uint64_t)ru.ru_oublock);
	meta_line(o, META_KEY_RU_NVCSW, (uint64_t)ru.ru_nvcsw);
	meta_line(o, META_KEY_RU_NIVCSW, (uint64_t)ru.ru_nivcsw);
}

/*
 * One line per shared object the runtime served while the process ran
 * (the program itself is the exe, bias and build_id lines):
 *
 *   module BIAS LO HI LOAD UNLOAD SITES ENABLED CONFIG BUILD-ID PATH
 *
 * BIAS its load bias, [LO, HI) the run-time extent of its segments,
 * LOAD and UNLOAD trace timestamps of its registration and dlclose (0:
 * before the trace began; loaded until the end), SITES and ENABLED its
 * pass's counts, CONFIG what became of its config record, BUILD-ID its
 * GNU build-id or "-", PATH the rest of the line, as the loader named it.
 * A module loaded again after dlclose has a line per load.
 */
static void meta_modules(struct meta_out *o)
{
	char buf[32];
	for (int i = 1; ftrt_module_at(i); i++) {
		const struct ftrt_mod *md = ftrt_module_at(i);
		const struct ftrt_stats *st = &md->stats;
		uint64_t v[] = { md->bias, md->lo, md->hi, md->load, md->unload, st->entries - st->zero - st->dups, st->enabled };
		meta_str(o, META_KEY_MODULE);
		for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
			buf[0] = ' ';
			meta_put(o, buf, (size_t)(ftrt_utoa(buf + 1, v[k]) - buf));
		}
		meta_str(o, " ");
		meta_str(o, ftrt_config_state(st->config));
		meta_str(o, " ");
		meta_str(o, md->build_id[0] ? md->build_id : "-");
		meta_str(o, " ");
		meta_str(o, md->path ? md->path : "?");
		meta_str(o, "\n");
	}
	meta_line(o, META_KEY_MODULES_FORGOTTEN, ftrt_modules_forgotten);
}

/*
 * The metadata the reader needs, written to tmp and renamed to meta only
 * when written whole, so a reader (or a run killed meanwhile) sees a
 * whole file, the last one written whole: never a worse one (a full disk
 * or RLIMIT_FSIZE leaves the one before in place). ended 0: written while
 * the run goes on, with the clock pair (tsc_end, mono_end) of its
 * writing, which gives the reader the TSC's rate when it must take the
 * run's end from the last record; ended 1: written at the end. gone:
 * threads whose buffers will not be written, beyond those counted
 * (lost_threads; an exec's). The caller holds the module records still,
 * or could not (see ftrt_modules_hold).
 */
/*
 * Room for the final metadata, set aside when the trace opens: META_END
 * is made then with META_RESERVE bytes allocated (fallocate), and the
 * end writes its metadata into them, truncates the file to what it wrote
 * and renames it over meta. A disk that fills up while the program runs
 * then still takes the final metadata, with its counts of what was lost;
 * without the room (a file system that cannot allocate ahead, or already
 * full) the end makes the file as any metadata's. A run killed before
 * its end leaves the file behind, which the reader does not read.
 */
#define META_RESERVE 16384
static int meta_reserved; /* META_END holds the room, not yet used */

void ftrt_meta_reserve(void)
{
	int dir = ftrt_trace_dir();
	meta_reserved = 0; /* a forked child's copy: the parent's room */
	long fd = dir < 0 ? -EBADF : ftrt_file_create(dir, META_END);
	if (sys_failed(fd))
		return;
	/* No allocation past RLIMIT_FSIZE: the kernel would raise SIGXFSZ. */
	if (ftrt_fsize_room(0) >= META_RESERVE && sys(SYS_fallocate, fd, 0, 0, META_RESERVE, 0, 0) == 0)
		meta_reserved = 1;
	else
		sys(SYS_unlinkat, dir, (long)META_END, 0, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
}

static void write_meta(int dir, int own, int ended, uint64_t tsc_end, uint64_t mono_end, const char *tmp, uint64_t gone);

void ftrt_meta_write(int ended, uint64_t tsc_end, uint64_t mono_end, const char *tmp, uint64_t gone)
{
	int dir = ftrt_trace_dir();
	if (dir >= 0)
		write_meta(dir, 1, ended, tsc_end, mono_end, tmp, gone);
}

void ftrt_meta_write_in(int dir, int ended, uint64_t tsc_end, uint64_t mono_end, const char *tmp, uint64_t gone)
{
	write_meta(dir, 0, ended, tsc_end, mono_end, tmp, gone);
}

/* ftrt_meta_write into the directory dir: the trace's (own), or a
 * snapshot's (snapshot.c), which has no room set aside and no usage. */
static void write_meta(int dir, int own, int ended, uint64_t tsc_end, uint64_t mono_end, const char *tmp, uint64_t gone)
{
	long fd = -EEXIST;
	int reserved = own && meta_reserved && strcmp(tmp, META_END) == 0;
	if (reserved) { /* into the room set aside: see reserve_meta */
		meta_reserved = 0;
		fd = sys(SYS_openat, dir, (long)tmp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
		reserved = !sys_failed(fd);
	}
	if (!reserved) {
		fd = ftrt_file_create(dir, tmp);
		if (fd == -EEXIST) { /* left by a writer a signal handler's end interrupted */
			sys(SYS_unlinkat, dir, (long)tmp, 0, 0, 0, 0);
			fd = ftrt_file_create(dir, tmp);
		}
	}
	struct meta_out o;
	if (ftrt_fd_keep(&o.f, fd) != 0)
		return;
	o.failed = 0;
	o.n = 0;
	o.off = 0;
	char exe[4096];
	long n = sys(SYS_readlinkat, AT_FDCWD, (long)"/proc/self/exe", (long)exe, sizeof exe - 1, 0, 0);
	exe[n > 0 ? n : 0] = 0;
	/* The program: the first module, registered by ftrt_init. */
	const struct ftrt_mod *prog = ftrt_module_at(0);
	uintptr_t bias = prog ? prog->bias : 0;
	meta_str(&o, META_KEY_FORMAT " " META_FORMAT "\n" META_KEY_RECORDS " " META_RECORDS_WORDS "\n" META_KEY_CLOCK " ");
	meta_str(&o, ftrt_clock_mono ? META_CLOCK_MONO "\n" META_KEY_TRACER " " : META_CLOCK_TSC "\n" META_KEY_TRACER " ");
	meta_str(&o, ftrt_graph_used || ftrt_mode == FTRT_GRAPH ? FTRT_TRACER_GRAPH "\n" META_KEY_EXE " " : FTRT_TRACER_FUNCTION "\n" META_KEY_EXE " ");
	meta_str(&o, exe);
	meta_str(&o, "\n");
	meta_cmdline(&o);
	if (prog && prog->build_id[0]) {
		meta_str(&o, META_KEY_BUILD_ID " ");
		meta_str(&o, prog->build_id);
		meta_str(&o, "\n");
	}
	meta_line(&o, META_KEY_ENDED, (uint64_t)ended);
	meta_line(&o, META_KEY_PID, (uint64_t)ftrt_creator_pid);
	if (ftrt_image_no) {
		meta_line(&o, META_KEY_PPID, (uint64_t)ftrt_image_ppid);
		meta_line(&o, META_KEY_IMAGE, ftrt_image_no);
		if (ftrt_image_forked)
			meta_line(&o, META_KEY_FORKED, 1);
	}
	meta_line(&o, META_KEY_BIAS, bias);
	meta_line(&o, META_KEY_TSC_START, ftrt_tsc_start);
	meta_line(&o, META_KEY_TSC_END, tsc_end);
	uint64_t hz = ftrt_clock_mono ? 0 : ftrt_tsc_hz();
	if (hz)
		meta_line(&o, META_KEY_TSC_HZ, hz);
	meta_line(&o, META_KEY_MONO_START, ftrt_mono_start);
	meta_line(&o, META_KEY_MONO_END, mono_end);
	/* Counts over every module's pass; each module's own follow below. */
	struct ftrt_stats sum = { 0 };
	for (int i = 0; ftrt_module_at(i); i++) {
		const struct ftrt_stats *st = &ftrt_module_at(i)->stats;
		sum.entries += st->entries - st->zero - st->dups;
		sum.enabled += st->enabled;
		sum.skipped += st->skipped;
		sum.failed += st->failed;
		sum.unsupported += st->unsupported;
		sum.literal += st->literal;
		sum.misaligned += st->misaligned;
	}
	meta_line(&o, META_KEY_SITES, sum.entries);
	/* Changed since, by ftrace.h's API; at the end of ftpatch record -p,
	 * which disabled every site first, what it had enabled. */
	long live = __atomic_load_n(ftrt_end_detached ? &ftrt_live_enabled_peak : &ftrt_live_enabled_delta, __ATOMIC_RELAXED);
	meta_line(&o, META_KEY_ENABLED, (long)sum.enabled + live > 0 ? (uint64_t)((long)sum.enabled + live) : 0);
	meta_line(&o, META_KEY_SKIPPED, sum.skipped);
	meta_line(&o, META_KEY_FAILED, sum.failed);
	meta_line(&o, META_KEY_UNSUPPORTED, sum.unsupported);
	meta_line(&o, META_KEY_LITERAL, sum.literal);
	meta_line(&o, META_KEY_MISALIGNED, sum.misaligned);
	struct ftrt_libcall_stats lc = { 0 };
	for (int i = 0; ftrt_module_at(i); i++) {
		const struct ftrt_libcall_stats *l = &ftrt_module_at(i)->libcalls;
		lc.slots += l->slots, lc.hooked += l->hooked, lc.unresolved += l->unresolved, lc.failed += l->failed;
	}
	if (lc.slots) {
		meta_line(&o, META_KEY_LIBCALL_SLOTS, lc.slots);
		meta_line(&o, META_KEY_LIBCALL_HOOKED, lc.hooked);
		meta_line(&o, META_KEY_LIBCALL_UNRESOLVED, lc.unresolved);
		meta_line(&o, META_KEY_LIBCALL_FAILED, lc.failed);
	}
	uint64_t made = 0;
	for (int i = 0; ftrt_module_at(i); i++)
		made += ftrt_module_at(i)->nprologues;
	if (made || ftrt_prologue_changed) {
		meta_line(&o, META_KEY_PROLOGUE_SITES, made);
		meta_line(&o, META_KEY_PROLOGUE_CHANGED, ftrt_prologue_changed);
		ftrt_prologue_out(dir, (int)ftrt_creator_pid);
	}
	meta_line(&o, META_KEY_DROPPED, atomic_load_explicit(&ftrt_dropped, memory_order_relaxed));
	meta_line(&o, META_KEY_OVERFLOW, atomic_load_explicit(&ftrt_overflow, memory_order_relaxed));
	meta_line(&o, META_KEY_UNWOUND, atomic_load_explicit(&ftrt_unwound, memory_order_relaxed));
	meta_line(&o, META_KEY_STOPPED, atomic_load_explicit(&ftrt_stopped, memory_order_relaxed));
	meta_line(&o, META_KEY_LOST_BYTES, atomic_load_explicit(&ftrt_lost_bytes, memory_order_relaxed));
	meta_line(&o, META_KEY_RECORDED_BYTES, atomic_load_explicit(&ftrt_recorded_bytes, memory_order_relaxed));
	meta_line(&o, META_KEY_LOST_THREADS, atomic_load_explicit(&ftrt_lost_threads, memory_order_relaxed) + gone);
	meta_line(&o, META_KEY_CONTEXTS, atomic_load_explicit(&ftrt_ctx_made, memory_order_relaxed));
	meta_line(&o, META_KEY_CONTEXTS_LOST, atomic_load_explicit(&ftrt_ctx_lost, memory_order_relaxed));
	meta_str(&o, META_KEY_BUFFER " ");
	meta_str(&o, ftrt_ring_slots ? BUFFER_RING "\n" : ftrt_writer ? BUFFER_WRITER "\n" : BUFFER_STREAM "\n");
	if (ftrt_ring_slots) {
		meta_line(&o, META_KEY_RING_BYTES, ftrt_ring_bytes());
		meta_line(&o, META_KEY_RING_ASKED, ftrt_ring_asked);
		meta_line(&o, META_KEY_OVERWRITTEN, atomic_load_explicit(&ftrt_overwritten, memory_order_relaxed));
	}
	/* Scheduler events (sched.c): on or refused from the first metadata,
	 * what was recorded of them in the final one. */
	if (ftrt_sched_state != SCHED_STATE_OFF) {
		meta_str(&o, ftrt_sched_state == SCHED_STATE_ON ? META_KEY_SCHED " " SCHED_ON "\n" : META_KEY_SCHED " " SCHED_REFUSED "\n");
		meta_setting(&o, META_KEY_SCHED_WHY, ftrt_sched_why[0] ? ftrt_sched_why : NULL);
		if (ended && ftrt_sched_state == SCHED_STATE_ON) {
			meta_line(&o, META_KEY_SCHED_SWITCHES, atomic_load_explicit(&ftrt_sched_switches, memory_order_relaxed));
			meta_line(&o, META_KEY_SCHED_LOST, atomic_load_explicit(&ftrt_sched_lost, memory_order_relaxed));
		}
	}
	if (ended && ftrt_end_detached)
		meta_line(&o, META_KEY_DETACHED, 1);
	else if (ended && ftrt_end_signal)
		meta_line(&o, META_KEY_SIGNAL, (uint64_t)ftrt_end_signal);
	else if (ended && ftrt_exit_code >= 0)
		meta_line(&o, META_KEY_EXIT_CODE, (uint64_t)ftrt_exit_code);
	meta_comm(&o);
	if (ended && own) /* not a snapshot's */
		meta_usage(&o);
	meta_line(&o, META_KEY_MAX_DEPTH, ftrt_max_depth);
	meta_line(&o, META_KEY_THRESH_TSC, ftrt_thresh_tsc);
	/* The subtree filters: a trace recorded with them holds only some
	 * of the calls of the traced functions. */
	if (ftrt_subtree) {
		meta_setting(&o, META_KEY_GRAPH_FUNCS, ftrt_subtree_funcs);
		meta_setting(&o, META_KEY_GRAPH_NOTRACE, ftrt_subtree_notrace);
	}
	/* config patched: the program was traced as ftpatch enable recorded */
	meta_str(&o, META_KEY_CONFIG " ");
	meta_str(&o, ftrt_config_state(prog ? prog->stats.config : FTRT_CFG_STATE_NONE));
	meta_str(&o, "\n");
	meta_modules(&o);
	meta_flush(&o);
	if (reserved && !o.failed && (!ftrt_fd_ours(&o.f) || sys(SYS_ftruncate, o.f.fd, (long)o.off, 0, 0, 0, 0) != 0))
		o.failed = 1;
	ftrt_fd_close(&o.f);
	if (o.failed)
		sys(SYS_unlinkat, dir, (long)tmp, 0, 0, 0, 0);
	else
		sys(SYS_renameat, dir, (long)tmp, dir, (long)META_FILE, 0, 0);
}

/*
 * The module records changed (a module's pass ran, the one that opened
 * the trace among them, or a module was unloaded); the caller holds
 * them. While the run goes on, the metadata says what is known now, so
 * that a run killed by a signal leaves a trace the reader can name.
 * A temporary file of its own: an end that could not wait for the
 * records (ftrt_modules_hold) never shares one with it.
 */
void ftrt_trace_meta_update(void)
{
	if (ftrt_trace_fd < 0 || __atomic_load_n(&ftrt_ending, __ATOMIC_RELAXED) || (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != ftrt_creator_pid)
		return;
	ftrt_meta_write(0, now(), mono_ns(), "meta.run.tmp", 0);
}
