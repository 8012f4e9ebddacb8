/*
 * The trace's opening: the directory made (dir.c), the clock chosen,
 * the end armed (at exit: lifetime.c's, given through ftrt_trace_arm; at
 * quick_exit: end.c), and, once the tracer's options are set, the fast
 * paths let run. Calls dir.c, thread.c, meta.c, end.c and the
 * architecture's clock.
 * How a trace is recorded: tracer.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch/fds.h"
#include "core/say.h"
#include "tracer.h"

/* How the end is armed at exit, and the fatal signals taken for the
 * flight recorder (ftrt_trace_arm). */
static void (*arm_exit)(void), (*arm_fatal)(void);

void ftrt_trace_arm(void (*at_exit)(void), void (*fatal)(void))
{
	arm_exit = at_exit;
	arm_fatal = fatal;
}

/* The trace directory: what its descriptor is open on, and its absolute
 * path, by which ftrt_trace_dir opens it again. Set at the start. */
static uint64_t dir_dev, dir_ino;
static char dir_path[PATH_MAX];

/* The directory's path: where /proc says its descriptor fd is open, else
 * (no /proc) path as given, from the working directory. */
static void remember_path(int fd, const char *path)
{
	char self[32] = "/proc/self/fd/";
	*ftrt_utoa(self + 14, (uint64_t)fd) = 0;
	long n = sys(SYS_readlinkat, AT_FDCWD, (long)self, (long)dir_path, sizeof dir_path - 1, 0, 0);
	if (n > 0 && dir_path[0] == '/') {
		dir_path[n] = 0;
		return;
	}
	dir_path[0] = 0;
	if (!path[0]) /* a forked child's image: no path but /proc's */
		return;
	if (path[0] == '/') {
		snprintf(dir_path, sizeof dir_path, "%s", path);
	} else if (getcwd(dir_path, sizeof dir_path)) {
		size_t k = strlen(dir_path);
		snprintf(dir_path + k, sizeof dir_path - k, "/%s", path);
	}
}

/*
 * A child forked without an exec is a process of the session: it gets
 * an image of its own (session.c), beside its parent's, with its own
 * metadata (pid, parent, how it ended), its counts from zero and its
 * start at the fork. The image is made when the child first needs its
 * directory (ftrt_trace_dir: its first stream, its metadata), not at the
 * fork: a child that execs having recorded nothing, as most do, leaves
 * no image but its new program's, and pays nothing for one.
 *
 * fork_image: FORK_NONE, FORK_PENDING (forked; the descriptor is still
 * the parent's image's), FORK_MAKING (a thread is making it: the others
 * wait a moment, or write into the parent's).
 */
enum { FORK_NONE, FORK_PENDING, FORK_MAKING };
static int fork_image;
static int parent_creator; /* the parent's image's writer, while pending */

static void make_fork_image(void);

int ftrt_trace_dir(void)
{
	if (__atomic_load_n(&fork_image, __ATOMIC_ACQUIRE) != FORK_NONE && (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0) == ftrt_trace_pid)
		make_fork_image();
	int fd = __atomic_load_n(&ftrt_trace_fd, __ATOMIC_ACQUIRE);
	if (fd < 0 || ftrt_fd_same(fd, dir_dev, dir_ino))
		return fd;
	/* The program closed it: the directory again, by its path, if that
	 * leads to the very one (its device and inode). */
	long n = dir_path[0] ? sys(SYS_openat, AT_FDCWD, (long)dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0, 0) : -ENOENT;
	n = ftrt_fd_lift(n);
	if (sys_failed(n))
		return -1;
	if (!ftrt_fd_same((int)n, dir_dev, dir_ino)) {
		sys(SYS_close, n, 0, 0, 0, 0, 0);
		return -1;
	}
	sys(SYS_flock, n, LOCK_EX | LOCK_NB, 0, 0, 0, 0); /* the trace's lock again (dir.c): the close let it go */
	if (!__atomic_compare_exchange_n(&ftrt_trace_fd, &fd, (int)n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		sys(SYS_close, n, 0, 0, 0, 0, 0); /* another thread opened it first */
		return ftrt_fd_same(fd, dir_dev, dir_ino) ? fd : -1;
	}
	return (int)n;
}

void ftrt_trace_path(char *buf, size_t size)
{
	int fd = ftrt_trace_dir();
	char self[32] = "/proc/self/fd/";
	long n = -1;
	if (fd >= 0) {
		*ftrt_utoa(self + 14, (uint64_t)fd) = 0;
		n = sys(SYS_readlinkat, AT_FDCWD, (long)self, (long)buf, (long)size - 1, 0, 0);
	}
	if (n > 0)
		buf[n] = 0;
	else
		snprintf(buf, size, "%s", fd >= 0 ? dir_path : "");
}

void ftrt_trace_zero_counts(void)
{
	atomic_store_explicit(&ftrt_dropped, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_overflow, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_unwound, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_stopped, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_lost_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_recorded_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_lost_threads, 0, memory_order_relaxed);
	atomic_store_explicit(&ftrt_overwritten, 0, memory_order_relaxed);
}

/* In a child after fork: the buffers made its own (thread.c), its counts
 * zeroed, its image pending. Raw system calls and no allocation: a fork
 * may be a signal handler's. */
static void fork_child(void)
{
	ftrt_after_fork_child();
	if (ftrt_trace_fd < 0)
		return;
	parent_creator = ftrt_creator_pid;
	ftrt_creator_pid = ftrt_trace_pid;
	ftrt_trace_zero_counts();
	ftrt_tsc_start = now();
	ftrt_mono_start = mono_ns();
	ftrt_sched_fork_child(); /* the child's own event: the parent's ring is not mapped here */
	__atomic_store_n(&fork_image, FORK_PENDING, __ATOMIC_RELEASE);
}

int ftrt_trace_fork_pending(void)
{
	return __atomic_load_n(&fork_image, __ATOMIC_ACQUIRE) == FORK_PENDING;
}

/* Make the forked child's image, once (see fork_image): its directory
 * the trace's from now on, with its room for the final metadata and its
 * first metadata. Where it cannot be made (no space, no permission), the
 * child's streams go into its parent's image as they did before images
 * (its metadata nowhere: the parent's is the parent's). */
static void make_fork_image(void)
{
	int want = FORK_PENDING;
	if (!__atomic_compare_exchange_n(&fork_image, &want, FORK_MAKING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Another thread makes it: a moment for it (not this thread's
		 * own signal handler's: that would wait for nothing). */
		for (int i = 0; i < 1000 && __atomic_load_n(&fork_image, __ATOMIC_ACQUIRE) == FORK_MAKING; i++)
			ftrt_nap();
		return;
	}
	struct ftrt_fd d;
	if (ftrt_fd_keep(&d, ftrt_session_image(1)) != 0) {
		ftrt_creator_pid = parent_creator;
		__atomic_store_n(&fork_image, FORK_NONE, __ATOMIC_RELEASE);
		return;
	}
	int old = __atomic_load_n(&ftrt_trace_fd, __ATOMIC_ACQUIRE);
	dir_dev = d.dev;
	dir_ino = d.ino;
	remember_path(d.fd, "");
	__atomic_store_n(&ftrt_trace_fd, d.fd, __ATOMIC_RELEASE);
	if (old >= 0 && old != d.fd)
		sys(SYS_close, old, 0, 0, 0, 0, 0); /* this process's copy of the parent's: the parent's stays open */
	__atomic_store_n(&fork_image, FORK_NONE, __ATOMIC_RELEASE);
	ftrt_meta_reserve();
	int mods = ftrt_modules_hold();
	ftrt_meta_write(0, now(), mono_ns(), "meta.fork.tmp", 0);
	if (mods)
		ftrt_modules_release();
}

/*
 * Open the trace: make its directory (dir.c; recorded: dir is the
 * binary's recorded location, re-checked there), and set up the end.
 * The directory's first metadata is written when the pass that opened
 * it is done (ftrt_trace_meta_update). -1 with *why set when the
 * directory cannot be made.
 */
/* FTRACE_BUFFER=ring:SIZE asked for more than a ring holds (asked
 * bytes): said in one line. */
static void ring_capped(uint64_t asked)
{
	static const char pre[] = "ftrt: FTRACE_BUFFER asks for a ring of ",
			  post[] = " bytes a thread, more than one holds: each thread keeps its last " RING_MAX_TEXT " of records\n";
	char num[20], line[sizeof pre + sizeof num + sizeof post];
	int d = sizeof num;
	do
		num[--d] = (char)('0' + asked % 10);
	while ((asked /= 10) != 0);
	size_t n = sizeof num - (size_t)d;
	memcpy(line, pre, sizeof pre - 1);
	memcpy(line + sizeof pre - 1, num + d, n);
	memcpy(line + sizeof pre - 1 + n, post, sizeof post - 1);
	sys(SYS_write, 2, (long)line, (long)(sizeof pre - 1 + n + sizeof post - 1), 0, 0, 0);
}

int ftrt_trace_start(const char *dir, int recorded, const char **why)
{
	ftrt_dir_set_mode(ftrt_env(ENV_MODE));
	struct ftrt_fd d;
	if (ftrt_fd_keep(&d, ftrt_session_open(dir, recorded, why)) != 0)
		return -1;
	if (ftrt_thread_start() != 0) {
		*why = "cannot be written: no thread key left for the thread's exit";
		ftrt_fd_close(&d);
		return -1;
	}
	dir_dev = d.dev;
	dir_ino = d.ino;
	remember_path(d.fd, dir);
	ftrt_trace_fd = d.fd;
	ftrt_meta_reserve();
	/* Registered once in the process's life: a second trace (ftpatch
	 * record -p again, after end.c's ftrt_trace_again) has them. */
	static int armed;
	if (!armed)
		pthread_atfork(NULL, NULL, fork_child);
	const char *buf = ftrt_env(ENV_BUFFER);
	uint64_t asked = 0;
	uint32_t slots = buf && strncmp(buf, BUFFER_RING ":", sizeof BUFFER_RING) == 0 ? ftrt_ring_parse(buf + sizeof BUFFER_RING, &asked) : 0;
	if (slots) {
		ftrt_ring_slots = slots;
		ftrt_ring_asked = asked;
		if (asked > ftrt_ring_bytes())
			ring_capped(asked);
		static int fatal_armed;
		if (arm_fatal && !fatal_armed)
			arm_fatal(); /* the rings written out when the program dies of a fault */
		fatal_armed = 1;
	} else if (buf && strcmp(buf, BUFFER_WRITER) == 0) {
		ftrt_writer = 1; /* started when the program's initialisers begin (lifetime.c) */
	} else if (buf && *buf && strcmp(buf, BUFFER_STREAM) != 0) {
		ftrt_say("ftrt: FTRACE_BUFFER: want stream, writer (full buffers written by a thread of the "
			 "runtime's), or ring:SIZE (the flight recorder: ring:64m keeps each thread's last 64 MiB of "
			 "records); writing every record\n");
	}
	const char *clk = ftrt_env(ENV_CLOCK);
	ftrt_clock_mono = (clk && strcmp(clk, META_CLOCK_MONO) == 0) || !ftrt_tsc_trusted();
	ftrt_creator_pid = ftrt_trace_pid = getpid();
	ftrt_tsc_start = now();
	ftrt_mono_start = mono_ns();
	ftrt_sched_start(); /* FTRACE_SCHED=1: the threads' context switches (sched.c) */
	if (!armed) {
		if (arm_exit)
			arm_exit();
		at_quick_exit(ftrt_trace_end);
	}
	armed = 1;
	/* A second trace: its threads record again (ftrt_trace_again left the
	 * end's flag up until the trace was open to write into). */
	__atomic_store_n(&ftrt_end_detached, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ftrt_ending, 0, __ATOMIC_RELEASE);
	return 0;
}

/* Also after a change of tracer, and at a resume (live.c): the flags are
 * written, then paused read, so a pause racing this one never finds them
 * left on (see ftrt_live_pause). */
void ftrt_trace_go(void)
{
	int mode = __atomic_load_n(&ftrt_mode, __ATOMIC_RELAXED);
	if (mode == FTRT_GRAPH)
		ftrt_graph_used = 1;
	__atomic_store_n(&ftrt_fast_function, mode == FTRT_FUNCTION && !ftrt_clock_mono, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ftrt_fast_graph, mode == FTRT_GRAPH && !ftrt_clock_mono && !ftrt_thresh_tsc && !ftrt_graph_slow,
			 __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ftrt_paused, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&ftrt_fast_function, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&ftrt_fast_graph, 0, __ATOMIC_SEQ_CST);
	}
}

/*
 * After ftpatch record -p ended the trace (patch/live.c's ftrt_live_end,
 * once ftrt_trace_end has written everything): the trace's descriptors
 * closed, so that the process holds none it did not hold before the
 * attach. Each thread's stream (b->fd FD_LOST then: no flush writes, no
 * thread exit closes it again), the process's directory and the
 * session's, whose locks go with them (the trace is finished: dir.c). Each only while it is still the
 * runtime's (its device and inode): a number the program closed and
 * reused is left alone. The list of buffers taken as the end takes it;
 * one not had by the deadline leaves the streams open.
 */
void ftrt_trace_close(void)
{
	int held = ftrt_bufs_take((int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0), mono_ns() + END_WAIT_NS);
	for (struct tbuf *b = held ? ftrt_bufs : NULL; b; b = b->next) {
		int fd = __atomic_exchange_n(&b->fd, FD_LOST, __ATOMIC_ACQ_REL);
		if (fd >= 0)
			ftrt_stream_close(b, fd);
	}
	if (held == 1)
		ftrt_bufs_unlock();
	int fd = __atomic_exchange_n(&ftrt_trace_fd, -1, __ATOMIC_ACQ_REL);
	if (fd >= 0 && ftrt_fd_same(fd, dir_dev, dir_ino))
		sys(SYS_close, fd, 0, 0, 0, 0, 0);
	ftrt_session_close();
}
