/*
 * What the files that record a trace share: the record format, a
 * thread's buffer (struct tbuf), the state they share (defined in
 * core/state.c), each file's entry points, and the smallest steps of the
 * tracers' paths, inline (calling nothing else of the runtime). The
 * larger inline steps, which call down into the files below, are in
 * encode.h (writing a record) and tracers/take.h (taking the buffer), so
 * each tracer compiles them into its own code.
 *
 * The files that include it: the record layer's (record/trace.c opens
 * the trace, end.c ends it, meta.c writes the metadata, thread.c makes
 * and flushes each thread's buffer, stream.c, ring.c and writer.c write
 * it, state.c defines the state above) and the tracers' above it
 * (tracers/function.c, graph.c, walk.c, shadow.c, ...), which the buffer
 * code reaches only through ftrt_record_up. The clock is core/clock.h's.
 * The architecture's part (the cycle counter, whether it can be
 * trusted) is in arch/.
 */
#ifndef FTRT_TRACER_H
#define FTRT_TRACER_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#include "arch/arch.h"
#include "arch/layout.h"
#include "arch/sys.h"
#include "core/clock.h"
#include "core/ftrt.h"
#include "stack.h"

#define HIDDEN __attribute__((visibility("hidden")))

/*
 * Records (format 4): little-endian 64-bit words, appended to the
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
 *   EXT_WRAPPED    earlier records the flight    words overwritten               8 bytes
 *                  recorder's ring overwrote
 *   EXT_ARGS,      a call's arguments, a return  words after w0, then items     24+ bytes
 *   EXT_RETVAL     value (capture.c)
 *   EXT_SUMMARY    what the stream holds, at its words after w0, then SUM_*    96 bytes
 *                  end (stream.c)
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
 * fast path being first (arch/x86_64/graph.S), an EXIT whose delta from
 * 0, of up to 62 bits, is the reading itself.
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

struct tbuf {
	/* The records of each kind written to the buffer (taken back with
	 * them: FTRACE_THRESH), for the stream's summary (stream.c). Counted
	 * where each is written: the fast paths too, on the cache line they
	 * write n and last in. */
	uint64_t calls;    /* CALL and LONGCALL */
	uint64_t entries;  /* ENTRY and LONGENTRY */
	uint64_t exits;    /* EXIT */
	uint32_t n;        /* words in words[]: raised only after the words it adds are written
			    * (publish), so words[0, n) are whole records whenever the end's
			    * flush reads it, from a signal handler or another thread */
	int suspended;     /* walks of the stack in progress (levels + deep): return slots hold
			    * real addresses, so left() judges by the stack pointer alone */
	volatile uintptr_t busy; /* the tracer runs on this thread: a signal handler's traced
			    * calls in that window are dropped and counted, not interleaved;
			    * the trace's end waits for it to be let go (ftrt_trace_end). Its
			    * value is the stack pointer of the tracer code that took it
			    * (take), or BUSY_HELD */
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
	struct tbuf *next; /* every live buffer, for the flush at the end (under list_owner) */
	int fd;            /* the thread's stream, once its header is written; before, FD_NONE
			    * or FD_MAKING - i; FD_LOST once a write to it failed (flush), or
			    * the program closed it and it could not be opened again */
	int fd_i;          /* the stream's name's i (stream.c's stream_name) */
	uint64_t fd_dev, fd_ino; /* what the stream is (fds.h): checked before each write */
	int pid, tid;
	unsigned cur_gen;  /* of the stack below (cur, cur_id...): the table of contexts' then */
	/* The rest of the stream's summary (stream.c): UNWOUND records; the
	 * time of the stream's first record (0: not known); base + n just
	 * after the last summary written (nothing recorded since: none
	 * again); and whether the counts are not the stream's (SUM_COUNTED
	 * off: records lost, contexts, ring mode). */
	uint64_t unwound;
	uint64_t first;
	uint64_t summed;
	int uncounted;
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
	struct ring *ring; /* the flight recorder's (ring.c): NULL until the buffer first fills */
	uint64_t written;  /* ring mode: words written to the stream so far */
	uint32_t pending;  /* writer mode: segments handed to the writer and not yet written (writer.c) */
	/* The graph users' (fgraph.c): their data for the calls on the
	 * thread's own shadow stack, a stack of its own (fgdata, made at the
	 * first reservation; fgtop bytes used), and a word per user. */
	unsigned char *fgdata;
	uint32_t fgtop;
	uintptr_t fgvar[17];
};

_Static_assert(offsetof(struct tbuf, calls) == TB_CALLS && offsetof(struct tbuf, entries) == TB_ENTRIES &&
		       offsetof(struct tbuf, exits) == TB_EXITS && offsetof(struct tbuf, n) == TB_N && offsetof(struct tbuf, busy) == TB_BUSY &&
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
extern __thread struct tbuf *ftrt_tb __attribute__((tls_model("initial-exec"), visibility("hidden")));
#define tb ftrt_tb
/* Set while the thread runs a graph user's callback (fgraph.c), whose
 * traced calls the tracer leaves out without counting them dropped. */
extern __thread int ftrt_in_users __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* Set while a thread's buffer is made or torn down (tb not usable). */
extern __thread volatile int ftrt_thread_busy __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The state the tracer files share (state.c says what each is). */
extern struct tbuf *ftrt_bufs HIDDEN;
extern _Atomic int ftrt_bufs_owner HIDDEN;
extern _Atomic int ftrt_nbufs HIDDEN;
extern _Atomic uint64_t ftrt_dropped HIDDEN, ftrt_overflow HIDDEN, ftrt_unwound HIDDEN, ftrt_stopped HIDDEN;
extern _Atomic uint64_t ftrt_lost_bytes HIDDEN, ftrt_recorded_bytes HIDDEN, ftrt_lost_threads HIDDEN;
/* ftrt_trace_fd >= 0 once a trace is open (its directory's descriptor
 * then, or one the program has closed since: ftrt_trace_dir). */
extern int ftrt_trace_fd HIDDEN, ftrt_creator_pid HIDDEN, ftrt_trace_pid HIDDEN, ftrt_membarrier_state HIDDEN;
/* The trace directory's descriptor, checked to be still the directory
 * (fds.h), else opened again by its path (trace.c): -1 when no trace is
 * open, or the program closed it and it cannot be found again (moved,
 * removed). Async-signal-safe. */
int ftrt_trace_dir(void) HIDDEN;
/* Whether this process is a child forked whose image is not made yet
 * (trace.c: made when its directory is first wanted). */
int ftrt_trace_fork_pending(void) HIDDEN;
/* Where the trace directory is now, into buf (size bytes): "" when no
 * trace is open. */
void ftrt_trace_path(char *buf, size_t size) HIDDEN;
/* The counts the metadata reports set to 0: a forked child's, a second
 * trace's (trace.c). */
void ftrt_trace_zero_counts(void) HIDDEN;
extern int ftrt_exit_code HIDDEN; /* end.c's: ftrt_trace_status */
extern int ftrt_fast_function HIDDEN, ftrt_fast_graph HIDDEN, ftrt_ending HIDDEN;
extern int ftrt_graph_slow HIDDEN, ftrt_graph_off HIDDEN;
extern int ftrt_paused HIDDEN, ftrt_graph_used HIDDEN, ftrt_graph_users HIDDEN;

/*
 * The subtree filters (patch/subtree.c): FTRACE_GRAPH_FUNCS and
 * FTRACE_GRAPH_NOTRACE. ftrt_subtree says which are on (SUBTREE_*,
 * layout.h; 0 for none, and under any tracer but function_graph);
 * ftrt_subtree_funcs and ftrt_subtree_notrace are their settings, for
 * the trace's metadata (NULL when not on).
 */
extern int ftrt_subtree HIDDEN;
extern const char *ftrt_subtree_funcs HIDDEN, *ftrt_subtree_notrace HIDDEN;

/* The contexts (tracers/context.c makes them; the metadata counts
 * them). */
/* Bumped each time a context is made: 0 while none has been, and then
 * every stack is its thread's own. A thread's cached answer of
 * ftrt_context_at holds while this is unchanged. */
extern _Atomic unsigned ftrt_ctx_gen HIDDEN;
/* Contexts made, and those made when the table was full (whose calls
 * are then recorded as calls, not graphed: ftrt_graph_ungraphed). */
extern _Atomic uint64_t ftrt_ctx_made HIDDEN;
extern _Atomic uint64_t ftrt_ctx_lost HIDDEN;

/* Whether recording is paused (tracing_off): read by the C entry paths,
 * as the fast paths read their flags. */
static inline int paused(void)
{
	return __builtin_expect(__atomic_load_n(&ftrt_paused, __ATOMIC_RELAXED), 0);
}

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

/* Streams (stream.c). ftrt_flush writes the buffer out (in ring mode,
 * the ring too: ftrt_ring_write); ftrt_stream_make makes the thread's
 * stream (0, or -1); ftrt_fit says how many of words[0, n) are the whole
 * records that fit in room bytes, and ftrt_put_records writes those. */
char *ftrt_utoa(char *p, uint64_t v) HIDDEN;
uint64_t ftrt_fsize_room(uint64_t off) HIDDEN;
void ftrt_flush(struct tbuf *b) HIDDEN;
int ftrt_stream_make(struct tbuf *b) HIDDEN;
/* The descriptor of b's stream (made: b->fd >= 0) to write it through,
 * checked to be still the stream (fds.h), else the stream opened again
 * by its name; -1 when it cannot be (b->fd FD_LOST then). Closed with
 * ftrt_stream_close, which leaves a number the program took alone. */
int ftrt_stream_fd(struct tbuf *b) HIDDEN;
void ftrt_stream_close(struct tbuf *b, int fd) HIDDEN;
int ftrt_stream_make_as(struct tbuf *b, int header) HIDDEN;
void ftrt_stream_header(unsigned char hdr[STREAM_HEADER], const struct tbuf *b) HIDDEN;
uint32_t ftrt_fit(const uint64_t *words, uint32_t n, uint64_t room) HIDDEN;
size_t ftrt_put_records(int fd, const uint64_t *words, uint32_t n, uint64_t off) HIDDEN;
/* End b's stream with its summary (EXT_SUMMARY, abi.h), to go with the
 * flush that follows; self: b is the calling thread's. */
void ftrt_stream_summary(struct tbuf *b, int self) HIDDEN;

/* Sites the live API enabled less those it disabled (live.c). */
extern long ftrt_live_enabled_delta HIDDEN;
/* The most ftrt_live_enabled_delta was since the trace opened: what a
 * trace ftpatch record -p ended (every site disabled first) traced. */
extern long ftrt_live_enabled_peak HIDDEN;

/* snapshot.c: a snapshot of the flight recorder into dir (NULL or "":
 * snapshot-N in the trace's directory), the directory made into made
 * (size bytes). 0, or -errno with ftrt_snapshot_why saying why. */
int ftrt_snapshot(const char *dir, char *made, size_t size) HIDDEN;
const char *ftrt_snapshot_why(void) HIDDEN;

/*
 * What the tracers give the buffer code (tracers/wire.c), which it calls
 * through these, never by name: take a thread's buffer for work on it
 * (tracers/take.h's take: 1 when taken, from a holder a longjmp left
 * too; 0 when it is held), and record the end of every graphed call
 * still open on the stack sp is on as left, at ts (a thread's exit).
 */
struct ftrt_record_calls {
	int (*take)(struct tbuf *b, uintptr_t ref);
	void (*left_all)(struct tbuf *b, uintptr_t sp, uint64_t ts);
};
extern struct ftrt_record_calls ftrt_record_up HIDDEN;

/* The writer thread (writer.c): FTRACE_BUFFER=writer. */
extern int ftrt_writer HIDDEN;
void ftrt_writer_handoff(struct tbuf *b) HIDDEN;
void ftrt_writer_wait(struct tbuf *b, uint64_t deadline) HIDDEN;
void ftrt_writer_drain(uint64_t deadline) HIDDEN;
void ftrt_writer_forget(void) HIDDEN;
uint64_t ftrt_writer_self_written(void) HIDDEN;

/* The flight recorder (ring.c): the segments of a thread's ring (0:
 * stream mode), the bytes FTRACE_BUFFER asked for it, and the bytes of
 * records the rings overwrote. A ring holds at most RING_MAX_TEXT. */
extern uint32_t ftrt_ring_slots HIDDEN;
extern uint64_t ftrt_ring_asked HIDDEN;
extern _Atomic uint64_t ftrt_overwritten HIDDEN;
#define RING_MAX_TEXT "96 GiB"
uint32_t ftrt_ring_parse(const char *size, uint64_t *asked) HIDDEN;
uint64_t ftrt_ring_bytes(void) HIDDEN;
void ftrt_ring_push(struct tbuf *b) HIDDEN;
void ftrt_ring_write(struct tbuf *b) HIDDEN;
void ftrt_ring_free(struct tbuf *b) HIDDEN;
void ftrt_ring_forget(struct tbuf *b) HIDDEN;
size_t ftrt_ring_snapshot(const struct tbuf *b, uint64_t *out) HIDDEN;
size_t ftrt_ring_snapshot_bytes(void) HIDDEN;
uint64_t ftrt_ring_words(const struct tbuf *b) HIDDEN;

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
	if (k == 0) {
		unsigned sub = EXT_SUB(w0);
		k = sub == EXT_ARGS || sub == EXT_RETVAL || sub == EXT_SUMMARY ? 1 + (uint32_t)(w0 & ARG_WORDS_MASK) : ext[sub];
	}
	return k ? k : 1; /* a reserved sub-kind, never written: a word, so a walk ends */
}

/* Buffers (thread.c). */
/* How long the trace's end waits, all told, for a lock or a buffer that
 * another thread holds before it goes on without it. */
#define END_WAIT_NS 1000000000ull
void ftrt_nap(void) HIDDEN;
void ftrt_bufs_lock(int me) HIDDEN;
void ftrt_bufs_unlock(void) HIDDEN;
int ftrt_bufs_take(int me, uint64_t deadline) HIDDEN;
struct tbuf *ftrt_tbuf_new(void) HIDDEN;
int ftrt_thread_start(void) HIDDEN;
void ftrt_tbuf_restart(struct tbuf *b) HIDDEN;
void ftrt_after_fork_child(void) HIDDEN;
int ftrt_spawn(void *(*fn)(void *)) HIDDEN;

/*
 * Scheduler events (sched.c; FTRACE_SCHED=1): opened at the trace's
 * start, drained (ftrt_sched_drain, until a deadline; 0: only if no
 * other thread drains) at the end and before an exec, checked when a
 * full buffer is written out (ftrt_sched_check), read by a thread of
 * their own once a second thread makes its buffer (ftrt_sched_reader);
 * a forked child opens its own (ftrt_sched_fork_child). The runtime's
 * threads say so (ftrt_sched_own_thread): their switches are not the
 * program's. The metadata says ftrt_sched_state (off, on, refused),
 * ftrt_sched_why (why refused, or what stopped them), and the counts.
 */
#define SCHED_STATE_OFF 0
#define SCHED_STATE_ON 1
#define SCHED_STATE_REFUSED 2
extern int ftrt_sched_state HIDDEN;
extern char ftrt_sched_why[256] HIDDEN;
extern _Atomic uint64_t ftrt_sched_switches HIDDEN, ftrt_sched_lost HIDDEN;
void ftrt_sched_start(void) HIDDEN;
void ftrt_sched_drain(uint64_t deadline) HIDDEN;
void ftrt_sched_check(void) HIDDEN;
void ftrt_sched_reader(void) HIDDEN;
void ftrt_sched_own_thread(void) HIDDEN;
void ftrt_sched_fork_child(void) HIDDEN;
/* A flight recorder's snapshot into the directory dir: its switches as
 * "<pid>.sched" there (sched.c). 0, or -errno. */
int ftrt_sched_snapshot(int dir) HIDDEN;

/* Shadow stacks (shadow.c). */
struct shadow_stack *ftrt_find_stack(struct tbuf *b, uintptr_t sp, uint64_t *id) HIDDEN;
struct shadow_stack *ftrt_stack_at(struct tbuf *b, uintptr_t sp, uint64_t ts, int rec) HIDDEN;
int ftrt_abandoned(struct tbuf *b, uintptr_t held, uintptr_t sp) HIDDEN;

/* The metadata (meta.c). */
#define META_END "meta.end"
void ftrt_meta_reserve(void) HIDDEN;
void ftrt_meta_write(int ended, uint64_t tsc_end, uint64_t mono_end, const char *tmp, uint64_t gone) HIDDEN;
void ftrt_meta_write_in(int dir, int ended, uint64_t tsc_end, uint64_t mono_end, const char *tmp, uint64_t gone) HIDDEN;
/* prologueout.c: "<pid>.prologue" in dir, the sites made at load from
 * prologues and their functions, for the reader (abi.h); nothing when
 * none was made. */
void ftrt_prologue_out(int dir, int pid) HIDDEN;

/* The graph tracer's push (graph.c), for the function tracer's entry,
 * whose -pg mcount sites graph too. */
int ftrt_graph_push(struct tbuf *b, uintptr_t ip, uintptr_t sp, uintptr_t ret, uintptr_t hook) HIDDEN;
/* A call function_graph cannot hook, recorded as a call (graph.c). */
void ftrt_graph_call(struct tbuf *b, uintptr_t ip, uintptr_t sp, uintptr_t ret) HIDDEN;

#endif
