/*
 * The function tracer: one record per call of an enabled function, into a
 * buffer of the calling thread, written to that thread's stream in the
 * trace directory when full, when the thread exits and when the process
 * exits.
 *
 * Hot path (ftrt_entry): no lock, no allocation, no libc call: a
 * thread-local buffer (initial-exec TLS), a recursion guard (a signal
 * handler that calls traced functions while the tracer runs has those
 * calls dropped and counted, never corrupted), a timestamp from rdtsc.
 * Flushing uses raw system calls, so errno is never touched and the
 * writer is async-signal-safe.
 *
 * Layout of the trace directory (read by the Go package trace):
 *   meta                     key value lines, written at exit
 *   <pid>-<tid>.trace        one stream per thread: a 16-byte header
 *                            ("ftrtrec1", pid, tid: u32 LE) then records
 *
 * function_graph: each traced call pushes {return address, site, stack
 * pointer at return} on the thread's shadow stack and replaces its return
 * address with return_to_handler, which records the exit and returns
 * where the call really returns. Deeper than SHADOW_MAX, calls are
 * counted (overflow), not graphed: never a crash.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ftrt.h"

/* One event of the function whose site is ip. */
struct ftrt_rec {
	uint64_t ts;   /* rdtsc */
	uint64_t ip;   /* the site's run-time address */
	uint64_t info; /* type << 62 | the caller's return address (call, entry) */
};

/* Record types (info >> 62). */
enum {
	REC_CALL = 0,    /* function tracer: a call; no exit follows */
	REC_ENTRY = 1,   /* function_graph: entry; an exit or unwind follows */
	REC_EXIT = 2,    /* function_graph: the function returned */
	REC_UNWOUND = 3, /* function_graph: its frame was left without returning (longjmp) */
};
#define REC_INFO(type, parent) ((uint64_t)(type) << 62 | ((uint64_t)(parent) & ((1ull << 62) - 1)))

/* A graphed call, on the thread's shadow stack: what to return to, and
 * the stack pointer the function will return with (its frame check). */
struct shadow {
	uintptr_t ret, ip, sp;
};

#define SHADOW_MAX 1024 /* calls graphed at once per thread; deeper ones are counted, not graphed */

int ftrt_mode;
unsigned ftrt_max_depth = SHADOW_MAX; /* FTRACE_DEPTH: calls deeper than this are not graphed */
uint64_t ftrt_thresh_tsc;             /* FTRACE_THRESH in rdtsc ticks: shorter leaf calls are not kept */

#define TBUF_RECS (64 * 1024) /* 1.5 MiB of records per thread */

struct tbuf {
	struct tbuf *next; /* every live buffer, for the flush at exit (under lock) */
	int fd;            /* the thread's stream, opened at its first flush; -1 before */
	int pid, tid;
	uint32_t n;        /* records in recs */
	uint32_t depth;    /* entries on shadow */
	struct shadow shadow[SHADOW_MAX];
	struct ftrt_rec recs[TBUF_RECS];
};

static __thread struct tbuf *tb __attribute__((tls_model("initial-exec")));
/* Set while the tracer runs on this thread: a signal handler's traced
 * calls in that window are dropped and counted, not interleaved. */
static __thread volatile int busy __attribute__((tls_model("initial-exec")));

static struct tbuf *all;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static _Atomic uint64_t dropped;
static _Atomic uint64_t overflow; /* calls not graphed: shadow stack full */
static _Atomic uint64_t unwound;  /* graphed frames left without returning */
static int dir_fd = -1;
static int creator_pid;
static uint64_t tsc_start, mono_start;

/* Raw system calls: no errno, no locks, safe in a signal handler. */
static long sys(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Decimal digits of v at p; returns the end. */
static char *utoa(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		long w = sys(SYS_write, fd, (long)p, (long)len, 0, 0, 0);
		if (w == -4 /* EINTR */)
			continue;
		if (w <= 0) {
			atomic_fetch_add_explicit(&dropped, len / sizeof(struct ftrt_rec), memory_order_relaxed);
			return;
		}
		p += w;
		len -= (size_t)w;
	}
}

static void flush(struct tbuf *b)
{
	if (b->n == 0)
		return;
	if (b->fd < 0) {
		char name[64], *p = name;
		p = utoa(p, (uint64_t)b->pid);
		*p++ = '-';
		p = utoa(p, (uint64_t)b->tid);
		memcpy(p, ".trace", 7);
		b->fd = (int)sys(SYS_openat, dir_fd, (long)name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
		if (b->fd < 0) {
			atomic_fetch_add_explicit(&dropped, b->n, memory_order_relaxed);
			b->n = 0;
			return;
		}
		unsigned char hdr[16] = "ftrtrec1";
		uint32_t ids[2] = { (uint32_t)b->pid, (uint32_t)b->tid };
		memcpy(hdr + 8, ids, 8);
		write_all(b->fd, hdr, sizeof hdr);
	}
	write_all(b->fd, b->recs, (size_t)b->n * sizeof(struct ftrt_rec));
	b->n = 0;
}

/* A thread's first event: map its buffer and register it for the flush
 * at thread exit (pthread key destructor) and at process exit (list). */
static struct tbuf *tbuf_new(void)
{
	long m = sys(SYS_mmap, 0, sizeof(struct tbuf), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m < 0 && m > -4096)
		return NULL;
	struct tbuf *b = (struct tbuf *)m;
	b->fd = -1;
	b->pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	b->tid = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	pthread_mutex_lock(&all_lock);
	b->next = all;
	all = b;
	pthread_mutex_unlock(&all_lock);
	pthread_setspecific(exit_key, b);
	tb = b;
	return b;
}

static void tbuf_free(struct tbuf *b)
{
	flush(b);
	if (b->fd >= 0)
		sys(SYS_close, b->fd, 0, 0, 0, 0, 0);
	sys(SYS_munmap, (long)b, sizeof *b, 0, 0, 0, 0);
}

/* Thread exit: flush, unlink from the list, unmap. */
static void thread_exit(void *p)
{
	struct tbuf *b = p;
	busy = 1; /* nothing of this thread is traced from here on */
	pthread_mutex_lock(&all_lock);
	for (struct tbuf **pp = &all; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	pthread_mutex_unlock(&all_lock);
	tb = NULL;
	tbuf_free(b);
}

/* In a child after fork: the parent's records are the parent's to write,
 * and only the forking thread exists here. Keep its buffer, emptied and
 * with a stream of its own; unmap the copies of the others'. */
static void after_fork_child(void)
{
	struct tbuf *keep = tb;
	for (struct tbuf *b = all, *next; b; b = next) {
		next = b->next;
		if (b != keep)
			sys(SYS_munmap, (long)b, sizeof *b, 0, 0, 0, 0);
	}
	all = keep;
	pthread_mutex_init(&all_lock, NULL);
	if (keep) {
		keep->next = NULL;
		keep->n = 0;
		keep->fd = -1;
		keep->pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
		keep->tid = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	}
}

static void meta_line(int fd, const char *key, uint64_t v)
{
	char buf[96], *p = buf;
	size_t k = strlen(key);
	memcpy(p, key, k);
	p += k;
	*p++ = ' ';
	p = utoa(p, v);
	*p++ = '\n';
	write_all(fd, buf, (size_t)(p - buf));
}

static int first_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

/* The program's GNU build-id, as hex into out (at least 2*64+1 bytes);
 * "" when it has none. From its PT_NOTE segments, already in memory. */
static int first_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	char *out = data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (p + 12 <= end) {
			uint32_t namesz, descsz, type;
			memcpy(&namesz, p, 4);
			memcpy(&descsz, p + 4, 4);
			memcpy(&type, p + 8, 4);
			const unsigned char *name = p + 12, *desc = name + ((namesz + 3) & ~3u);
			if (desc + descsz > end)
				break;
			if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 && descsz <= 64) {
				static const char hex[] = "0123456789abcdef";
				for (uint32_t k = 0; k < descsz; k++) {
					out[2 * k] = hex[desc[k] >> 4];
					out[2 * k + 1] = hex[desc[k] & 15];
				}
				out[2 * descsz] = 0;
				return 1;
			}
			p = desc + ((descsz + 3) & ~3u);
		}
	}
	return 1;
}

/* Process exit: flush every thread's buffer, then (in the process that
 * made the directory) write the metadata the reader needs. */
static void trace_stop(void)
{
	busy = 1;
	uint64_t tsc_end = rdtsc(), mono_end = mono_ns();
	pthread_mutex_lock(&all_lock);
	for (struct tbuf *b = all; b; b = b->next)
		flush(b);
	pthread_mutex_unlock(&all_lock);
	if ((int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != creator_pid)
		return;
	int fd = (int)sys(SYS_openat, dir_fd, (long)"meta.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
	if (fd < 0)
		return;
	char exe[4096];
	long n = sys(SYS_readlink, (long)"/proc/self/exe", (long)exe, sizeof exe - 1, 0, 0, 0);
	exe[n > 0 ? n : 0] = 0;
	uintptr_t bias = 0;
	dl_iterate_phdr(first_bias, &bias);
	const char head[] = "format ftrt-trace 1\nrecord 24 ts ip info\nclock tsc\ntracer ";
	write_all(fd, head, sizeof head - 1);
	const char *tracer = ftrt_mode == FTRT_GRAPH ? "function_graph\nexe " : "function\nexe ";
	write_all(fd, tracer, strlen(tracer));
	write_all(fd, exe, strlen(exe));
	write_all(fd, "\n", 1);
	char build_id[2 * 64 + 1] = "";
	dl_iterate_phdr(first_build_id, build_id);
	if (build_id[0]) {
		write_all(fd, "build_id ", 9);
		write_all(fd, build_id, strlen(build_id));
		write_all(fd, "\n", 1);
	}
	meta_line(fd, "pid", (uint64_t)creator_pid);
	meta_line(fd, "bias", bias);
	meta_line(fd, "tsc_start", tsc_start);
	meta_line(fd, "tsc_end", tsc_end);
	meta_line(fd, "mono_start_ns", mono_start);
	meta_line(fd, "mono_end_ns", mono_end);
	meta_line(fd, "sites", ftrt_stats.entries - ftrt_stats.zero - ftrt_stats.dups);
	meta_line(fd, "enabled", ftrt_stats.enabled);
	meta_line(fd, "skipped", ftrt_stats.skipped);
	meta_line(fd, "failed", ftrt_stats.failed);
	meta_line(fd, "unsupported", ftrt_stats.unsupported);
	meta_line(fd, "dropped", atomic_load_explicit(&dropped, memory_order_relaxed));
	meta_line(fd, "overflow", atomic_load_explicit(&overflow, memory_order_relaxed));
	meta_line(fd, "unwound", atomic_load_explicit(&unwound, memory_order_relaxed));
	meta_line(fd, "max_depth", ftrt_max_depth);
	meta_line(fd, "thresh_tsc", ftrt_thresh_tsc);
	const char *cfg = ftrt_config_state(); /* config patched: traced as ftpatch enable recorded */
	write_all(fd, "config ", 7);
	write_all(fd, cfg, strlen(cfg));
	write_all(fd, "\n", 1);
	sys(SYS_fsync, fd, 0, 0, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	sys(SYS_renameat, dir_fd, (long)"meta.tmp", dir_fd, (long)"meta", 0, 0);
}

/*
 * Make the trace directory. One that exists is never mixed with this run
 * nor destroyed: it is moved aside to DIR.old (or DIR.old.N when that is
 * taken too).
 */
/* ns in rdtsc ticks, at a rate measured over 2 ms (only when a
 * threshold needs converting at start; the trace's own clock conversion
 * uses the whole run). Integer arithmetic: the runtime has no FP. */
uint64_t ftrt_ns_to_tsc(uint64_t ns)
{
	uint64_t t0 = rdtsc(), m0 = mono_ns(), m1;
	while ((m1 = mono_ns()) - m0 < 2000000)
		;
	return (uint64_t)((unsigned __int128)ns * (rdtsc() - t0) / (m1 - m0));
}

int ftrt_trace_start(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) == 0) {
		char aside[4200];
		int i = 0;
		do {
			if (i == 0)
				snprintf(aside, sizeof aside, "%s.old", dir);
			else
				snprintf(aside, sizeof aside, "%s.old.%d", dir, i);
			i++;
		} while (stat(aside, &st) == 0 && i < 1000);
		if (rename(dir, aside) != 0)
			return -1;
	}
	if (mkdir(dir, 0755) != 0)
		return -1;
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return -1;
	if (pthread_key_create(&exit_key, thread_exit) != 0)
		return -1;
	pthread_atfork(NULL, NULL, after_fork_child);
	creator_pid = getpid();
	tsc_start = rdtsc();
	mono_start = mono_ns();
	atexit(trace_stop);
	return 0;
}

static inline void emit(struct tbuf *b, uint64_t ts, uint64_t ip, uint64_t info)
{
	uint32_t i = b->n;
	struct ftrt_rec *r = &b->recs[i];
	r->ts = ts;
	r->ip = ip;
	r->info = info;
	if (++i == TBUF_RECS) {
		b->n = i;
		flush(b);
		i = 0;
	}
	b->n = i;
}

void return_to_handler(void);

/*
 * The hot path, called from ftrace_caller5/6 with the site's address and
 * where the function's return address (the parent ip) is on the stack.
 */
void ftrt_entry(uintptr_t ip, uintptr_t *parent_slot)
{
	/* No trace open: a pre-patched site (ftpatch enable) called before
	 * ftrt_init started tracing, or after it failed to. Return before
	 * touching TLS, which may not be set up yet (ifunc resolvers). */
	if (__builtin_expect(dir_fd < 0, 0))
		return;
	if (busy) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return;
	}
	busy = 1;
	struct tbuf *b = tb;
	if (__builtin_expect(!b, 0))
		b = tbuf_new();
	if (__builtin_expect(b == NULL, 0)) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
	} else if (ftrt_mode != FTRT_GRAPH) {
		emit(b, rdtsc(), ip, REC_INFO(REC_CALL, *parent_slot));
	} else {
		uint64_t ts = rdtsc();
		uintptr_t sp = (uintptr_t)(parent_slot + 1);
		/*
		 * Frame check at entry. A graphed call whose stack pointer is
		 * below this one's was left without returning (longjmp); so was
		 * one at the same stack pointer whose return slot now holds an
		 * ordinary return address. At the same stack pointer with the
		 * slot still holding return_to_handler, the caller tail-called
		 * us: it stays, and returns after us.
		 */
		while (b->depth > 0 && (b->shadow[b->depth - 1].sp < sp ||
					(b->shadow[b->depth - 1].sp == sp && *parent_slot != (uintptr_t)return_to_handler))) {
			b->depth--;
			emit(b, ts, b->shadow[b->depth].ip, REC_INFO(REC_UNWOUND, 0));
			atomic_fetch_add_explicit(&unwound, 1, memory_order_relaxed);
		}
		if (b->depth < ftrt_max_depth) {
			struct shadow *sh = &b->shadow[b->depth++];
			sh->ret = *parent_slot;
			sh->ip = ip;
			sh->sp = sp;
			*parent_slot = (uintptr_t)return_to_handler;
			emit(b, ts, ip, REC_INFO(REC_ENTRY, sh->ret));
		} else if (b->depth == SHADOW_MAX) {
			atomic_fetch_add_explicit(&overflow, 1, memory_order_relaxed);
		}
	}
	busy = 0;
}

/*
 * Called from return_to_handler with the stack pointer the function
 * returned with. Frames deeper than that one were left without returning
 * (longjmp): they are popped and recorded as unwound. Returns where the
 * function really returns to.
 */
uintptr_t ftrt_graph_exit(uintptr_t sp)
{
	struct tbuf *b = tb;
	busy = 1;
	uint64_t ts = rdtsc();
	while (b && b->depth > 0 && b->shadow[b->depth - 1].sp < sp) {
		b->depth--;
		emit(b, ts, b->shadow[b->depth].ip, REC_INFO(REC_UNWOUND, 0));
		atomic_fetch_add_explicit(&unwound, 1, memory_order_relaxed);
	}
	if (!b || b->depth == 0) {
		/* No record of where to return: nothing sane is left to do. */
		static const char msg[] = "ftrt: function_graph: return with an empty shadow stack\n";
		sys(SYS_write, 2, (long)msg, sizeof msg - 1, 0, 0, 0);
		sys(SYS_kill, sys(SYS_getpid, 0, 0, 0, 0, 0, 0), 6 /* SIGABRT */, 0, 0, 0, 0);
	}
	struct shadow *sh = &b->shadow[--b->depth];
	/* FTRACE_THRESH: a call shorter than the threshold that called
	 * nothing traced (its entry is still the last record) is taken back. */
	struct ftrt_rec *last = b->n ? &b->recs[b->n - 1] : NULL;
	if (ftrt_thresh_tsc && last && last->ip == sh->ip && last->info >> 62 == REC_ENTRY &&
	    ts - last->ts < ftrt_thresh_tsc)
		b->n--;
	else
		emit(b, ts, sh->ip, REC_INFO(REC_EXIT, 0));
	busy = 0;
	return sh->ret;
}

/*
 * Before an exception (or a forced unwind) walks the stack: put every
 * graphed frame's real return address back where the unwinder will read
 * it. The entries stay on the shadow stack until the catch says which
 * frames survived.
 */
void ftrt_graph_suspend(void)
{
	struct tbuf *b = tb;
	if (!b || ftrt_mode != FTRT_GRAPH)
		return;
	busy = 1;
	for (uint32_t i = 0; i < b->depth; i++) {
		uintptr_t *slot = (uintptr_t *)b->shadow[i].sp - 1;
		if (*slot == (uintptr_t)return_to_handler)
			*slot = b->shadow[i].ret;
	}
	busy = 0;
}

/*
 * In the frame that caught the exception, whose stack pointer was sp when
 * it called __cxa_begin_catch: calls deeper than it were unwound; the
 * others (their return slots above sp) survive, and are hijacked again so
 * their exits are recorded.
 */
void ftrt_graph_resume(uintptr_t sp)
{
	struct tbuf *b = tb;
	if (!b || ftrt_mode != FTRT_GRAPH)
		return;
	busy = 1;
	uint64_t ts = rdtsc();
	while (b->depth > 0 && b->shadow[b->depth - 1].sp <= sp) {
		b->depth--;
		emit(b, ts, b->shadow[b->depth].ip, REC_INFO(REC_UNWOUND, 0));
		atomic_fetch_add_explicit(&unwound, 1, memory_order_relaxed);
	}
	for (uint32_t i = 0; i < b->depth; i++) {
		uintptr_t *slot = (uintptr_t *)b->shadow[i].sp - 1;
		if (*slot == b->shadow[i].ret)
			*slot = (uintptr_t)return_to_handler;
	}
	busy = 0;
}
