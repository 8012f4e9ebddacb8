/*
 * Scheduler events (FTRACE_SCHED=1): when each traced thread left its
 * CPU, why, and when it ran again, from the kernel's context-switch
 * records (perf_event_open, user-space only), written beside the
 * threads' streams as "<pid>.sched" (abi.h's SCHED_*), in the trace's
 * clock.
 *
 * One event for the whole process, inherited by its threads:
 *
 *   A  perf_event_open(self, any CPU): a dummy software event that
 *      records nothing but PERF_RECORD_SWITCH (context_switch), each
 *      with the thread's pid and tid and the time (sample_id_all,
 *      PERF_SAMPLE_TID | PERF_SAMPLE_TIME) on the clock chosen
 *      (use_clockid); inherit + inherit_thread: every thread made from
 *      here on gets a copy (a process forked does not); remove_on_exec:
 *      an exec drops them. The kernel refuses to map the ring of an
 *      inherited event, so
 *   B  the same event on the calling thread alone, not inherited, with
 *      no switch records of its own, owns the ring: 1 + 2^n pages mapped
 *      shared (the control page, then the data);
 *
 * then ioctl(A, PERF_EVENT_IOC_SET_OUTPUT, B): A and each thread's copy
 * of it write into B's ring. B's descriptor is closed (the mapping keeps
 * the ring); A's is kept (closing it would free the copies), above the
 * program's range (fds.h), and known by its PERF_EVENT_IOC_ID, checked
 * at each read: a program that closed it stops the events, and the
 * metadata says so. A thread's start costs 7.5 us more for its copy
 * (against 25 us to open and map an event per thread).
 *
 * The ring is read (drained) into the file, never on the traced calls'
 * path: by a reader thread of the runtime's (spawned when the process
 * first has a second thread with a buffer: a single-threaded program
 * stays single-threaded), which looks at the ring now and then; when any
 * thread writes out a full buffer and the ring is a quarter full; before
 * an exec; and at the trace's end. One drain at a time (a lock held with
 * signals held back, as writer.c's); the end waits for it (a deadline),
 * the others go on without.
 *
 * The clock: the kernel stamps each record with CLOCK_MONOTONIC (a trace
 * on the mono clock: its own clock) or CLOCK_MONOTONIC_RAW (a trace on
 * the cycle counter). RAW is the counter scaled by a constant where the
 * counter is the kernel's clocksource, so a RAW time converts to the
 * counter exactly by interpolation between two (counter, RAW) pairs:
 * one taken when the event opened, one at each drain, after the ring's
 * head is read (every record drained lies between them). The error is
 * the pairs' own (tens of ns).
 *
 * A forked child gets no copy of the ring (perf maps it VM_DONTCOPY):
 * it forgets the parent's without unmapping it and opens its own. Calls
 * stream.c (the file's writes), dir.c, the clock and raw system calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "arch/fds.h"
#include "tracer.h"

#define PAGES_MAX 32 /* data pages asked for first: 128 KiB, 5,400 switches */
#define PAGES_MIN 4  /* the fewest taken: halved down to this under perf_event_mlock_kb */
#define REC_MIN 24   /* the smallest record read: a SWITCH, header and sample_id */
#define OWN_MAX 8    /* the runtime's own threads (ftrt_spawn's) */

/* What the metadata says (tracer.h): SCHED_STATE_*, and why. */
int ftrt_sched_state;
char ftrt_sched_why[256];
_Atomic uint64_t ftrt_sched_switches, ftrt_sched_lost;

static int ev = -1;       /* A's descriptor, lifted; -1: none (off, refused, stopped) */
static uint64_t ev_id;    /* A's PERF_EVENT_IOC_ID, to know it again */
static int ev_pid;        /* the process it was opened in */
static struct perf_event_mmap_page *ring; /* B's control page; the data follows */
static uint64_t ring_size; /* data bytes: a power of two */
static uint64_t pagesz;
static uint64_t *scratch; /* one drain's events: 2 words each (key, word), then as many out */
static uint64_t scratch_events;
static uint64_t c0, r0;   /* the (counter, RAW) pair taken when the event opened */
static struct ftrt_fd file = { .fd = -1 }; /* "<pid>.sched", once made */
static uint64_t file_off;   /* where the next chunk goes */
static int file_failed;     /* it could not be made or written: no more */
static _Atomic int lock;    /* the draining thread's tid, 0: none */
static int reader;          /* the reader thread was spawned (or tried) */
static _Atomic int own[OWN_MAX]; /* the runtime's threads' tids: their switches are not the program's */
static _Atomic int nown;

/* why += s, within its size. */
static void why_add(const char *s)
{
	size_t n = strlen(ftrt_sched_why), k = strlen(s);
	if (k > sizeof ftrt_sched_why - 1 - n)
		k = sizeof ftrt_sched_why - 1 - n;
	memcpy(ftrt_sched_why + n, s, k);
	ftrt_sched_why[n + k] = 0;
}

static void why_num(uint64_t v)
{
	char num[24];
	*ftrt_utoa(num, v) = 0;
	why_add(num);
}

/* An errno's name, for sched_why. */
static const char *err_name(long err)
{
	static const struct {
		int e;
		const char *name;
	} names[] = { { EACCES, "EACCES" }, { EPERM, "EPERM" },   { ENOSYS, "ENOSYS" }, { EINVAL, "EINVAL" },
		      { ENOENT, "ENOENT" }, { ENODEV, "ENODEV" }, { EMFILE, "EMFILE" }, { ENFILE, "ENFILE" },
		      { ENOMEM, "ENOMEM" }, { E2BIG, "E2BIG" },   { EOPNOTSUPP, "EOPNOTSUPP" }, { EBUSY, "EBUSY" },
		      { EBADF, "EBADF" },   { ENOTTY, "ENOTTY" }, { EFAULT, "EFAULT" } };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].e == err)
			return names[i].name;
	return NULL;
}

/* /proc/sys/kernel/perf_event_paranoid, -99 when it cannot be read. */
static int paranoid(void)
{
	char buf[16];
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (sys_failed(fd))
		return -99;
	long n = sys(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	int v = 0, neg = 0, i = 0;
	if (n > 0 && buf[0] == '-')
		neg = i = 1;
	if (n <= i || buf[i] < '0' || buf[i] > '9')
		return -99;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + buf[i] - '0';
	return neg ? -v : v;
}

/* The kernel refused call with -err: no events; why says what, and what
 * to change. Raw calls only (a forked child's handler may get here). */
static void refuse(const char *call, long err)
{
	ftrt_sched_state = SCHED_STATE_REFUSED;
	ftrt_sched_why[0] = 0;
	why_add(call);
	why_add(": ");
	const char *name = err_name(-err);
	if (name) {
		why_add(name);
	} else {
		why_add("errno ");
		why_num((uint64_t)-err);
	}
	if (err == -EACCES || err == -EPERM) {
		int p = paranoid();
		if (p == -99) {
			why_add(" (a seccomp filter, an LSM or a container refused it)");
		} else if (p > 2) {
			why_add(" (/proc/sys/kernel/perf_event_paranoid is ");
			why_num((uint64_t)p);
			why_add(": above 2 forbids it; 2 lets a process watch itself)");
		} else {
			why_add(" (/proc/sys/kernel/perf_event_paranoid is ");
			if (p < 0) {
				why_add("-");
				p = -p;
			}
			why_num((uint64_t)p);
			why_add(", which allows it: a seccomp filter, an LSM or a container refused it)");
		}
	} else if (err == -ENOSYS) {
		why_add(" (the kernel, or an emulator such as qemu-user, has no perf events)");
	} else if (err == -EINVAL) {
		why_add(" (a kernel older than 5.13: no inherit_thread or remove_on_exec)");
	} else if (err == -ENOMEM && strcmp(call, "mmap") == 0) {
		why_add(" (the user's perf_event_mlock_kb and RLIMIT_MEMLOCK are used up)");
	} else if (err == -EMFILE || err == -ENFILE) {
		why_add(" (no descriptor left)");
	}
}

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

/*
 * Open A and B, map B's ring (data pages: pages, halved on EPERM or
 * ENOMEM, the per-user perf_event_mlock_kb and RLIMIT_MEMLOCK, down to
 * PAGES_MIN), send A's records into it. On failure: refused, why set,
 * nothing left open. Raw calls only: a forked child's handler runs it.
 */
static void open_event(uint64_t pages)
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
	long fa = sys(SYS_perf_event_open, (long)&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC, 0);
	if (sys_failed(fa)) {
		refuse("perf_event_open", fa);
		return;
	}
	a.inherit = a.inherit_thread = a.context_switch = 0;
	long fb = sys(SYS_perf_event_open, (long)&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC, 0);
	long m = fb, r = 0;
	const char *call = "perf_event_open";
	for (; !sys_failed(fb) && pages >= PAGES_MIN; pages /= 2) {
		call = "mmap";
		m = sys(SYS_mmap, 0, (long)((pages + 1) * pagesz), PROT_READ | PROT_WRITE, MAP_SHARED, fb, 0);
		if (!sys_failed(m) || (m != -EPERM && m != -ENOMEM))
			break;
	}
	if (!sys_failed(m)) {
		call = "ioctl(PERF_EVENT_IOC_SET_OUTPUT)";
		r = sys(SYS_ioctl, fa, PERF_EVENT_IOC_SET_OUTPUT, fb, 0, 0, 0);
		if (r == 0) {
			call = "ioctl(PERF_EVENT_IOC_ID)";
			r = sys(SYS_ioctl, fa, PERF_EVENT_IOC_ID, (long)&ev_id, 0, 0, 0);
		}
		if (r != 0)
			sys(SYS_munmap, m, (long)((pages + 1) * pagesz), 0, 0, 0, 0);
	}
	if (!sys_failed(fb))
		sys(SYS_close, fb, 0, 0, 0, 0, 0); /* the mapping holds B */
	if (sys_failed(m) || r != 0) {
		sys(SYS_close, fa, 0, 0, 0, 0, 0);
		refuse(call, sys_failed(m) ? m : r);
		return;
	}
	ring = (struct perf_event_mmap_page *)m;
	ring_size = pages * pagesz;
	ev = (int)ftrt_fd_lift(fa);
	ev_pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	ftrt_sched_state = SCHED_STATE_ON;
	ftrt_sched_why[0] = 0;
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
	/* The drains' scratch area, mapped once and sized for the largest
	 * ring: (key, word) for each event the ring can hold, then as many
	 * words out (a chunk's header and an event's word each). Pages
	 * untouched are never made. */
	scratch_events = PAGES_MAX * pagesz / REC_MIN + 1;
	long m = sys(SYS_mmap, 0, (long)(scratch_events * 32), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sys_failed(m)) {
		refuse("mmap", m);
		return;
	}
	scratch = (uint64_t *)m;
	open_event(PAGES_MAX);
}

/* The calling thread is one of the runtime's (ftrt_spawn's): its
 * switches are left out. */
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

/* Stop the events for good, with why. The descriptor's number is the
 * program's now: never closed. What the ring holds is still read. */
static void stop(const char *what)
{
	ftrt_sched_why[0] = 0;
	why_add(what);
	ev = -1;
}

/* n bytes of the ring's data at offset off (of the stream of bytes)
 * into out: a record may wrap the ring's end. */
static void ring_copy(void *out, uint64_t off, size_t n)
{
	const char *data = (const char *)ring + pagesz;
	uint64_t at = off & (ring_size - 1), first = ring_size - at < n ? ring_size - at : n;
	memcpy(out, data + at, first);
	memcpy((char *)out + first, data, n - first);
}

/* Heap sort of n (key, word) pairs by key. Keys are tid << 32 | the
 * event's place in the ring, all different: one thread's events stay in
 * time order. */
static void sift(uint64_t *p, uint64_t i, uint64_t n)
{
	for (;;) {
		uint64_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && p[2 * (c + 1)] > p[2 * c])
			c++;
		if (p[2 * i] >= p[2 * c])
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

/* The file's descriptor, checked (fds.h), made at the first drain with
 * events (its header first), opened again by its name if the program
 * closed it; -1 when none can be. */
static int file_fd(void)
{
	if (file_failed)
		return -1;
	if (file.fd >= 0 && ftrt_fd_ours(&file))
		return file.fd;
	char name[32];
	char *p = ftrt_utoa(name, (uint64_t)ev_pid);
	memcpy(p, SCHED_SUFFIX, sizeof SCHED_SUFFIX);
	int dir = ftrt_trace_dir();
	if (dir < 0) {
		file_failed = 1;
		return -1;
	}
	if (file.fd >= 0) { /* the program closed ours: the very file again */
		struct ftrt_fd k;
		if (ftrt_fd_keep(&k, sys(SYS_openat, dir, (long)name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0)) == 0 && k.dev == file.dev &&
		    k.ino == file.ino) {
			file = k;
			return file.fd;
		}
		if (k.fd >= 0)
			ftrt_fd_close(&k);
		file_failed = 1;
		return -1;
	}
	unsigned char hdr[SCHED_HEADER] = SCHED_MAGIC;
	uint32_t ids[2] = { (uint32_t)ev_pid, 0 };
	memcpy(hdr + 8, ids, 8);
	if (ftrt_fsize_room(0) < SCHED_HEADER || ftrt_fd_keep(&file, ftrt_file_create(dir, name)) != 0 ||
	    ftrt_put(file.fd, hdr, SCHED_HEADER, 0) != SCHED_HEADER) {
		if (file.fd >= 0) {
			sys(SYS_unlinkat, dir, (long)name, 0, 0, 0, 0); /* not a .sched file: no reader must find it */
			ftrt_fd_close(&file);
		}
		file_failed = 1;
		return -1;
	}
	file_off = SCHED_HEADER;
	return file.fd;
}

/*
 * Read the ring from data_tail to data_head into the file, with the lock
 * held and signals held back. Each thread's events of this read make one
 * chunk (abi.h), the threads in the order of their ids.
 */
static void drain_locked(void)
{
	uint64_t id = 0;
	if (ev >= 0 && (sys(SYS_ioctl, ev, PERF_EVENT_IOC_ID, (long)&id, 0, 0, 0) != 0 || id != ev_id))
		stop("the program closed the perf event's descriptor: no scheduler events after that");
	uint64_t head = __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE), tail = ring->data_tail;
	if (head == tail)
		return;
	uint64_t c1, r1;
	clock_pair(&c1, &r1); /* after head: every record read is older */
	uint64_t n = 0, outs = 0, lost = 0, *pairs = scratch;
	while (tail < head) {
		struct perf_event_header h;
		ring_copy(&h, tail, sizeof h);
		if (h.size < sizeof h || h.size > head - tail)
			break; /* never written so: the rest is not read */
		uint64_t rec[6];
		size_t k = h.size < sizeof rec ? h.size : sizeof rec;
		ring_copy(rec, tail, k);
		if (h.type == PERF_RECORD_SWITCH && h.size >= REC_MIN) {
			/* header, then sample_id: pid, tid (u32 each), time */
			int pid = (int)(uint32_t)rec[1], tid = (int)(uint32_t)(rec[1] >> 32);
			unsigned kind = !(h.misc & PERF_RECORD_MISC_SWITCH_OUT)			? SCHED_IN
					: (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? SCHED_PREEMPT
											 : SCHED_SLEEP;
			if (pid == ev_pid && !owned(tid)) {
				if (n < scratch_events) {
					pairs[2 * n] = (uint64_t)(uint32_t)tid << 32 | (n & 0xffffffff);
					pairs[2 * n + 1] = trace_time(rec[2], c1, r1) << SCHED_KIND_BITS | kind;
					n++;
					outs += kind != SCHED_IN;
				} else {
					lost++;
				}
			}
		} else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
			lost += rec[2]; /* header, id, lost */
		}
		tail += h.size;
	}
	/* One chunk per thread: tid | count << 32, then its events. */
	sort_pairs(pairs, n);
	uint64_t *out = scratch + 2 * scratch_events, w = 0;
	for (uint64_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && pairs[2 * j] >> 32 == pairs[2 * i] >> 32; j++)
			;
		out[w++] = (pairs[2 * i] >> 32) | (j - i) << 32;
		for (uint64_t x = i; x < j; x++)
			out[w++] = pairs[2 * x + 1];
	}
	if (w) {
		int fd = file_fd();
		if (fd >= 0 && ftrt_fsize_room(file_off) >= w * 8 && ftrt_put(fd, out, w * 8, file_off) == w * 8) {
			file_off += w * 8;
			atomic_fetch_add_explicit(&ftrt_sched_switches, outs, memory_order_relaxed);
		} else {
			lost += n;
			file_failed = 1; /* the file ends with whole chunks */
		}
	}
	if (lost)
		atomic_fetch_add_explicit(&ftrt_sched_lost, lost, memory_order_relaxed);
	__atomic_store_n(&ring->data_tail, head, __ATOMIC_RELEASE); /* the kernel may write there again */
}

/*
 * Drain the ring now: until deadline (CLOCK_MONOTONIC ns) for the lock,
 * or not at all when another thread holds it (deadline 0). Nothing in a
 * process that is not the event's (a child before its handler ran), nor
 * when this thread holds the lock already (a fatal signal's end that
 * interrupted a drain: the ring is as that left it). Async-signal-safe.
 */
void ftrt_sched_drain(uint64_t deadline)
{
	if (!ring || (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != ev_pid)
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
	drain_locked();
	atomic_store_explicit(&lock, 0, memory_order_release);
	sys_sigs_release(&mask);
}

/* A thread wrote out a full buffer: a drain if the ring is a quarter
 * full (a read of the ring's head: no system call otherwise). */
void ftrt_sched_check(void)
{
	struct perf_event_mmap_page *r = ring;
	if (r && (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) == ev_pid &&
	    __atomic_load_n(&r->data_head, __ATOMIC_ACQUIRE) - r->data_tail > ring_size / 4)
		ftrt_sched_drain(0);
}

/*
 * The reader thread: looks at the ring's head every interval and drains
 * it when an eighth is full; the interval halves (to 5 ms) when it found
 * that much, doubles (to 500 ms) when it found less than 1/64. Not a
 * poll of A: the kernel wakes A's pollers (and every event on its ring)
 * at each inheriting thread's exit, which in a program that makes
 * threads by the thousand cost more than the reading (+7% of the run).
 */
static void *reader_main(void *arg)
{
	(void)arg;
	ftrt_sched_own_thread();
	uint64_t ms = 50;
	while (!__atomic_load_n(&ftrt_ending, __ATOMIC_ACQUIRE) && ev >= 0 && (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) == ev_pid) {
		struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };
		sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
		uint64_t used = __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE) - ring->data_tail;
		if (used > ring_size / 8) {
			ftrt_sched_drain(0);
			ms = ms > 10 ? ms / 2 : 5;
		} else if (used < ring_size / 64) {
			ms = ms < 250 ? ms * 2 : 500;
		}
	}
	return NULL;
}

/* A thread other than the process's first made its buffer: the reader
 * thread, once. */
void ftrt_sched_reader(void)
{
	if (!ring || reader || __atomic_exchange_n(&reader, 1, __ATOMIC_ACQ_REL))
		return;
	ftrt_in_runtime++; /* its C library calls are the runtime's */
	ftrt_spawn(reader_main);
	ftrt_in_runtime--;
}

/*
 * In a child after fork: the ring is not mapped here (VM_DONTCOPY), so
 * it is forgotten, not unmapped; the file, the descriptor and the counts
 * are the parent's. The child's own event is opened as at the start
 * (its file "<pid>.sched" in its own image, made at its first drain).
 * Raw system calls: a fork may be a signal handler's.
 */
void ftrt_sched_fork_child(void)
{
	atomic_store_explicit(&lock, 0, memory_order_relaxed);
	atomic_store_explicit(&nown, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_sched_switches, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_sched_lost, 0, memory_order_relaxed);
	reader = 0;
	if (file.fd >= 0)
		ftrt_fd_close(&file); /* this process's copy: the parent's stays open */
	file = FTRT_FD_NONE;
	file_off = 0;
	file_failed = 0;
	uint64_t pages = ring_size / (pagesz ? pagesz : 4096), id = 0;
	ring = NULL;
	if (ev >= 0 && sys(SYS_ioctl, ev, PERF_EVENT_IOC_ID, (long)&id, 0, 0, 0) == 0 && id == ev_id)
		sys(SYS_close, ev, 0, 0, 0, 0, 0);
	ev = -1;
	if (ftrt_sched_state == SCHED_STATE_ON && pages)
		open_event(pages);
}
