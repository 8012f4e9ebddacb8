/*
 * The function tracer: one record per call of an enabled function, into a
 * buffer of the calling thread, written to that thread's stream in the
 * trace directory when full, when the thread exits, when the process
 * ends through exit or quick_exit (handlers of both) or _exit (exit.c),
 * and, the calling thread's, before an exec (exec.c).
 *
 * Hot path (ftrt_entry): no lock, no allocation, no libc call: a
 * thread-local buffer (initial-exec TLS), a recursion guard (a signal
 * handler that calls traced functions while the tracer runs has those
 * calls dropped and counted, never corrupted), a timestamp from rdtsc.
 * Flushing uses raw system calls, so errno is never touched and the
 * writer is async-signal-safe.
 *
 * Layout of the trace directory (made by dir.c; read by the Go package
 * trace):
 *   meta                     key value lines: written when the trace opens
 *                            ("ended 0"), again when a module comes or
 *                            goes, and at the end ("ended 1"); a run
 *                            killed by a signal leaves the "ended 0" one
 *   <pid>-<tid>.trace        one stream per thread: a 16-byte header
 *                            ("ftrtrec3", pid, tid: u32 LE) then records
 *
 * Every file is created with O_EXCL|O_NOFOLLOW in the directory's own
 * descriptor (dir.c). Nothing is fsynced: a trace must survive the
 * program's death, by any signal, which needs only that each write is
 * done (the page cache outlives the process) and that meta is replaced by
 * a rename; an fsync would add only survival of a power loss, for
 * milliseconds of every traced process's life under disk load. Nothing
 * is written past RLIMIT_FSIZE, whose SIGXFSZ would kill the program:
 * what does not fit is counted (lost_bytes), as is what a full disk
 * refuses; a stream that lost a write takes no more (it ends with whole
 * records), and a metadata file not written whole never replaces meta.
 *
 * function_graph: each traced call pushes {return address, site, stack
 * pointer at return, hook} on the thread's shadow stack. At a site at a
 * function's entry the site jumps to a trampoline of its own that calls
 * the function body, so it returns into the trampoline (its hook) and
 * the return stack predicts every return (entry.S); elsewhere (-pg's
 * mcount sites) the return address is replaced with return_to_handler.
 * Either way the exit is recorded and the call returns where it really
 * returns. A thread whose calls nest deeper than SHADOW_MAX stops
 * graphing (counted): never a crash. With the subtree filters
 * (FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE: subtree.c) a call outside
 * the subtrees is not graphed at all, and every pop of a shadow entry
 * gives back what its mark counted.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ftrt.h"
#include "graph.h"
#include "layout.h"
#include "sys.h"

/*
 * Records (format 3): little-endian 64-bit words, appended to the
 * thread's buffer. Each stream keeps a clock, which starts at 0: a
 * record's time is the previous record's plus the record's delta
 * (unsigned), and the buffer keeps the time of the last record written
 * (last) to make the next one's delta. A record's first word's top two
 * bits are its kind (abi.h):
 *
 *   REC_CALL       function tracer: a call       delta << 47 | site, parent ip  16 bytes
 *   REC_ENTRY      function_graph: an entry      1 << 62 | delta << 47 | site    8 bytes
 *   REC_EXIT       function_graph: the           2 << 62 | delta                 8 bytes
 *                  innermost open entry returned
 *   REC_EXT        3 << 62 | sub << 58 | payload (58 bits), by sub-kind:
 *   EXT_UNWOUND    the innermost open entry was  delta                           8 bytes
 *                  left without returning (longjmp, exception)
 *   EXT_TIME       the clock is set to w1        0, time                        16 bytes
 *   EXT_CONTEXT    the thread runs in context    delta, id                      16 bytes
 *                  id from here on (0: its own stack)
 *   EXT_LONGENTRY  an entry whose delta or site  delta, site                    16 bytes
 *                  does not fit REC_ENTRY's
 *   EXT_LONGCALL   a call whose delta or site    delta, site, parent ip         24 bytes
 *                  does not fit REC_CALL's
 *
 * A CALL or ENTRY holds a delta under 2^15 ticks and a site under 2^47;
 * else the C path writes the long form. A TIME comes first when the
 * delta would not fit even that (58 bits; an EXIT's 62), when the clock
 * reads lower than last (a thread moved to a CPU whose TSC lags), and
 * when the stream has no record yet (last is 0): it holds the reading as
 * taken, and the record follows with delta 0. The clock is never clamped
 * to last: every record's time is the clock's own reading, as a reader
 * of format 2 saw it (a clock that went back shows so). A stream decodes
 * from its own start, its clock at 0: last is 0 in a new buffer, in a
 * forked child's, and after a flush that had no stream to write to (its
 * records lost; the next flush makes the stream anew). So a stream's
 * first record holds its time whole: a TIME before it, or, an exit's
 * fast path being first (entry.S), an EXIT whose delta from 0, of up to
 * 62 bits, is the reading itself.
 *
 * No record's first word is 0 (a site is never 0; an EXIT has its kind
 * bits): a zero word in a stream is where it ends (a hole, or zeros a
 * crashed system left).
 *
 * An exit names no function: the reader pairs it with its entry by
 * nesting, as the shadow stack does. A graphed call costs 16 bytes and
 * a call 16, when their deltas fit: the fast paths (entry.S) write only
 * those, and leave anything else to the C path (record_* below).
 */
#define W_SHORT(kind, delta, site) ((uint64_t)(kind) << REC_KIND_SHIFT | (uint64_t)(delta) << REC_SITE_BITS | (uint64_t)(site))
#define W_EXIT(delta) ((uint64_t)REC_EXIT << REC_KIND_SHIFT | (uint64_t)(delta))
#define W_EXT(sub, payload) ((uint64_t)REC_EXT << REC_KIND_SHIFT | (uint64_t)(sub) << REC_EXT_BITS | (uint64_t)(payload))
#define EXT_SUB(w0) ((unsigned)((w0) >> REC_EXT_BITS) & ((1u << REC_EXT_SUB_BITS) - 1))
#define EXT_MAX ((1ull << REC_EXT_BITS) - 1)   /* the largest delta a long form holds */
#define EXIT_MAX ((1ull << REC_EXIT_BITS) - 1) /* the largest delta an EXIT holds */
#define REC_MAX_WORDS 5                        /* the most a record takes: TIME, then a LONGCALL */


/*
 * A walk of the stack by the unwinder that needs the real return
 * addresses in the slots of graphed calls (ftrt_graph_suspend): an
 * exception or a forced unwind, from its raise to its catch; or a
 * backtrace. They nest: a destructor that runs while an exception
 * unwinds may throw and catch one of its own, or call backtrace.
 */
#define LEVEL_MAX 32
struct level {
	const void *exc; /* the exception (its _Unwind_Exception); NULL: a backtrace */
	struct shadow_stack *stack; /* of the stack it walks: the thread's own, or a context's */
	uint32_t keep;   /* its entries [0, keep) are of frames the walk has still to
			  * walk, whose slots keep their real addresses: every entry when
			  * it opens; after a landing pad is entered (ftrt_graph_land), the
			  * pad's frame and its callers */
	int landed;      /* a landing pad was entered */
};

int ftrt_mode;
unsigned ftrt_max_depth = SHADOW_MAX; /* FTRACE_DEPTH: calls deeper than this are not graphed */
uint64_t ftrt_thresh_tsc;             /* FTRACE_THRESH in rdtsc ticks: shorter leaf calls are not kept */


struct tbuf {
	struct tbuf *next; /* every live buffer, for the flush at the end (under list_owner) */
	int fd;            /* the thread's stream, once its header is written; before, FD_NONE
			    * or FD_MAKING - i; FD_LOST once a write to it failed (flush) */
	int pid, tid;
	uint32_t n;        /* words in words[]: raised only after the words it adds are written
			    * (publish), so words[0, n) are whole records whenever the end's
			    * flush reads it, from a signal handler or another thread */
	volatile uintptr_t busy; /* the tracer runs on this thread: a signal handler's traced
			    * calls in that window are dropped and counted, not interleaved;
			    * the trace's end waits for it to be let go (ftrt_trace_end). Its
			    * value is the stack pointer of the tracer code that took it
			    * (take), or BUSY_HELD */
	int suspended;     /* walks of the stack in progress (levels + deep): return slots hold
			    * real addresses, so left() judges by the stack pointer alone */
	unsigned cur_gen;  /* of the stack below (cur, cur_id...): the table of contexts' then */
	uint64_t base;     /* words flushed before words[0] */
	uint64_t last;     /* the time of the last record written, which the next one's delta is
			    * from: the stream's clock; 0 while the stream has none (a new
			    * buffer, a forked child's, after records lost for want of a
			    * stream): its next record then starts with a TIME */
	/* The graphed calls on the thread's own stack. Its first entry (a
	 * call made from untraced code: the most frequent) lies so that the
	 * words a call reads and writes of it, ret to hook, share one cache
	 * line (checked below): fields added above must keep it so. */
	struct shadow_stack own;
	uint64_t words[TBUF_WORDS];
	/* Below here, nothing the assembly reads (layout.h ends at words). */
	/* The stack the thread's last graph event ran on (stack_at): its
	 * shadow stack, its context's id (0: the thread's own), and the
	 * stack pointers (cur_lo, cur_hi] that are on it, while the table
	 * of contexts is at generation cur_gen. */
	struct shadow_stack *cur;
	uint64_t cur_id;
	uintptr_t cur_lo, cur_hi;
	uint64_t skip;     /* of base, the words the stream does not hold (lost before it was
			    * made; a forked child's, its parent's): words[0] goes at byte
			    * 16 + (base - skip) * 8 of it */
	uint32_t levels;   /* entries in level[] */
	uint32_t deep;     /* walks nested past LEVEL_MAX: not in level[] */
	struct level level[LEVEL_MAX];
	unsigned char frame_info[FTRT_FRAME_INFO]; /* frames.c's, see ftrt_graph_hook_info */
	struct shadow_stack *frame_info_for;       /* the shadow stack frame_info was built for */
};

_Static_assert(offsetof(struct tbuf, n) == TB_N && offsetof(struct tbuf, busy) == TB_BUSY &&
		       offsetof(struct tbuf, suspended) == TB_SUSPENDED && offsetof(struct tbuf, base) == TB_BASE &&
		       offsetof(struct tbuf, last) == TB_LAST &&
		       offsetof(struct tbuf, own) == TB_OWN && offsetof(struct tbuf, own.depth) == TB_DEPTH &&
		       offsetof(struct tbuf, own.stopped) == TB_STOPPED && offsetof(struct tbuf, own.chosen) == TB_CHOSEN &&
		       offsetof(struct tbuf, own.notrace) == TB_NOTRACE && offsetof(struct tbuf, own.e) == TB_SHADOW &&
		       offsetof(struct tbuf, words) == TB_WORDS && TB_SHADOW % 64 + SH_HOOK + 8 <= 64,
	       "layout.h: struct tbuf");
_Static_assert(offsetof(struct shadow, ret) == SH_RET && offsetof(struct shadow, ip) == SH_IP &&
		       offsetof(struct shadow, sp) == SH_SP && offsetof(struct shadow, hook) == SH_HOOK &&
		       offsetof(struct shadow, pos) == SH_POS && offsetof(struct shadow, mark) == SH_MARK &&
		       sizeof(struct shadow) == SH_SIZE,
	       "layout.h: struct shadow");

/* Make words[0, n) the buffer's records. A release store: on x86-64 a
 * plain mov, kept after the stores of the words by the compiler. */
static inline void publish(struct tbuf *b, uint32_t n)
{
	__atomic_store_n(&b->n, n, __ATOMIC_RELEASE);
}

/* The thread's buffer (read by the fast paths in entry.S too). */
__thread struct tbuf *ftrt_tb __attribute__((tls_model("initial-exec"), visibility("hidden")));
#define tb ftrt_tb
/* Set while a thread's buffer is made or torn down (tb not usable). */
static __thread volatile int busy __attribute__((tls_model("initial-exec")));

/*
 * Every live buffer of this process, guarded by list_owner: the thread id
 * of the thread that holds the list, 0 when none does. A lock that names
 * its holder, rather than a pthread mutex, because the trace's end may
 * run in a signal handler (_exit) that interrupted this very thread while
 * it held the list: it can tell that case (the list is then as the
 * interrupted code left it, every link whole, and nobody else can change
 * it) from another thread holding it (wait, but not for ever).
 */
static struct tbuf *all;
static _Atomic int list_owner;
static pthread_key_t exit_key;
static _Atomic uint64_t dropped;
static _Atomic uint64_t overflow; /* calls not graphed: the thread's shadow stack overflowed */
static _Atomic uint64_t unwound;  /* graphed frames left without returning */
static _Atomic uint64_t stopped;  /* threads whose shadow stack overflowed */
static _Atomic uint64_t lost_bytes; /* records recorded but not written (a write failed, RLIMIT_FSIZE) */
static _Atomic uint64_t recorded_bytes; /* records flushed: written, or counted in lost_bytes */
static _Atomic uint64_t lost_threads; /* threads whose buffers the end could not write */
static _Atomic int nbufs;            /* buffers in `all` */
static int dir_fd = -1;
static int creator_pid;  /* made the directory: writes meta */
static int trace_pid;    /* owns the buffers in `all`: creator_pid, or a forked child's pid */
static int membarrier_state; /* MEMBARRIER_CMD_PRIVATE_EXPEDITED: 0 not registered yet, 1 registered, -1 refused */
static uint64_t tsc_start, mono_start;

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

/*
 * The clock of every record. rdtsc when the TSC ticks at a constant rate
 * whatever the CPU's power state and is what the kernel keeps time with:
 * the CPU says its TSC is invariant (CPUID 0x80000007, EDX bit 8), or
 * Linux chose it as its clocksource after checking it. Otherwise (or with
 * FTRACE_CLOCK=mono) CLOCK_MONOTONIC in ns, through the vDSO: slower, but
 * never wrong. The metadata names the clock.
 */
static int clock_mono;
/* The function tracer's fast path (entry.S) may run: the trace is open,
 * the tracer is function and the clock the TSC. */
__attribute__((visibility("hidden"))) int ftrt_fast_function;
/* The graph tracer's fast paths (ftrace_graph_enter and _leave) may run:
 * the trace is open, the tracer is function_graph, the clock the TSC and
 * no FTRACE_THRESH (whose bookkeeping is the C path's). */
__attribute__((visibility("hidden"))) int ftrt_fast_graph;
/*
 * The trace is ending (ftrt_trace_end): nothing more is recorded. Each
 * tracer path sets its thread's busy and then reads this (ended(), and
 * the same two steps in entry.S); the end sets this, makes every running
 * thread pass a full barrier (membarrier), then waits for each buffer's
 * busy to clear. Either a thread's read sees the end, and it backs off
 * without touching its buffer, or the end sees its busy and waits for the
 * record to be done: never both missed. The tracer pays a compiler
 * barrier and one load; the fences are all the end's.
 */
__attribute__((visibility("hidden"))) int ftrt_ending;

/* Process-wide choices of the graph tracer made while it runs. */
static int graph_contexts; /* a context exists: every call takes the C path (stack_at) */
static int graph_calls;    /* a context's stack is unknown: calls are recorded, not graphed */

/* Whether the trace is ending; called with the thread's busy set. */
static inline int ended(void)
{
	__asm__ volatile("" ::: "memory"); /* the read stays after the store of busy */
	return __atomic_load_n(&ftrt_ending, __ATOMIC_RELAXED);
}

/*
 * Let the thread's buffer go (busy = v). Everything the tracer read of it
 * or wrote to it is done first: busy is volatile, but the shadow stack
 * and the records are not, and a compiler may move a plain access past a
 * volatile one. A read of a popped shadow entry after the store would
 * find a signal handler's call pushed over it.
 */
static inline void unbusy(struct tbuf *b, uintptr_t v)
{
	__asm__ volatile("" ::: "memory");
	b->busy = v;
}

/* busy held by code that no longjmp leaves (a thread's exit): never
 * taken from it. */
#define BUSY_HELD (~(uintptr_t)0)

static int take(struct tbuf *b, uintptr_t ref);

static int tsc_trusted(void)
{
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000007 && __get_cpuid(0x80000007, &a, &b, &c, &d) &&
	    (d & (1u << 8)))
		return 1;
	char cs[16] = "";
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		long n = read(fd, cs, sizeof cs - 1);
		close(fd);
		cs[n > 0 ? n : 0] = 0;
	}
	return strcmp(cs, "tsc\n") == 0;
}

static inline uint64_t now(void)
{
	if (__builtin_expect(clock_mono, 0))
		return mono_ns();
	return rdtsc();
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

/*
 * How many bytes a file may grow to past offset off under RLIMIT_FSIZE,
 * read now, as the program may change it (UINT64_MAX: no limit). A write
 * that starts at the limit raises SIGXFSZ, which would kill the program;
 * one that crosses it is cut short there.
 */
static uint64_t fsize_room(uint64_t off)
{
	struct {
		uint64_t cur, max;
	} lim;
	if (sys(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, (long)&lim, 0, 0) != 0 || lim.cur == (uint64_t)RLIM_INFINITY)
		return UINT64_MAX;
	return lim.cur > off ? lim.cur - off : 0;
}

/*
 * Write buf[0, len) at offset off of fd: the bytes written, len unless a
 * write failed (a full disk, an I/O error). The caller keeps within
 * RLIMIT_FSIZE (fsize_room).
 */
static size_t put(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		long w = sys(SYS_pwrite64, fd, (long)buf + (long)done, (long)(len - done), (long)(off + done), 0, 0);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	return done;
}

/* How long the trace's end waits, all told, for a lock or a buffer that
 * another thread holds before it goes on without it. */
#define END_WAIT_NS 1000000000ull

static void nap(void)
{
	struct timespec ts = { .tv_nsec = 100000 };
	sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
}

static void list_lock(int me)
{
	int free = 0;
	while (!atomic_compare_exchange_weak_explicit(&list_owner, &free, me, memory_order_acquire, memory_order_relaxed)) {
		free = 0;
		sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	}
}

static void list_unlock(void)
{
	atomic_store_explicit(&list_owner, 0, memory_order_release);
}

/* The list for the trace's end: 1 taken; 2 this thread held it already
 * (a signal handler interrupted it: do not release it); 0 another thread
 * kept it until the deadline (CLOCK_MONOTONIC ns). */
static int list_take(int me, uint64_t deadline)
{
	for (;;) {
		int free = 0;
		if (atomic_compare_exchange_strong_explicit(&list_owner, &free, me, memory_order_acquire, memory_order_relaxed))
			return 1;
		if (free == me)
			return 2;
		if (mono_ns() > deadline)
			return 0;
		nap();
	}
}

/* b->fd before the thread's stream is open (FD_NONE); while the stream
 * named by i (stream_name) is being made (FD_MAKING - i); after a write
 * to it failed or met RLIMIT_FSIZE (FD_LOST). */
#define FD_NONE (-1)
#define FD_LOST (-2)
#define FD_MAKING (-3)

/* Words in the record whose first word is w0 (abi.h's kinds; the
 * whole-record accounting of flush and make_stream). */
static inline uint32_t rec_words(uint64_t w0)
{
	static const uint8_t words[4] = REC_WORDS;
	static const uint8_t ext[1 << REC_EXT_SUB_BITS] = EXT_WORDS;
	uint32_t k = words[w0 >> REC_KIND_SHIFT];
	if (k == 0)
		k = ext[EXT_SUB(w0)];
	return k ? k : 1; /* a reserved sub-kind, never written: a word, so a walk ends */
}

/* Of words[0, n), which start with a record, the words of the whole
 * records that fit in room bytes. */
static uint32_t fit(const uint64_t *words, uint32_t n, uint64_t room)
{
	uint32_t k = 0;
	while (k < n && (uint64_t)(k + rec_words(words[k])) * 8 <= room)
		k += rec_words(words[k]);
	return k < n ? k : n;
}

/* The stream's name: <pid>-<tid>.trace, or <pid>-<tid>-<i>.trace when an
 * earlier thread of the process had the same id (ids are reused) and
 * its stream holds the first. */
static void stream_name(char *name, const struct tbuf *b, int i)
{
	char *p = utoa(name, (uint64_t)b->pid);
	*p++ = '-';
	p = utoa(p, (uint64_t)b->tid);
	if (i) {
		*p++ = '-';
		p = utoa(p, (uint64_t)i);
	}
	memcpy(p, STREAM_SUFFIX, sizeof STREAM_SUFFIX);
}

/*
 * Make the thread's stream and write its header, at a flush of words[]
 * (not empty). b->fd says where a flush this one interrupted had got to
 * (see flush): FD_MAKING - i, it was making stream i, which may exist
 * already, made by it. 0, or -1 when the stream could not be made (no
 * room for its header and first record under RLIMIT_FSIZE, a full disk,
 * no descriptor left): a later flush tries again.
 */
static int make_stream(struct tbuf *b)
{
	int i = 0, again = 0;
	if (b->fd <= FD_MAKING) {
		i = FD_MAKING - b->fd;
		again = 1;
	}
	if (fsize_room(0) < 16 + (uint64_t)rec_words(b->words[0]) * 8)
		goto none;
	for (; i < 1000; i++) {
		char name[80];
		stream_name(name, b, i);
		__atomic_store_n(&b->fd, FD_MAKING - i, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* before the file exists */
		long fd = ftrt_file_create(dir_fd, name);
		if (fd == -EEXIST && again) { /* made by the flush this one interrupted? */
			struct stat st;
			fd = sys(SYS_openat, dir_fd, (long)name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
			/* Not if it holds records: it did not get that far, so the
			 * stream is an earlier thread's of the same id. */
			if (!sys_failed(fd) && (sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0 || !S_ISREG(st.st_mode) || st.st_size > 16)) {
				sys(SYS_close, fd, 0, 0, 0, 0, 0);
				fd = -EEXIST;
			}
		}
		again = 0;
		if (fd == -EEXIST)
			continue;
		if (sys_failed(fd))
			break;
		unsigned char hdr[STREAM_HEADER] = STREAM_MAGIC;
		uint32_t ids[2] = { (uint32_t)b->pid, (uint32_t)b->tid };
		memcpy(hdr + 8, ids, 8);
		if (put((int)fd, hdr, sizeof hdr, 0) != sizeof hdr) {
			/* Not a stream: a reader must not find it. */
			sys(SYS_unlinkat, dir_fd, (long)name, 0, 0, 0, 0);
			sys(SYS_close, fd, 0, 0, 0, 0, 0);
			break;
		}
		b->skip = b->base;
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* skip before the stream is kept */
		__atomic_store_n(&b->fd, (int)fd, __ATOMIC_RELAXED);
		return 0;
	}
none:
	__atomic_store_n(&b->fd, FD_NONE, __ATOMIC_RELAXED);
	return -1;
}

/*
 * Write the buffer's records to the thread's stream (made, and its
 * header written, at the first flush) and empty it.
 *
 * A flush of this buffer may have been interrupted anywhere by a signal
 * handler whose trace's end flushes it again: each record goes at an
 * offset of its own (16 + (base - skip) * 8 for words[0]), so the second
 * writes what the first did, or would have, at the same place, and a
 * stream half made says how far (b->fd, make_stream). n is emptied
 * before base moves on, so a flush that wrote is never taken for one
 * that had not begun. Nobody else may be writing the buffer meanwhile
 * (claim).
 *
 * Within RLIMIT_FSIZE (read at every flush: the program may change it),
 * the whole records that fit are written and the stream ends there;
 * after a failed write too. What is not written is counted (lost_bytes).
 */
static void flush(struct tbuf *b)
{
	uint32_t n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
	if (n == 0)
		return;
	size_t len = (size_t)n * 8, done = 0;
	unsigned long mask;
	sys_sigs_hold(&mask); /* the write is done whole, whatever handlers do */
	if (b->fd != FD_LOST && b->fd < 0)
		make_stream(b);
	if (b->fd >= 0) {
		uint64_t off = 16 + (b->base - b->skip) * 8, room = fsize_room(off);
		size_t want = len <= room ? len : (size_t)fit(b->words, n, room) * 8;
		done = put(b->fd, b->words, want, off);
		if (done < len) { /* the stream ends here */
			sys(SYS_close, b->fd, 0, 0, 0, 0, 0);
			b->fd = FD_LOST;
		}
	}
	if (done < len)
		atomic_fetch_add_explicit(&lost_bytes, len - done, memory_order_relaxed);
	atomic_fetch_add_explicit(&recorded_bytes, len, memory_order_relaxed);
	if (b->fd < 0 && b->fd != FD_LOST)
		b->last = 0; /* no stream had them: the one a later flush makes starts with a TIME */
	publish(b, 0);
	b->base += n;
	sys_sigs_release(&mask);
}

/* A thread's first event: map its buffer and register it for the flush
 * at thread exit (pthread key destructor) and at the trace's end (list). */
static struct tbuf *tbuf_new(void)
{
	long m = sys(SYS_mmap, 0, sizeof(struct tbuf), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m < 0 && m > -4096)
		return NULL;
	struct tbuf *b = (struct tbuf *)m;
	b->fd = FD_NONE;
	b->cur = &b->own;
	b->pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	b->tid = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	unsigned long mask;
	sys_sigs_hold(&mask);
	list_lock(b->tid);
	b->next = all;
	all = b;
	atomic_fetch_add_explicit(&nbufs, 1, memory_order_relaxed);
	list_unlock();
	sys_sigs_release(&mask);
	pthread_setspecific(exit_key, b);
	tb = b;
	return b;
}

static void pop_left(struct tbuf *b, struct shadow_stack *s, uint64_t ts, int rec);
static struct shadow_stack *stack_at(struct tbuf *b, uintptr_t sp, uint64_t ts, int rec);

/*
 * Thread exit: flush, unlink from the list, unmap. All but the unmap
 * holding the list, so a trace's end that runs meanwhile on another
 * thread either finds the buffer in the list, not yet busy, and flushes
 * it itself, or waits until it is written; and flushed before it is
 * unlinked, so an end in a signal handler that interrupts the flush
 * finds it (as this thread's own) and finishes it. Graphed calls still
 * open were left without returning (pthread_exit, pthread_cancel: a
 * forced unwind that ran no landing pad above them): recorded so.
 */
static void thread_exit(void *p)
{
	struct tbuf *b = p;
	busy = 1; /* nothing of this thread is traced from here on */
	unsigned long mask;
	sys_sigs_hold(&mask);
	list_lock(b->tid);
	b->busy = BUSY_HELD;
	if (!ended()) {
		uint64_t ts = now();
		struct shadow_stack *s = stack_at(b, (uintptr_t)__builtin_frame_address(0), ts, 1);
		while (s->depth > 0)
			pop_left(b, s, ts, 1);
	}
	flush(b);
	for (struct tbuf **pp = &all; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			atomic_fetch_sub_explicit(&nbufs, 1, memory_order_relaxed);
			break;
		}
	tb = NULL;
	list_unlock();
	sys_sigs_release(&mask);
	if (b->fd >= 0)
		sys(SYS_close, b->fd, 0, 0, 0, 0, 0);
	sys(SYS_munmap, (long)b, sizeof *b, 0, 0, 0, 0);
}

/* In a child after fork: the parent's records are the parent's to write,
 * and only the forking thread exists here. Keep its buffer, emptied and
 * with a stream of its own; unmap the copies of the others'. From here
 * on the buffers in the list are this process's (trace_pid). */
static void after_fork_child(void)
{
	struct tbuf *keep = tb;
	for (struct tbuf *b = all, *next; b; b = next) {
		next = b->next;
		if (b->fd >= 0) /* the parent's stream, open here too */
			sys(SYS_close, b->fd, 0, 0, 0, 0, 0);
		if (b != keep)
			sys(SYS_munmap, (long)b, sizeof *b, 0, 0, 0, 0);
	}
	all = keep;
	atomic_store_explicit(&nbufs, keep ? 1 : 0, memory_order_relaxed);
	atomic_store_explicit(&list_owner, 0, memory_order_relaxed);
	membarrier_state = 0; /* a registration is the parent's memory's, not this copy's */
	trace_pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (keep) {
		keep->next = NULL;
		/* The parent's records are dropped as if flushed: base goes on
		 * counting past them, so no shadow entry of the parent's takes
		 * a record of the child's for its own (FTRACE_THRESH); and the
		 * child's stream starts with a TIME. */
		keep->base += keep->n;
		keep->n = 0;
		keep->last = 0;
		keep->fd = FD_NONE;
		keep->pid = trace_pid;
		keep->tid = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	}
}

/*
 * A metadata file being written: lines gathered in a buffer (a write
 * system call each would be most of the metadata's cost), each write
 * within RLIMIT_FSIZE, and failed for good at the first that does not go
 * whole. On the stack: the trace's end may write one in a signal handler.
 */
struct meta_out {
	int fd;
	int failed;
	uint32_t n;    /* bytes in buf */
	uint64_t off;  /* where buf goes in the file */
	char buf[512];
};

static void meta_flush(struct meta_out *o)
{
	if (!o->failed && o->n && (fsize_room(o->off) < o->n || put(o->fd, o->buf, o->n, o->off) != o->n))
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
	p = utoa(p, v);
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
			meta_put(o, buf, (size_t)(utoa(buf + 1, v[k]) - buf));
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
#define META_END "meta.end"
#define META_RESERVE 16384
static int meta_reserved; /* META_END holds the room, not yet used */

static void reserve_meta(void)
{
	long fd = ftrt_file_create(dir_fd, META_END);
	if (sys_failed(fd))
		return;
	/* No allocation past RLIMIT_FSIZE: the kernel would raise SIGXFSZ. */
	if (fsize_room(0) >= META_RESERVE && sys(SYS_fallocate, fd, 0, 0, META_RESERVE, 0, 0) == 0)
		meta_reserved = 1;
	else
		sys(SYS_unlinkat, dir_fd, (long)META_END, 0, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
}

static void write_meta(int ended, uint64_t tsc_end, uint64_t mono_end, const char *tmp, uint64_t gone)
{
	long fd = -EEXIST;
	int reserved = meta_reserved && strcmp(tmp, META_END) == 0;
	if (reserved) { /* into the room set aside: see reserve_meta */
		meta_reserved = 0;
		fd = sys(SYS_openat, dir_fd, (long)tmp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
		reserved = !sys_failed(fd);
	}
	if (!reserved) {
		fd = ftrt_file_create(dir_fd, tmp);
		if (fd == -EEXIST) { /* left by a writer a signal handler's end interrupted */
			sys(SYS_unlinkat, dir_fd, (long)tmp, 0, 0, 0, 0);
			fd = ftrt_file_create(dir_fd, tmp);
		}
	}
	if (sys_failed(fd))
		return;
	struct meta_out o = { .fd = (int)fd };
	char exe[4096];
	long n = sys(SYS_readlink, (long)"/proc/self/exe", (long)exe, sizeof exe - 1, 0, 0, 0);
	exe[n > 0 ? n : 0] = 0;
	/* The program: the first module, registered by ftrt_init. */
	const struct ftrt_mod *prog = ftrt_module_at(0);
	uintptr_t bias = prog ? prog->bias : 0;
	meta_str(&o, META_KEY_FORMAT " " META_FORMAT_3 "\n" META_KEY_RECORDS " " META_RECORDS_WORDS "\n" META_KEY_CLOCK " ");
	meta_str(&o, clock_mono ? META_CLOCK_MONO "\n" META_KEY_TRACER " " : META_CLOCK_TSC "\n" META_KEY_TRACER " ");
	meta_str(&o, ftrt_mode == FTRT_GRAPH ? FTRT_TRACER_GRAPH "\n" META_KEY_EXE " " : FTRT_TRACER_FUNCTION "\n" META_KEY_EXE " ");
	meta_str(&o, exe);
	meta_str(&o, "\n");
	meta_cmdline(&o);
	if (prog && prog->build_id[0]) {
		meta_str(&o, META_KEY_BUILD_ID " ");
		meta_str(&o, prog->build_id);
		meta_str(&o, "\n");
	}
	meta_line(&o, META_KEY_ENDED, (uint64_t)ended);
	meta_line(&o, META_KEY_PID, (uint64_t)creator_pid);
	meta_line(&o, META_KEY_BIAS, bias);
	meta_line(&o, META_KEY_TSC_START, tsc_start);
	meta_line(&o, META_KEY_TSC_END, tsc_end);
	meta_line(&o, META_KEY_MONO_START, mono_start);
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
	}
	meta_line(&o, META_KEY_SITES, sum.entries);
	meta_line(&o, META_KEY_ENABLED, sum.enabled);
	meta_line(&o, META_KEY_SKIPPED, sum.skipped);
	meta_line(&o, META_KEY_FAILED, sum.failed);
	meta_line(&o, META_KEY_UNSUPPORTED, sum.unsupported);
	meta_line(&o, META_KEY_DROPPED, atomic_load_explicit(&dropped, memory_order_relaxed));
	meta_line(&o, META_KEY_OVERFLOW, atomic_load_explicit(&overflow, memory_order_relaxed));
	meta_line(&o, META_KEY_UNWOUND, atomic_load_explicit(&unwound, memory_order_relaxed));
	meta_line(&o, META_KEY_STOPPED, atomic_load_explicit(&stopped, memory_order_relaxed));
	meta_line(&o, META_KEY_LOST_BYTES, atomic_load_explicit(&lost_bytes, memory_order_relaxed));
	meta_line(&o, META_KEY_RECORDED_BYTES, atomic_load_explicit(&recorded_bytes, memory_order_relaxed));
	meta_line(&o, META_KEY_LOST_THREADS, atomic_load_explicit(&lost_threads, memory_order_relaxed) + gone);
	meta_line(&o, META_KEY_CONTEXTS, atomic_load_explicit(&ftrt_ctx_made, memory_order_relaxed));
	meta_line(&o, META_KEY_CONTEXTS_LOST, atomic_load_explicit(&ftrt_ctx_lost, memory_order_relaxed));
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
	if (reserved && !o.failed && sys(SYS_ftruncate, fd, (long)o.off, 0, 0, 0, 0) != 0)
		o.failed = 1;
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if (o.failed)
		sys(SYS_unlinkat, dir_fd, (long)tmp, 0, 0, 0, 0);
	else
		sys(SYS_renameat, dir_fd, (long)tmp, dir_fd, (long)META_FILE, 0, 0);
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
	if (dir_fd < 0 || __atomic_load_n(&ftrt_ending, __ATOMIC_RELAXED) || (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != creator_pid)
		return;
	write_meta(0, now(), mono_ns(), "meta.run.tmp", 0);
}

/*
 * Every thread of the process now running passes a full barrier: its
 * next read of ftrt_ending sees 1, or the busy it set before that read is
 * seen here. (A thread not running passed one when it was switched out.)
 * The process registers for the expedited membarrier on first use, not
 * at the trace's start: registering waits on every CPU (0.1 ms here),
 * which a run that never has a second thread's buffer to flush need not
 * pay. Without membarrier (a kernel before 4.14, or a seccomp filter),
 * the same wait in time: a store waits in a CPU's store buffer for
 * nanoseconds, not 100 microseconds.
 */
static void barrier_all(void)
{
	if (membarrier_state == 0)
		membarrier_state = sys(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0, 0, 0, 0) == 0 ? 1 : -1;
	if (membarrier_state < 0 || sys(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0, 0, 0, 0) != 0)
		nap();
}

/* Whether another thread's buffer is the end's to flush: once
 * ftrt_ending is seen everywhere, wait (until the deadline) for the
 * record or flush its thread is making to be done; from then on that
 * thread leaves its buffer alone. 0 when it stayed busy: skipped. */
static int settled(struct tbuf *b, uint64_t deadline)
{
	for (int i = 0; b->busy; i++) {
		if (mono_ns() > deadline)
			return 0;
		if (i < 1000)
			__builtin_ia32_pause(); /* a record takes nanoseconds... */
		else
			nap(); /* ...a flush, a write system call */
	}
	return 1;
}

/*
 * The trace's end, from exit or quick_exit (their handlers) or _exit
 * (exit.c), which may be called from a signal handler or in a child
 * after fork: flush every buffer of this process, then, in the process
 * that made the directory, write the final metadata. Async-signal-safe:
 * raw system calls, no lock or buffer waited for longer than END_WAIT_NS
 * all told (what cannot be taken by then is left out). A signal handler
 * may have interrupted this thread's tracer (its buffer busy) or a
 * flush, or an end, on this thread: a buffer holds whole records up to n
 * whatever the point (publish), and each flush writes its records where
 * they go in the stream, again if an interrupted flush had begun to.
 * Run twice (exit, then _exit from a later handler), it writes what came
 * since.
 */
void ftrt_trace_end(void)
{
	if (dir_fd < 0)
		return;
	/* A child made by vfork (or a raw clone) shares the parent's memory,
	 * or has a copy made without after_fork_child: the buffers in the list
	 * are not its own to write or close. It leaves them alone. */
	if ((int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != trace_pid)
		return;
	int me = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	struct tbuf *own = tb;
	busy = 1;
	__atomic_store_n(&ftrt_ending, 1, __ATOMIC_SEQ_CST);
	uint64_t tsc_end = now(), mono_end = mono_ns(), deadline = mono_end + END_WAIT_NS;
	int held = list_take(me, deadline);
	/* Another thread's buffer is flushed only once that thread is seen
	 * out of its tracer (settled), which needs a barrier on every CPU:
	 * only when there is one. A thread with no buffer yet makes it under
	 * the list, so it sees ftrt_ending once the end lets the list go. */
	for (struct tbuf *b = held ? all : NULL; b; b = b->next)
		if (b != own) {
			barrier_all();
			break;
		}
	for (struct tbuf *b = held ? all : NULL; b; b = b->next) {
		if (b == own)
			continue;
		if (settled(b, deadline))
			flush(b);
		else
			atomic_fetch_add_explicit(&lost_threads, 1, memory_order_relaxed);
	}
	if (!held) /* every other thread's buffer is lost */
		atomic_fetch_add_explicit(&lost_threads, (uint64_t)(atomic_load_explicit(&nbufs, memory_order_relaxed) - (own != NULL)),
					  memory_order_relaxed);
	/* This thread's own, whatever its busy says (a handler interrupted
	 * it): it records no more, and only it unmaps it (thread_exit clears
	 * tb first). Still holding the list, as the end of another thread
	 * that walks it may flush it too. */
	if (own)
		flush(own);
	if (held == 1)
		list_unlock();
	if (trace_pid != creator_pid)
		return;
	int mods = ftrt_modules_hold();
	write_meta(1, tsc_end, mono_end, META_END, 0);
	if (mods)
		ftrt_modules_release();
}

/*
 * Before an exec (exec.c): write this thread's buffer out, as the exec
 * would discard it; in the process that made the trace, also the final
 * metadata (an exec that fails returns, and the end writes it again).
 * Tracing goes on: the program an exec fails in is still traced. Other
 * threads' buffers are left: the exec ends those threads, and taking
 * their buffers would need the end's handshake, which stops every
 * thread's tracing for good. The metadata counts those that hold
 * records in lost_threads, and the program exec'd leaves this trace
 * where it is (dir.c). Async-signal-safe; nothing in a child that
 * shares its parent's memory (vfork), as at the end. A buffer whose
 * thread was interrupted inside its tracer (the exec is a signal
 * handler's) is in the middle of a record, and is left too.
 */
void ftrt_trace_exec(void)
{
	if (dir_fd < 0 || (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != trace_pid)
		return;
	struct tbuf *b = tb;
	if (b && take(b, (uintptr_t)__builtin_frame_address(0))) {
		if (!ended()) /* the end, on another thread, takes it otherwise */
			flush(b);
		unbusy(b, 0);
	}
	if (trace_pid != creator_pid || __atomic_load_n(&ftrt_ending, __ATOMIC_RELAXED))
		return;
	uint64_t gone = 0;
	int others = atomic_load_explicit(&nbufs, memory_order_relaxed) - (b != NULL);
	if (others > 0) {
		int held = list_take((int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0), mono_ns() + END_WAIT_NS / 100);
		for (struct tbuf *x = held ? all : NULL; x; x = x->next)
			gone += x != b && (__atomic_load_n(&x->n, __ATOMIC_RELAXED) || x->busy);
		if (held == 1)
			list_unlock();
		if (!held)
			gone = (uint64_t)others;
	}
	int mods = ftrt_modules_hold();
	write_meta(1, now(), mono_ns(), "meta.exec.tmp", gone);
	if (mods)
		ftrt_modules_release();
}

/* ns in rdtsc ticks, at a rate measured over 2 ms (only when a
 * threshold needs converting at start; the trace's own clock conversion
 * uses the whole run). Integer arithmetic: the runtime has no FP. */
uint64_t ftrt_ns_to_tsc(uint64_t ns)
{
	if (clock_mono)
		return ns;
	uint64_t t0 = rdtsc(), m0 = mono_ns(), m1;
	while ((m1 = mono_ns()) - m0 < 2000000)
		;
	return (uint64_t)((unsigned __int128)ns * (rdtsc() - t0) / (m1 - m0));
}

int ftrt_tracing(void)
{
	return dir_fd >= 0;
}

uint64_t ftrt_now(void)
{
	return now();
}

/*
 * Open the trace: make its directory (dir.c; recorded: dir is the
 * binary's recorded location, re-checked there), and set up the end.
 * The directory's first metadata is written when the pass that opened
 * it is done (ftrt_trace_meta_update). -1 with *why set when the
 * directory cannot be made.
 */
int ftrt_trace_start(const char *dir, int recorded, const char **why)
{
	ftrt_dir_set_mode(ftrt_env("FTRACE_MODE"));
	int fd = ftrt_dir_make(dir, recorded, why);
	if (fd < 0)
		return -1;
	if (pthread_key_create(&exit_key, thread_exit) != 0) {
		*why = "cannot be written: no thread key left for the thread's exit";
		sys(SYS_close, fd, 0, 0, 0, 0, 0);
		return -1;
	}
	dir_fd = fd;
	reserve_meta();
	pthread_atfork(NULL, NULL, after_fork_child);
	const char *clk = ftrt_env("FTRACE_CLOCK");
	clock_mono = (clk && strcmp(clk, META_CLOCK_MONO) == 0) || !tsc_trusted();
	creator_pid = trace_pid = getpid();
	tsc_start = now();
	mono_start = mono_ns();
	ftrt_exit_watch();
	at_quick_exit(ftrt_trace_end);
	return 0;
}

void ftrt_trace_go(void)
{
	ftrt_fast_function = ftrt_mode == FTRT_FUNCTION && !clock_mono;
	ftrt_fast_graph = ftrt_mode == FTRT_GRAPH && !clock_mono && !ftrt_thresh_tsc && !graph_contexts;
}

/* Room for a record of up to REC_MAX_WORDS words: flush when the buffer
 * is full. */
static inline uint32_t room(struct tbuf *b)
{
	uint32_t n = b->n;
	if (__builtin_expect(n > TBUF_WORDS - REC_MAX_WORDS, 0)) {
		flush(b);
		n = 0;
	}
	return n;
}

/*
 * The C path's record writing, with b taken (busy). stamp makes room for
 * a record of the event at ts, writes a TIME first when the record's
 * delta would not fit (above max: the record's widest field), the clock
 * went back, or the stream has no record yet (see "Records" above), and
 * moves last to ts; it returns where the record goes and its delta. The
 * record_* functions write the record and publish it with the TIME, if
 * any, in one step: a flush (the end's, from a signal handler) sees both
 * or neither. room() comes first, as its flush may reset last.
 */
static inline uint32_t stamp(struct tbuf *b, uint64_t ts, uint64_t max, uint64_t *delta)
{
	uint32_t n = room(b);
	uint64_t last = b->last;
	if (__builtin_expect(last == 0 || ts < last || ts - last > max, 0)) {
		b->words[n] = W_EXT(EXT_TIME, 0);
		b->words[n + 1] = ts;
		n += 2;
		last = ts;
	}
	*delta = ts - last;
	b->last = ts;
	return n;
}

/* function: a call of site, from parent (its caller's return address). */
static void record_call(struct tbuf *b, uint64_t ts, uint64_t site, uint64_t parent)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXT_MAX, &d);
	if (__builtin_expect(d <= REC_DELTA_MAX && site >> REC_SITE_BITS == 0, 1)) {
		b->words[n] = W_SHORT(REC_CALL, d, site);
		b->words[n + 1] = parent;
		publish(b, n + 2);
	} else {
		b->words[n] = W_EXT(EXT_LONGCALL, d);
		b->words[n + 1] = site;
		b->words[n + 2] = parent;
		publish(b, n + 3);
	}
}

/* function_graph: an entry of site; returns where its record is in
 * words[] (after any TIME), for FTRACE_THRESH. */
static uint32_t record_entry(struct tbuf *b, uint64_t ts, uint64_t site)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXT_MAX, &d);
	if (__builtin_expect(d <= REC_DELTA_MAX && site >> REC_SITE_BITS == 0, 1)) {
		b->words[n] = W_SHORT(REC_ENTRY, d, site);
		publish(b, n + 1);
	} else {
		b->words[n] = W_EXT(EXT_LONGENTRY, d);
		b->words[n + 1] = site;
		publish(b, n + 2);
	}
	return n;
}

/* The delta of the entry record w0 (REC_ENTRY or EXT_LONGENTRY). */
static inline uint64_t entry_delta(uint64_t w0)
{
	if (w0 >> REC_KIND_SHIFT == REC_ENTRY)
		return w0 >> REC_SITE_BITS & REC_DELTA_MAX;
	return w0 & EXT_MAX;
}

/* Whether w0 begins an entry record. */
static inline int is_entry(uint64_t w0)
{
	return w0 >> REC_KIND_SHIFT == REC_ENTRY || (w0 >> REC_KIND_SHIFT == REC_EXT && EXT_SUB(w0) == EXT_LONGENTRY);
}

/* function_graph: the innermost open entry returned. */
static void record_exit(struct tbuf *b, uint64_t ts)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXIT_MAX, &d);
	b->words[n] = W_EXIT(d);
	publish(b, n + 1);
}

/* function_graph: the thread runs in context id from here on. */
static void record_context(struct tbuf *b, uint64_t ts, uint64_t id)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXT_MAX, &d);
	b->words[n] = W_EXT(EXT_CONTEXT, d);
	b->words[n + 1] = id;
	publish(b, n + 2);
}

void return_to_handler(void);

void ftrt_graph_contexts(void)
{
	__atomic_store_n(&graph_contexts, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&ftrt_fast_graph, 0, __ATOMIC_RELAXED);
}

void ftrt_graph_ungraphed(void)
{
	__atomic_store_n(&graph_calls, 1, __ATOMIC_RELAXED);
}

/*
 * The shadow stack of the code whose frame is at sp (graph.h): the
 * thread's own, or that of the context whose stack holds it, with its id
 * (0: the thread's own). The thread keeps the last answer and the extent
 * of stack pointers it holds for, until another context is made.
 */
static struct shadow_stack *find_stack(struct tbuf *b, uintptr_t sp, uint64_t *id)
{
	unsigned gen = atomic_load_explicit(&ftrt_ctx_gen, memory_order_acquire);
	if (__builtin_expect(gen == 0, 1)) {
		*id = 0;
		return &b->own;
	}
	if (gen == b->cur_gen && b->cur_lo < sp && sp <= b->cur_hi) {
		*id = b->cur_id;
		return b->cur;
	}
	uintptr_t lo, hi;
	struct ftrt_ctx *c = ftrt_context_at(sp, &lo, &hi);
	*id = c ? atomic_load_explicit(&c->id, memory_order_relaxed) : 0;
	return c ? &c->stack : &b->own;
}

/*
 * find_stack for an event recorded at ts (when rec): when the code runs
 * on another stack than the thread's last event did (swapcontext), or
 * in a context made again since, a switch record says so first
 * (EXT_CONTEXT, with id). The reader keeps a stack of open calls per
 * context, as the runtime does.
 */
static struct shadow_stack *stack_at(struct tbuf *b, uintptr_t sp, uint64_t ts, int rec)
{
	unsigned gen = atomic_load_explicit(&ftrt_ctx_gen, memory_order_acquire);
	if (__builtin_expect(gen == 0, 1))
		return &b->own;
	if (gen == b->cur_gen && b->cur_lo < sp && sp <= b->cur_hi)
		return b->cur;
	uintptr_t lo, hi;
	struct ftrt_ctx *c = ftrt_context_at(sp, &lo, &hi);
	struct shadow_stack *s = c ? &c->stack : &b->own;
	uint64_t id = c ? atomic_load_explicit(&c->id, memory_order_relaxed) : 0;
	b->cur_gen = gen;
	b->cur_lo = lo;
	b->cur_hi = hi;
	if (s != b->cur || id != b->cur_id) {
		b->cur = s;
		b->cur_id = id;
		if (rec)
			record_context(b, ts, id);
	}
	return s;
}

/*
 * Whether a graphed call whose frame is at entry_sp is on another stack
 * than the code running now: the thread runs a signal handler on its
 * alternate stack (sigaltstack, SA_ONSTACK), and the call is not on it.
 * Its frame being below ours then says nothing of whether it returned:
 * an alternate stack may lie anywhere, above the thread's own. One
 * system call, made only when a frame below ours would otherwise be
 * taken for one left (after a longjmp, or in such a handler).
 */
static int elsewhere(uintptr_t entry_sp)
{
	stack_t ss;
	if (sys(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0, 0) != 0 || !(ss.ss_flags & SS_ONSTACK))
		return 0;
	uintptr_t lo = (uintptr_t)ss.ss_sp, hi = lo + ss.ss_size;
	return entry_sp < lo || entry_sp > hi;
}

/*
 * Whether the tracer code that took b's busy with the reference held (a
 * stack pointer: that of the traced call it served, see take) is gone,
 * as seen by tracer code whose reference is sp: a longjmp left it (a
 * signal handler that interrupted the tracer, and siglongjmp'd out of
 * it), and nothing will let busy go. On one stack, a reference at or
 * above the holder's says so: a handler that interrupted the tracer
 * runs below the tracer's own frames, and those lie below the call it
 * served. A holder on the alternate signal stack is gone when the
 * thread runs off it (a handler on it ended); a holder on the thread's
 * stack seen from the alternate one, or on another context's stack, is
 * not: a handler interrupted it. One system call, only when busy is
 * found taken: rare.
 */
static int abandoned(struct tbuf *b, uintptr_t held, uintptr_t sp)
{
	if (held == BUSY_HELD)
		return 0;
	stack_t ss;
	uintptr_t lo = 0, hi = 0;
	if (sys(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0, 0) == 0 && !(ss.ss_flags & SS_DISABLE))
		lo = (uintptr_t)ss.ss_sp, hi = lo + ss.ss_size;
	int held_alt = held > lo && held <= hi, now_alt = sp > lo && sp <= hi;
	if (held_alt != now_alt)
		return held_alt;
	uint64_t a, c;
	if (find_stack(b, held, &a) != find_stack(b, sp, &c) || a != c)
		return 0;
	return sp >= held;
}

/*
 * Take b's busy for tracer code serving the call whose stack pointer is
 * ref (the traced function's at its entry, or at its return; the tracer
 * code's own frame where it serves no call): 1 when taken; 0 when it is
 * held (this is a signal handler that interrupted the tracer), and then
 * nothing of b may be touched. Taken from a holder a longjmp left: the
 * next traced call made at the level the longjmp went back to, or above
 * it, takes it.
 */
static int take(struct tbuf *b, uintptr_t ref)
{
	uintptr_t held = b->busy;
	if (__builtin_expect(held != 0, 0) && !abandoned(b, held, ref))
		return 0;
	b->busy = ref;
	return 1;
}

/*
 * Whether the graphed call sh was left without returning (longjmp, or an
 * exception the unwinder hooks did not see), seen from a new call or a
 * return whose stack pointer is sp on the same shadow stack: its frame
 * is below sp; or its return slot no longer holds its hook (the frame is
 * gone and the stack was written over: a longjmp, then a call that
 * pushed stack arguments). At the same sp with the hook still in place,
 * the caller tail-called the new function: it stays, and returns after
 * it. While an exception is being unwound the slots hold the real return
 * addresses (suspended): only the stack pointer tells then. The slot
 * holds the hook from the moment the call is pushed until it is popped
 * (see entry.S), so a signal handler's call, whatever it interrupted,
 * never takes a live call for a left one; nor does a handler's call on
 * an alternate stack above the thread's own (elsewhere).
 */
static inline int left(const struct tbuf *b, const struct shadow *sh, uintptr_t sp)
{
	if (__builtin_expect(sh->sp < sp, 0) && !elsewhere(sh->sp))
		return 1;
	return !b->suspended && ((const uintptr_t *)sh->sp)[-1] != sh->hook;
}

/* One graphed call left without returning (a longjmp, an exception). */
static void record_unwound(struct tbuf *b, uint64_t ts)
{
	uint64_t d;
	uint32_t n = stamp(b, ts, EXT_MAX, &d);
	b->words[n] = W_EXT(EXT_UNWOUND, d);
	publish(b, n + 1);
	atomic_fetch_add_explicit(&unwound, 1, memory_order_relaxed);
}

/* The entry sh, popped from s, gives back what its mark added to s's
 * counts (subtree.c). */
static inline void unmark(struct shadow_stack *s, const struct shadow *sh)
{
	if (__builtin_expect(sh->mark == MARK_CHOSEN, 0))
		s->chosen--;
	else if (__builtin_expect(sh->mark == MARK_NOTRACE, 0))
		s->notrace--;
}

/* Pop the innermost call of s, left without returning: recorded as
 * unwound when rec (not once the trace is ending), unless it is a
 * notrace call, whose entry was never recorded. */
static void pop_left(struct tbuf *b, struct shadow_stack *s, uint64_t ts, int rec)
{
	const struct shadow *sh = &s->e[--s->depth];
	if (rec && sh->mark != MARK_NOTRACE)
		record_unwound(b, ts);
	unmark(s, sh);
}

/* Pop the calls of s left without returning (pop_left); returns the new
 * depth. */
static uint32_t unwind_to(struct tbuf *b, struct shadow_stack *s, uint64_t ts, uintptr_t sp, int rec)
{
	while (s->depth > 0 && left(b, &s->e[s->depth - 1], sp))
		pop_left(b, s, ts, rec);
	return s->depth;
}

/* The thread's buffer, made at its first event, taken (busy) for the
 * call whose stack pointer is ref; NULL when the tracer cannot record
 * here (it is already running on this thread: a signal handler; or the
 * buffer cannot be made). */
static inline struct tbuf *enter(uintptr_t ref)
{
	/* No trace open: a pre-patched site (ftpatch enable) called before
	 * ftrt_init started tracing, or after it failed to. Return before
	 * touching TLS, which may not be set up yet (ifunc resolvers). */
	if (__builtin_expect(dir_fd < 0, 0))
		return NULL;
	struct tbuf *b = tb;
	if (__builtin_expect(b == NULL, 0)) {
		if (busy)
			goto drop;
		busy = 1;
		b = tbuf_new();
		busy = 0;
		if (!b)
			goto drop;
	}
	if (__builtin_expect(!take(b, ref), 0))
		goto drop;
	if (__builtin_expect(ended(), 0)) {
		unbusy(b, 0); /* after the trace's end: not an event it lost */
		return NULL;
	}
	return b;
drop:
	atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
	return NULL;
}

/*
 * Push a graphed call: the site ip, its return slot and what the slot
 * will hold while it runs (hook). 0 when the call is not graphed: deeper
 * than FTRACE_DEPTH, or its stack's shadow stack overflowed (that stack
 * then stops graphing for good, counted, never a crash); or the subtree
 * filters leave it out (subtree.c says which, and why a notrace call is
 * graphed but not recorded); or no call is graphed any more (a context's
 * stack is unknown): then it is recorded as a call, if the subtree
 * filters can tell it is to be without a shadow stack: a chosen
 * function's own (FTRACE_GRAPH_FUNCS), or any but a notrace function's
 * (FTRACE_GRAPH_NOTRACE alone).
 */
static inline int graph_push(struct tbuf *b, uintptr_t ip, uintptr_t *slot, uintptr_t hook)
{
	uint64_t ts = now();
	uintptr_t sp = (uintptr_t)(slot + 1);
	int sub = ftrt_subtree, mark = sub ? ftrt_subtree_mark(ip) : 0;
	if (__builtin_expect(__atomic_load_n(&graph_calls, __ATOMIC_RELAXED), 0)) {
		if (sub && mark != MARK_CHOSEN && (mark == MARK_NOTRACE || (sub & SUBTREE_FUNCS)))
			return 0;
		record_call(b, ts, ip, *slot);
		return 0;
	}
	struct shadow_stack *s = stack_at(b, sp, ts, 1);
	uint32_t d = s->depth;
	if (__builtin_expect(d > 0 && left(b, &s->e[d - 1], sp), 0))
		d = unwind_to(b, s, ts, sp, 1);
	if (__builtin_expect(d >= ftrt_max_depth || s->stopped, 0)) {
		if (d >= SHADOW_MAX && !s->stopped) {
			s->stopped = 1;
			atomic_fetch_add_explicit(&stopped, 1, memory_order_relaxed);
		}
		if (s->stopped)
			atomic_fetch_add_explicit(&overflow, 1, memory_order_relaxed);
		return 0;
	}
	if (__builtin_expect(sub != 0, 0)) {
		if (s->notrace)
			return 0; /* inside a notrace call */
		if (!mark && (sub & SUBTREE_FUNCS) && !s->chosen)
			return 0; /* outside every chosen call */
	}
	/* A notrace call is graphed for its return, never recorded. */
	uint32_t n = mark == MARK_NOTRACE ? b->n : record_entry(b, ts, ip);
	struct shadow *sh = &s->e[d];
	sh->ret = *slot;
	sh->ip = ip;
	sh->sp = sp;
	sh->hook = hook;
	sh->pos = b->base + n; /* base as the entry's flush, if any, left it */
	sh->mark = (uintptr_t)mark;
	s->depth = d + 1;
	if (__builtin_expect(mark != 0, 0)) {
		if (mark == MARK_NOTRACE)
			s->notrace++;
		else
			s->chosen++;
	}
	return 1;
}

/*
 * The hot path of the call-site trampolines (ftrace_caller5/6 and the
 * mcount ones), with the site's address and where the function's return
 * address (the parent ip) is on the stack. function: one record.
 * function_graph: push the call and hijack its return through
 * return_to_handler.
 */
void ftrt_entry(uintptr_t ip, uintptr_t *parent_slot)
{
	struct tbuf *b = enter((uintptr_t)(parent_slot + 1));
	if (!b)
		return;
	if (ftrt_mode != FTRT_GRAPH) {
		record_call(b, now(), ip, *parent_slot);
	} else if (graph_push(b, ip, parent_slot, (uintptr_t)return_to_handler)) {
		*parent_slot = (uintptr_t)return_to_handler;
	}
	unbusy(b, 0);
}

/*
 * The hot path of a per-site graph trampoline (ftrace_graph_enter, see
 * x86_64/entry.S): push the call, whose return slot is slot; the
 * trampoline then calls the function itself, so it returns to hook
 * inside the trampoline. 1 if graphed; 0 and the trampoline just jumps
 * into the function.
 */
int ftrt_graph_enter(uintptr_t ip, uintptr_t *slot, uintptr_t hook)
{
	struct tbuf *b = enter((uintptr_t)(slot + 1));
	if (!b)
		return 0;
	int graphed = graph_push(b, ip, slot, hook);
	if (graphed)
		*slot = hook; /* with the entry, under busy: see left() */
	unbusy(b, 0);
	return graphed;
}

/* A graphed call returned and the shadow stack has no entry for it: no
 * record of where to return, and nothing sane is left to do. */
static __attribute__((noreturn, noinline)) void lost_return(void)
{
	static const char msg[] = "ftrt: function_graph: a return the shadow stack has no entry for\n";
	sys(SYS_write, 2, (long)msg, sizeof msg - 1, 0, 0, 0);
	sys(SYS_kill, sys(SYS_getpid, 0, 0, 0, 0, 0, 0), 6 /* SIGABRT */, 0, 0, 0, 0);
	__builtin_trap();
}

/*
 * Called from return_to_handler (or a trampoline's return path) with the
 * stack pointer the function returned with: the call whose frame that
 * is returns, and the calls above it on the shadow stack were left
 * without returning (longjmp): they are popped and recorded as unwound.
 * Returns where the function really returns to.
 */
uintptr_t ftrt_graph_exit(uintptr_t sp)
{
	struct tbuf *b = tb;
	if (__builtin_expect(!b, 0))
		lost_return();
	/* Set before the shadow stack is read, or the time (see entry.S);
	 * and given back as it was: a return is never dropped, even inside
	 * a signal handler that interrupted the tracer. */
	uintptr_t was_busy = b->busy;
	if (!take(b, sp))
		b->busy = sp;
	else
		was_busy = 0;
	uint64_t ts = now();
	int rec = !ended(); /* once the trace is ending, calls still return, unrecorded */
	struct shadow_stack *s = stack_at(b, sp, ts, rec);
	/* The returning call is the innermost one whose frame is at sp (a
	 * tail-called one above its caller, at the same sp, first); any
	 * above it were left without returning: a longjmp out of them, or
	 * out of a signal handler on another stack. */
	uint32_t k = s->depth;
	while (k > 0 && s->e[k - 1].sp != sp)
		k--;
	if (__builtin_expect(k == 0, 0))
		lost_return();
	while (s->depth > k)
		pop_left(b, s, ts, rec);
	struct shadow *sh = &s->e[--s->depth];
	unmark(s, sh);
	/* A notrace call recorded no entry, and records no exit.
	 * FTRACE_THRESH: a call shorter than the threshold that called
	 * nothing traced (its entry is still the last record, in the buffer,
	 * so last is its time) is taken back, and last with it: the entry's
	 * time less its delta, the time of the record before it (a TIME
	 * written for the entry stays, and says the same). */
	rec = rec && sh->mark != MARK_NOTRACE;
	uint32_t n = b->n;
	uint64_t at = sh->pos - b->base; /* the entry's index in words[], when there */
	if (rec && ftrt_thresh_tsc && sh->pos >= b->base && at < n && is_entry(b->words[at]) &&
	    at + rec_words(b->words[at]) == n && ts - b->last < ftrt_thresh_tsc) {
		b->last -= entry_delta(b->words[at]);
		publish(b, (uint32_t)at);
	} else if (rec) {
		record_exit(b, ts);
	}
	uintptr_t ret = sh->ret; /* before busy goes: a handler's call may be pushed there after */
	unbusy(b, was_busy);
	return ret;
}

/*
 * Walks of the stack: exceptions and forced unwinds (unwind.c), and
 * backtrace (backtrace.c).
 *
 * The unwinder finds each frame's caller through the frame's return
 * address; in a graphed call's slot it would find the hook and stop
 * there (std::terminate, or a backtrace cut short). So before it walks,
 * every hooked slot gets its real return address back
 * (ftrt_graph_suspend), and the walk opens a level. While one is open:
 *
 *   - before each landing pad the unwinder runs (a cleanup that runs
 *     destructors, or the handler that catches) it says the frame the
 *     pad is in, by the stack pointer the pad will run with
 *     (ftrt_graph_land): every graphed call whose frame lay at or below
 *     it is gone, and is recorded unwound there and then, so the calls
 *     the landing pad makes are graphed under the frame whose locals
 *     they destroy;
 *   - the calls landing pads make are graphed and hooked as usual;
 *   - the catch (or the raise coming back, or the backtrace's end)
 *     closes the level (ftrt_graph_resume): the survivors' slots get
 *     their hooks back, so their exits are recorded. While an outer
 *     level is still open (a destructor run by one exception's cleanup
 *     threw and caught one of its own), only the calls made since its
 *     last landing pad was entered do: the frame whose pad runs, and
 *     its callers, are still to be walked by that outer unwind.
 *
 * A call and the graphed function it tail-called share one slot: the
 * callee's entry holds the caller's hook as its return address. Slots
 * are given back innermost first and hooked again outermost first, so
 * such a chain is undone and redone whole.
 */

/* The thread's buffer, busy, for the functions below; NULL when there
 * is nothing to do (no graph, no buffer) or it cannot be done now (a
 * signal handler interrupted this thread's tracer, its shadow stack
 * perhaps half-changed). */
static struct tbuf *walk_begin(void)
{
	struct tbuf *b = tb;
	if (!b || ftrt_mode != FTRT_GRAPH || !take(b, (uintptr_t)__builtin_frame_address(0)))
		return NULL;
	return b;
}

/* Every hooked slot of s gets its entry's real return address, innermost
 * first. */
static void unhook(struct shadow_stack *s)
{
	for (uint32_t i = s->depth; i-- > 0;) {
		const struct shadow *sh = &s->e[i];
		uintptr_t *slot = (uintptr_t *)sh->sp - 1;
		if (*slot == sh->hook)
			*slot = sh->ret;
	}
}

/* Every slot of the entries of s from keep up that holds its entry's
 * real return address gets its hook back, outermost first. */
static void rehook(struct shadow_stack *s, uint32_t keep)
{
	for (uint32_t i = keep; i < s->depth; i++) {
		const struct shadow *sh = &s->e[i];
		uintptr_t *slot = (uintptr_t *)sh->sp - 1;
		if (*slot == sh->ret)
			*slot = sh->hook;
	}
}

/* Pop the graphed calls made from a frame whose stack pointer is sp, or
 * deeper (their own stack pointer at return, their CFA, at most sp),
 * each recorded unwound; returns their shadow stack. */
static struct shadow_stack *drop_to(struct tbuf *b, uintptr_t sp)
{
	int rec = !ended();
	uint64_t ts = now();
	struct shadow_stack *s = stack_at(b, sp, ts, rec);
	while (s->depth > 0 && s->e[s->depth - 1].sp <= sp)
		pop_left(b, s, ts, rec);
	return s;
}

/*
 * Before the unwinder walks the stack for the exception exc (its
 * _Unwind_Exception), or, exc NULL, for a backtrace: every graphed
 * frame's real return address back in its slot, and a level opened.
 * The walk is of the stack this runs on (the thread's own, or a
 * context's). Returns 1 when it opened a level, which ftrt_graph_resume
 * must close if the walk comes back; 0 when there was nothing to do, or
 * exc's own level is open already (a rethrow's _Unwind_Resume_or_Rethrow
 * calls _Unwind_RaiseException: one exception, one level).
 */
int ftrt_graph_suspend(const void *exc)
{
	struct tbuf *b = walk_begin();
	if (!b)
		return 0;
	uint64_t id;
	struct shadow_stack *s = find_stack(b, (uintptr_t)__builtin_frame_address(0), &id);
	unhook(s);
	int open = !exc || b->levels == 0 || b->deep || b->level[b->levels - 1].exc != exc;
	if (open) {
		if (b->levels < LEVEL_MAX)
			b->level[b->levels++] = (struct level){ .exc = exc, .stack = s, .keep = s->depth };
		else
			b->deep++; /* closed unknown: its survivors keep their real addresses */
		b->suspended++;
	}
	unbusy(b, 0);
	return open;
}

/*
 * The unwinder is about to run a landing pad in the frame whose stack
 * pointer will be sp (from its _Unwind_SetIP: the CFA of the call the
 * exception came through, _Unwind_GetCFA): the graphed calls that frame
 * made are gone. So too in a walk that opened no level: one that passed
 * the graphed calls through frames.c's unwind info for their hooks (a
 * forced unwind the C library started), their slots untouched.
 */
void ftrt_graph_land(uintptr_t sp)
{
	struct tbuf *b = walk_begin();
	if (!b)
		return;
	struct shadow_stack *s = drop_to(b, sp);
	struct level *lv = b->levels ? &b->level[b->levels - 1] : NULL;
	if (lv && !b->deep && lv->stack == s) {
		lv->keep = s->depth;
		lv->landed = 1;
	}
	unbusy(b, 0);
}

/*
 * The walk for exc is over: it was caught in the frame whose landing pad
 * ran last (__cxa_begin_catch), its raise came back (no handler: nothing
 * was unwound), or, exc NULL, the backtrace is done. The survivors get
 * their hooks back, but for the frames an outer walk has still to walk.
 * sp: the catching frame's stack pointer when it called
 * __cxa_begin_catch; should no landing pad have been seen (a personality
 * routine that does not call _Unwind_SetIP through unwind.c), the calls
 * at or below it are dropped. A catch of an exception this thread did
 * not open a level for (a forced unwind that the C library raised
 * through its own handle on the unwinder) changes nothing.
 */
void ftrt_graph_resume(const void *exc, uintptr_t sp)
{
	struct tbuf *b = tb;
	if (!b || (b->levels == 0 && b->deep == 0))
		return;
	b = walk_begin();
	if (!b)
		return;
	if (b->deep) {
		b->deep--;
		b->suspended--;
	} else if (b->level[b->levels - 1].exc == exc) {
		const struct level *lv = &b->level[--b->levels];
		if (!lv->landed && sp)
			drop_to(b, sp);
		b->suspended--;
		const struct level *outer = b->levels ? &b->level[b->levels - 1] : NULL;
		rehook(lv->stack, outer && outer->stack == lv->stack ? outer->keep : 0);
	}
	unbusy(b, 0);
}

/*
 * For frames.c: whether hook is the hook of one of the graphed calls on
 * the stack this runs on (the unwinder walks the stack it runs on: the
 * thread's own, or a context's); if so, *hi says where that shadow stack
 * and its depth are, and gives an area of the thread's (FTRT_FRAME_INFO
 * bytes, zero until frames.c writes it, and again when it last wrote it
 * for another shadow stack) for the unwind info frames.c builds. 0 when
 * not, or when the thread's tracer is running (a signal handler
 * interrupted it: its shadow stack may be half-changed).
 */
int ftrt_graph_hook_info(uintptr_t hook, struct ftrt_hook_info *hi)
{
	struct tbuf *b = tb;
	if (!b || ftrt_mode != FTRT_GRAPH || (b->busy && !abandoned(b, b->busy, (uintptr_t)__builtin_frame_address(0))))
		return 0;
	uint64_t id;
	struct shadow_stack *s = find_stack(b, (uintptr_t)__builtin_frame_address(0), &id);
	for (uint32_t i = s->depth; i-- > 0;)
		if (s->e[i].hook == hook) {
			if (b->frame_info_for != s) {
				__atomic_store_n((uint32_t *)b->frame_info, 0, __ATOMIC_RELAXED);
				b->frame_info_for = s;
			}
			hi->area = b->frame_info;
			hi->shadow = (uintptr_t)s->e;
			hi->depth = (uintptr_t)&s->depth;
			return 1;
		}
	return 0;
}
