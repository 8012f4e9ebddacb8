/*
 * Scheduler events (FTRACE_SCHED=1): when each traced thread left its
 * CPU, why, and when it ran again, from the kernel's context-switch
 * records (perf_event_open, user-space only), written beside the
 * threads' streams as "<pid>.sched" (abi.h's SCHED_*), in the trace's
 * clock.
 *
 * One event per CPU for the whole process, inherited by its threads:
 * perf_event_open(self, CPU c) for each CPU c, a dummy software event
 * that records nothing but PERF_RECORD_SWITCH (context_switch), each
 * with the thread's pid and tid and the time (sample_id_all,
 * PERF_SAMPLE_TID | PERF_SAMPLE_TIME) on the clock chosen (use_clockid);
 * inherit + inherit_thread: every thread made from here on gets a copy
 * of each (a process forked does not); remove_on_exec: an exec drops
 * them. Each CPU's event has a ring (1 + 2^n pages: the control page,
 * the data), which the threads' copies write into while they run on that
 * CPU: one writer at a time, as the kernel's ring wants (a ring the
 * copies share across CPUs loses records when two write at once). The
 * descriptors are closed once mapped (the mappings keep the events). A
 * thread's start costs the kernel a copy per CPU (5 us for 2 CPUs here).
 *
 * The rings are read (drained) into the file, never on the traced calls'
 * path: by a reader thread of the runtime's (a bare thread, started when
 * the process first has a second thread with a buffer: a single-threaded
 * program stays single-threaded), which looks at the rings now and then;
 * when any thread writes out a full buffer and a ring is a quarter full;
 * before an exec; and at the trace's end. One drain at a time (a lock
 * held with signals held back, as writer.c's); the end waits for it (a
 * deadline), the others go on without. A thread's events may lie in
 * several rings (it moved between CPUs): a drain takes, of each ring, the
 * records older than a millisecond before it began (any younger one on
 * another CPU may not be in its ring yet), the rest at the next; the
 * end's takes them all. Each thread's events are sorted by time.
 *
 * The clock: the kernel stamps each record with CLOCK_MONOTONIC (a trace
 * on the mono clock: its own clock) or CLOCK_MONOTONIC_RAW (a trace on
 * the cycle counter). RAW is the counter scaled by a constant where the
 * counter is the kernel's clocksource, so a RAW time converts to the
 * counter exactly by interpolation between two (counter, RAW) pairs:
 * one taken when the events opened, one at each drain, before the rings'
 * heads are read. The error is the pairs' own (tens of ns).
 *
 * A forked child forgets the parent's rings (not mapped there: perf maps
 * them VM_DONTCOPY) and opens its own. Calls stream.c (the file's
 * writes), dir.c, the clock and raw system calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "arch/fds.h"
#include "sched.h"
#include "tracer.h"

#define PAGES_ALL 128 /* data pages asked for all CPUs' rings together: 512 KiB */
#define PAGES_MAX 64  /* a CPU's ring's most: 256 KiB, 5,400 switches */
#define PAGES_MIN 4   /* the fewest taken: halved down to this under perf_event_mlock_kb */
#define REC_MIN 24    /* the smallest record read: a SWITCH, header and sample_id */
#define OWN_MAX 8     /* the runtime's own threads (ftrt_spawn's, and the reader) */
#define CPU_MAX 1024  /* CPUs followed; a process on more has only the first's switches */
#define YOUNG_NS 1000000 /* a drain leaves records younger than this for the next */

/* What the metadata says (tracer.h): SCHED_STATE_*, and why. */
int ftrt_sched_state;
char ftrt_sched_why[256];
_Atomic uint64_t ftrt_sched_switches, ftrt_sched_lost;

static int cpus;           /* CPUs with a ring; 0: none (off, refused) */
static int ncpus;          /* the CPUs possible (possible_cpus), at the start */
static int ev_pid;         /* the process they were opened in */
static struct perf_event_mmap_page *ring[CPU_MAX]; /* each CPU's control page; its data follows; NULL: none */
static uint64_t ring_size; /* a ring's data bytes: a power of two */
static uint64_t pagesz;
static uint64_t *scratch, scratch_events; /* one drain's events: 2 words each (key, word), then as many out */
static uint64_t c0, r0;    /* the (counter, RAW) pair taken when the events opened */
static _Atomic int lock;    /* the draining thread's tid, 0: none */
static int reader;          /* the reader thread was spawned (or tried) */
static _Atomic int own[OWN_MAX], nown; /* the runtime's threads' tids: their switches are not the program's */

/* The counter and CLOCK_MONOTONIC_RAW at one moment: the counter read on
 * each side of the clock's reading, their mid-point. */
static void clock_pair(uint64_t *c, uint64_t *r)
{
	struct timespec ts;
	uint64_t a = rdtsc();
	if (ftrt_clock_gettime)
		ftrt_clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	else
		clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	uint64_t b = rdtsc();
	*c = a + (b - a) / 2;
	*r = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A record's time t (the kernel's ns) in the trace's clock, between the
 * pair at the opening (c0, r0) and this drain's (c1, r1). */
static uint64_t trace_time(uint64_t t, uint64_t c1, uint64_t r1)
{
	if (ftrt_clock_mono)
		return t;
	if (r1 <= r0)
		return c0;
	__int128 d = (__int128)t - (__int128)r0;
	return (uint64_t)((__int128)c0 + d * (__int128)(c1 - c0) / (__int128)(r1 - r0));
}

/* Unmap the rings mapped so far (a failure part way). */
static void unmap_rings(void)
{
	for (int c = 0; c < cpus; c++)
		if (ring[c])
			sys(SYS_munmap, (long)ring[c], (long)(ring_size + pagesz), 0, 0, 0, 0);
	for (int c = 0; c < cpus; c++)
		ring[c] = NULL;
	cpus = 0;
}

/*
 * Open an event on each of ncpu CPUs and map its ring (data pages:
 * pages, halved on EPERM or ENOMEM, the per-user perf_event_mlock_kb
 * and RLIMIT_MEMLOCK, down to PAGES_MIN), then close its descriptor. A
 * CPU that is not there (ENODEV, EINVAL past the last) has none. On any
 * other failure: refused, why set, nothing left open or mapped. Raw
 * calls only: a forked child's handler runs it.
 */
static void open_events(int ncpu, uint64_t pages)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.sample_id_all = 1;  /* every record ends with pid, tid, time */
	a.context_switch = 1; /* PERF_RECORD_SWITCH at each switch in and out */
	a.exclude_kernel = 1; /* user space only: what paranoid 2 allows */
	a.exclude_hv = 1;
	a.inherit = 1;        /* threads made from now on get a copy... */
	a.inherit_thread = 1; /* ...threads only, not processes forked */
	a.remove_on_exec = 1; /* and an exec drops them */
	a.use_clockid = 1;
	a.clockid = ftrt_clock_mono ? CLOCK_MONOTONIC : CLOCK_MONOTONIC_RAW;
	clock_pair(&c0, &r0); /* before any record */
	int got = 0;
	cpus = 0;
	for (int c = 0; c < ncpu && c < CPU_MAX; c++) {
		long fd = sys(SYS_perf_event_open, (long)&a, 0, c, -1, PERF_FLAG_FD_CLOEXEC, 0);
		if (fd == -ENODEV)
			continue; /* a CPU not there (offline) */
		if (fd == -EINVAL && got > 0)
			break; /* past the last */
		const char *call = "perf_event_open";
		long m = fd;
		for (; !sys_failed(fd) && pages >= PAGES_MIN; pages /= 2) {
			call = "mmap";
			m = sys(SYS_mmap, 0, (long)((pages + 1) * pagesz), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (!sys_failed(m) || (m != -EPERM && m != -ENOMEM) || got > 0)
				break; /* the rings are all one size: the first's */
		}
		if (!sys_failed(fd))
			sys(SYS_close, fd, 0, 0, 0, 0, 0); /* the mapping holds the event */
		if (sys_failed(m)) {
			unmap_rings();
			ftrt_sched_refuse(call, m);
			return;
		}
		ring_size = pages * pagesz;
		ring[c] = (struct perf_event_mmap_page *)m;
		cpus = c + 1;
		got++;
	}
	if (!got) {
		ftrt_sched_refuse("perf_event_open", -ENODEV);
		return;
	}
	ev_pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	ftrt_sched_state = SCHED_STATE_ON;
	ftrt_sched_why[0] = 0;
}

/* The CPUs the kernel may run the process on: the highest possible
 * CPU's number + 1, from /sys/devices/system/cpu/possible ("0-63",
 * "0,2-5"); CPU_MAX when it cannot be read (open_events stops at the
 * first the kernel says is past the last). */
static int possible_cpus(void)
{
	char buf[256];
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (sys_failed(fd))
		return CPU_MAX;
	long n = sys(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	int top = 0, v = -1;
	for (long i = 0; i < n; i++) {
		if (buf[i] >= '0' && buf[i] <= '9') {
			v = (v < 0 ? 0 : v * 10) + buf[i] - '0';
			continue;
		}
		if (v > top)
			top = v;
		v = -1;
	}
	if (v > top)
		top = v;
	return top + 1;
}

/* At the trace's opening, when FTRACE_SCHED=1 (never read in a
 * secure-execution process: ftrt_env). */
void ftrt_sched_start(void)
{
	const char *v = ftrt_env(ENV_SCHED);
	if (!v || strcmp(v, "1") != 0)
		return;
	pagesz = getauxval(AT_PAGESZ);
	if (!pagesz)
		pagesz = 4096;
	ncpus = possible_cpus();
	if (ncpus > CPU_MAX)
		ncpus = CPU_MAX;
	/* Each CPU's ring: PAGES_ALL between them, as a power of two. */
	uint64_t pages = PAGES_MAX;
	while (pages > PAGES_MIN && pages * (uint64_t)ncpus > PAGES_ALL)
		pages /= 2;
	/* The drains' scratch area, mapped once and sized for the rings
	 * full: (key, word) for each event they can hold, then as many
	 * words out (a chunk's header and an event's word each). Pages
	 * untouched are never made. */
	scratch_events = pages * pagesz / REC_MIN * (uint64_t)ncpus + 1;
	long m = sys(SYS_mmap, 0, (long)(scratch_events * 32), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sys_failed(m)) {
		ftrt_sched_refuse("mmap", m);
		return;
	}
	scratch = (uint64_t *)m;
	long e = ftrt_ring_slots ? ftrt_sched_out_ring(ftrt_ring_bytes()) : 0;
	if (e)
		ftrt_sched_refuse("mmap", e);
	else
		open_events(ncpus, pages);
}

/* The calling thread is one of the runtime's (ftrt_spawn's, or the
 * reader): its switches are left out. Raw calls only. */
void ftrt_sched_own_thread(void)
{
	int i = atomic_fetch_add_explicit(&nown, 1, memory_order_relaxed);
	if (i < OWN_MAX)
		atomic_store_explicit(&own[i], (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0), memory_order_release);
}

static int owned(int tid)
{
	int n = atomic_load_explicit(&nown, memory_order_acquire);
	for (int i = 0; i < n && i < OWN_MAX; i++)
		if (atomic_load_explicit(&own[i], memory_order_acquire) == tid)
			return 1;
	return 0;
}

/* n bytes of ring r's data at offset off (of the stream of bytes)
 * into out: a record may wrap the ring's end. */
static void ring_copy(const struct perf_event_mmap_page *r, void *out, uint64_t off, size_t n)
{
	const char *data = (const char *)r + pagesz;
	uint64_t at = off & (ring_size - 1), first = ring_size - at < n ? ring_size - at : n;
	ftrt_sched_copy(out, data + at, first);
	ftrt_sched_copy((char *)out + first, data, n - first);
}

/* Heap sort of n (key, word) pairs by key, then word: keys are tids,
 * words an event's time << SCHED_KIND_BITS | its kind, so each thread's
 * events come together, in time order, whichever rings they were in. */
static int after(const uint64_t *a, const uint64_t *b)
{
	return a[0] > b[0] || (a[0] == b[0] && a[1] > b[1]);
}

static void sift(uint64_t *p, uint64_t i, uint64_t n)
{
	for (;;) {
		uint64_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && after(p + 2 * (c + 1), p + 2 * c))
			c++;
		if (!after(p + 2 * c, p + 2 * i))
			return;
		uint64_t k = p[2 * i], w = p[2 * i + 1];
		p[2 * i] = p[2 * c], p[2 * i + 1] = p[2 * c + 1];
		p[2 * c] = k, p[2 * c + 1] = w;
		i = c;
	}
}

static void sort_pairs(uint64_t *p, uint64_t n)
{
	for (uint64_t i = n / 2; i-- > 0;)
		sift(p, i, n);
	for (uint64_t end = n; end-- > 1;) {
		uint64_t k = p[0], w = p[1];
		p[0] = p[2 * end], p[1] = p[2 * end + 1];
		p[2 * end] = k, p[2 * end + 1] = w;
		sift(p, 0, end);
	}
}

/*
 * Read ring r from data_tail on into pairs (n so far; outs and lost
 * counted): every record when all, else those older than young (the
 * kernel's ns), the rest left for the next drain. Converted with the
 * pair (c1, r1).
 */
static uint64_t read_ring(struct perf_event_mmap_page *r, uint64_t *pairs, uint64_t n, int all, uint64_t young, uint64_t c1, uint64_t r1,
			  uint64_t *outs, uint64_t *lost)
{
	uint64_t head = __atomic_load_n(&r->data_head, __ATOMIC_ACQUIRE), tail = r->data_tail;
	while (tail < head) {
		struct perf_event_header h;
		ring_copy(r, &h, tail, sizeof h);
		if (h.size < sizeof h || h.size > head - tail) {
			tail = head; /* never written so: the rest is not read */
			break;
		}
		uint64_t rec[6];
		size_t k = h.size < sizeof rec ? h.size : sizeof rec;
		ring_copy(r, rec, tail, k);
		if (h.type == PERF_RECORD_SWITCH && h.size >= REC_MIN) {
			/* header, then sample_id: pid, tid (u32 each), time */
			if (!all && rec[2] >= young)
				break; /* the next drain's */
			int pid = (int)(uint32_t)rec[1], tid = (int)(uint32_t)(rec[1] >> 32);
			unsigned kind = !(h.misc & PERF_RECORD_MISC_SWITCH_OUT)			? SCHED_IN
					: (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? SCHED_PREEMPT
											 : SCHED_SLEEP;
			if (pid == ev_pid && !owned(tid)) {
				if (n < scratch_events) {
					pairs[2 * n] = (uint32_t)tid;
					pairs[2 * n + 1] = trace_time(rec[2], c1, r1) << SCHED_KIND_BITS | kind;
					n++;
					*outs += kind != SCHED_IN;
				} else {
					(*lost)++;
				}
			}
		} else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
			*lost += rec[2]; /* header, id, lost */
		}
		tail += h.size;
	}
	__atomic_store_n(&r->data_tail, tail, __ATOMIC_RELEASE); /* the kernel may write there again */
	return n;
}

/*
 * Read the rings into the file, with the lock held and signals held
 * back (all: every record, the trace's end; else those older than
 * YOUNG_NS). Each thread's events of this read make one chunk (abi.h),
 * the threads in the order of their ids.
 */
static void drain_locked(int all)
{
	uint64_t c1, r1;
	clock_pair(&c1, &r1); /* before the heads: the kernel's now, less YOUNG_NS, splits */
	uint64_t young = (ftrt_clock_mono ? mono_ns() : r1) - YOUNG_NS;
	uint64_t n = 0, outs = 0, lost = 0, *pairs = scratch;
	for (int c = 0; c < cpus; c++)
		if (ring[c])
			n = read_ring(ring[c], pairs, n, all, young, c1, r1, &outs, &lost);
	/* One chunk per thread: tid | count << 32, then its events. */
	sort_pairs(pairs, n);
	uint64_t *out = scratch + 2 * scratch_events, w = 0;
	for (uint64_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && pairs[2 * j] == pairs[2 * i]; j++)
			;
		out[w++] = pairs[2 * i] | (j - i) << 32;
		for (uint64_t x = i; x < j; x++)
			out[w++] = pairs[2 * x + 1];
	}
	if (w && ftrt_sched_out_put(ev_pid, out, w) == 0)
		atomic_fetch_add_explicit(&ftrt_sched_switches, outs, memory_order_relaxed);
	else if (w)
		lost += n;
	if (all)
		ftrt_sched_out_end(ev_pid); /* the flight recorder's ring to the file */
	if (lost)
		atomic_fetch_add_explicit(&ftrt_sched_lost, lost, memory_order_relaxed);
}

/*
 * Drain the rings now: until deadline (CLOCK_MONOTONIC ns) for the lock,
 * every record (an end: the trace's, an exec's); or not at all when
 * another thread holds it (deadline 0), the records older than YOUNG_NS.
 * Nothing in a process that is not the events' (a child before its
 * handler ran), nor when this thread holds the lock already (a fatal
 * signal's end that interrupted a drain: the rings are as that left
 * them). Async-signal-safe.
 */
void ftrt_sched_drain(uint64_t deadline)
{
	if (!cpus || (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != ev_pid)
		return;
	int me = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	unsigned long mask;
	sys_sigs_hold(&mask);
	for (;;) {
		int free = 0;
		if (atomic_compare_exchange_strong_explicit(&lock, &free, me, memory_order_acquire, memory_order_relaxed))
			break;
		if (free == me || !deadline || mono_ns() > deadline) {
			sys_sigs_release(&mask);
			return;
		}
		ftrt_nap();
	}
	drain_locked(deadline != 0);
	atomic_store_explicit(&lock, 0, memory_order_release);
	sys_sigs_release(&mask);
}

/* The bytes of the fullest ring not read yet (reads of the rings'
 * heads: no system call). */
static uint64_t fullest(void)
{
	uint64_t most = 0;
	for (int c = 0; c < cpus; c++) {
		struct perf_event_mmap_page *r = ring[c];
		if (r) {
			uint64_t used = __atomic_load_n(&r->data_head, __ATOMIC_ACQUIRE) - r->data_tail;
			most = used > most ? used : most;
		}
	}
	return most;
}

/* A thread wrote out a full buffer: a drain if a ring is a quarter
 * full. The process first: a child forked without the fork handlers
 * (a raw fork system call) has none of the rings mapped. */
void ftrt_sched_check(void)
{
	if (cpus && (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) == ev_pid && fullest() > ring_size / 4)
		ftrt_sched_drain(0);
}

/*
 * The reader thread: looks at the rings' heads every interval and
 * drains them when one is an eighth full. The interval follows the rate
 * the fullest fills at: a quarter of its time to fill at the rate it
 * last filled, between 2 and 20 ms (a burst after a quiet spell finds it
 * at most 20 ms away: a ring of 256 KiB holds 5,400 switches). Not a
 * poll of the events: the kernel wakes their pollers at each inheriting
 * thread's exit, which in a program that makes threads by the thousand
 * cost more than the reading (+7% of the run).
 *
 * A bare thread (reader_spawn): raw system calls, the clock through the
 * C library's clock_gettime found at start (which touches no thread
 * state when it succeeds), and nothing else of the C library; no stream
 * of a forked child's image not made yet (making it is the C library's
 * work): the program's threads drain then.
 */
static int reader_main(void *arg)
{
	(void)arg;
	ftrt_sched_own_thread();
	uint64_t ms = 2;
	while (!__atomic_load_n(&ftrt_ending, __ATOMIC_ACQUIRE) && cpus && (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) == ev_pid) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000 };
		sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
		uint64_t used = fullest();
		if (used > ring_size / 8 && !ftrt_trace_fork_pending())
			ftrt_sched_drain(0);
		/* ms for a quarter of a ring at the rate of the last ms */
		ms = used ? ring_size / 4 * ms / used : 20;
		ms = ms < 2 ? 2 : ms > 20 ? 20 : ms;
	}
	return 0;
}

#define READER_STACK (64 * 1024)

/*
 * Start the reader: a bare thread of the process (clone with the
 * thread's flags, a stack of its own mapped here, above a guard page),
 * not a pthread. Its start may come from a signal handler (a thread's
 * first traced call), which may have interrupted pthread_create or
 * malloc on this thread: pthread_create there would wait forever for
 * the locks they hold; clone and mmap take none. Every signal is held
 * back in it from its first instruction (the mask it inherits): the
 * program's signals go to the program's threads. It shares the thread
 * pointer of the thread that made it and never reads through it
 * (reader_main). Its stack stays mapped while the process runs.
 */
static void reader_spawn(void)
{
	long m = sys(SYS_mmap, 0, READER_STACK + (long)pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (sys_failed(m))
		return;
	sys(SYS_mprotect, m, (long)pagesz, PROT_NONE, 0, 0, 0); /* the guard page */
	unsigned long all = ~0ul, old;
	if (sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, sizeof all, 0, 0) != 0) {
		sys(SYS_munmap, m, READER_STACK + (long)pagesz, 0, 0, 0, 0);
		return;
	}
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
	ftrt_in_runtime++; /* the C library's clone is the runtime's call, not the program's */
	int tid = clone(reader_main, (void *)(m + (long)pagesz + READER_STACK), flags, NULL);
	ftrt_in_runtime--;
	sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, sizeof old, 0, 0);
	if (tid < 0)
		sys(SYS_munmap, m, READER_STACK + (long)pagesz, 0, 0, 0, 0);
}

/* A thread other than the process's first made its buffer: the reader
 * thread, once. */
void ftrt_sched_reader(void)
{
	if (!cpus || reader || __atomic_exchange_n(&reader, 1, __ATOMIC_ACQ_REL))
		return;
	reader_spawn();
}

/* A snapshot into the directory dir (the flight recorder's): the
 * switches its ring holds, as "<pid>.sched". 0, or -errno. */
int ftrt_sched_snapshot(int dir)
{
	if (!cpus || (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != ev_pid)
		return 0;
	ftrt_sched_drain(0); /* what the kernel's rings hold, older than YOUNG_NS */
	int me = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0), err = -EBUSY;
	unsigned long mask;
	sys_sigs_hold(&mask);
	for (uint64_t deadline = mono_ns() + END_WAIT_NS;;) {
		int free = 0;
		if (atomic_compare_exchange_strong_explicit(&lock, &free, me, memory_order_acquire, memory_order_relaxed)) {
			err = ftrt_sched_out_snapshot(ev_pid, dir);
			atomic_store_explicit(&lock, 0, memory_order_release);
			break;
		}
		if (mono_ns() > deadline)
			break;
		ftrt_nap();
	}
	sys_sigs_release(&mask);
	return err;
}

/*
 * In a child after fork: the rings are not mapped here (VM_DONTCOPY), so
 * they are forgotten, not unmapped; the file and the counts are the
 * parent's. The child's own events are opened as at the start (its file
 * "<pid>.sched" in its own image, made at its first drain). Raw system
 * calls: a fork may be a signal handler's.
 */
void ftrt_sched_fork_child(void)
{
	atomic_store_explicit(&lock, 0, memory_order_relaxed);
	atomic_store_explicit(&nown, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_sched_switches, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_sched_lost, 0, memory_order_relaxed);
	reader = 0;
	ftrt_sched_out_fork();
	uint64_t pages = ring_size / (pagesz ? pagesz : 4096);
	int had = cpus;
	for (int c = 0; c < cpus; c++)
		ring[c] = NULL;
	cpus = 0;
	if (ftrt_sched_state == SCHED_STATE_ON && had && pages)
		open_events(ncpus, pages);
}
