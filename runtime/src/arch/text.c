/*
 * Writing code that other threads may be running, and making them see
 * it (live.h): the live API's writer. Never from a signal handler; the
 * caller holds the live lock (live.c).
 *
 * The code is written through /proc/self/mem, as a debugger writes a
 * breakpoint: the kernel writes the page through a mapping of its own
 * (breaking copy-on-write as a write fault would), so the program's
 * mapping of its code stays read-only and executable throughout, never
 * writable, and no thread faults on a page made writable under it. One
 * write costs a system call (about 4 us on a VM), so the writes of a
 * batch are queued and written a span at a time: each run of writes
 * closer than SPAN_GAP goes in one write of the run's bytes as they are
 * now with the queued ones in place (only the live lock's holder writes
 * code, so the bytes between are stable; writing a byte with the value
 * it holds changes no instruction).
 *
 * The descriptor is the process's own: /proc/self/mem opened by a forked
 * child's parent writes the parent's memory, so a child opens its own
 * (by pid). So is the membarrier registration, which is per memory map.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fds.h"
#include "poke.h"
#include "sys.h"

#define SPAN_GAP 4096          /* writes closer than this share one write */
#define SPAN_MAX (1u << 20)    /* the most one write covers: the scratch buffer */

static struct ftrt_fd mem = FTRT_FD_NONE; /* /proc/self/mem, of process mem_pid (fds.h) */
static int mem_pid;
static int sync_cmd, sync_pid;    /* the membarrier command that syncs every core, of sync_pid */
static const char *why = "";

struct qwrite {
	uintptr_t addr;
	unsigned char len;
	unsigned char bytes[8];
};
static struct qwrite *queue;      /* the queued writes, in address order */
static size_t nqueue, capqueue;
static unsigned char *scratch;    /* SPAN_MAX bytes: a span with its writes in place */

const char *ftrt_text_why(void)
{
	return why;
}

/* /proc/self/mem opened for pid (a forked child's own) and checked to be
 * still the runtime's: 0, or -errno. */
static int mem_open(int pid)
{
	/* Opened again in a forked child (the parent's writes the parent),
	 * and when the program closed it: a number that is not the runtime's
	 * any more is never written through, nor closed. */
	if (mem_pid == pid && ftrt_fd_ours(&mem))
		return 0;
	ftrt_fd_close(&mem);
	int err = ftrt_fd_keep(&mem, sys(SYS_openat, AT_FDCWD, (long)"/proc/self/mem", O_RDWR | O_CLOEXEC, 0, 0, 0));
	if (err) {
		why = "/proc/self/mem cannot be opened for writing (no /proc, or a security module refuses it)";
		return err;
	}
	mem_pid = pid;
	return 0;
}

void ftrt_text_close(void)
{
	ftrt_fd_close(&mem);
	mem_pid = 0;
}

int ftrt_text_open(void)
{
	int pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (sync_pid != pid) {
		/* Core-serialising where the kernel has it (4.16); x86-64's
		 * plain expedited membarrier serialises too: the interrupt it
		 * sends returns to user mode through iret. */
		if (sys(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0, 0, 0, 0) == 0)
			sync_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE;
#if defined(__x86_64__)
		else if (sys(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0, 0, 0, 0) == 0)
			sync_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
#endif
		else {
			why = "the kernel has no core-serialising membarrier (Linux 4.16), or a seccomp filter refuses it";
			return -ENOSYS;
		}
		sync_pid = pid;
	}
	int err = mem_open(pid);
	if (err)
		return err;
	if (!scratch) {
		long m = sys(SYS_mmap, 0, SPAN_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (sys_failed(m)) {
			why = "no memory for the writer's buffer";
			return (int)m;
		}
		scratch = (unsigned char *)m;
	}
	return 0;
}

int ftrt_text_open_data(void)
{
	return mem_open((int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0));
}

void ftrt_text_sync(void)
{
	sys(SYS_membarrier, sync_cmd, 0, 0, 0, 0, 0);
}

int ftrt_text_queue(uintptr_t addr, const void *bytes, size_t len)
{
	if (len == 0 || len > 8)
		return -EINVAL;
	if (nqueue == capqueue) {
		size_t cap = capqueue ? 2 * capqueue : 1024;
		long m = sys(SYS_mmap, 0, (long)(cap * sizeof *queue), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (sys_failed(m))
			return (int)m;
		if (queue) {
			memcpy((void *)m, queue, nqueue * sizeof *queue);
			sys(SYS_munmap, (long)queue, (long)(capqueue * sizeof *queue), 0, 0, 0, 0);
		}
		queue = (struct qwrite *)m;
		capqueue = cap;
	}
	struct qwrite *q = &queue[nqueue++];
	q->addr = addr;
	q->len = (unsigned char)len;
	memcpy(q->bytes, bytes, len);
	return 0;
}

/* Write [lo, hi) from scratch, which holds it. */
static int put(uintptr_t lo, uintptr_t hi)
{
	if (ftrt_text_open() != 0)
		return -EBADF; /* closed by the program, and not to be opened again */
	if (ftrt_put(mem.fd, scratch, hi - lo, lo) == hi - lo)
		return 0;
	why = "/proc/self/mem refuses writes to code (a kernel booted with proc_mem.force_override=never?)";
	return -EPERM;
}

int ftrt_text_flush(void)
{
	int err = 0;
	size_t i = 0;
	while (i < nqueue && !err) {
		/* The run from queue[i]: while the next write is close and the
		 * span stays within the buffer. */
		uintptr_t lo = queue[i].addr, hi = lo + queue[i].len;
		size_t j = i + 1;
		while (j < nqueue && queue[j].addr >= hi && queue[j].addr - hi < SPAN_GAP &&
		       queue[j].addr + queue[j].len - lo <= SPAN_MAX) {
			hi = queue[j].addr + queue[j].len;
			j++;
		}
		memcpy(scratch, (const void *)lo, hi - lo);
		for (size_t k = i; k < j; k++)
			memcpy(scratch + (queue[k].addr - lo), queue[k].bytes, queue[k].len);
		err = put(lo, hi);
		i = j;
	}
	nqueue = 0;
	return err;
}

int ftrt_text_write(uintptr_t addr, const void *buf, size_t len)
{
	if (ftrt_text_open() != 0)
		return -EBADF;
	return ftrt_text_write_opened(addr, buf, len);
}

int ftrt_text_write_opened(uintptr_t addr, const void *buf, size_t len)
{
	if (ftrt_put(mem.fd, buf, len, addr) == len)
		return 0;
	why = "/proc/self/mem refuses writes (a kernel booted with proc_mem.force_override=never?)";
	return -EPERM;
}

int ftrt_text_put_new(const struct ftrt_poke *p, size_t n)
{
	int err = 0;
	for (size_t i = 0; i < n && !err; i++)
		err = ftrt_text_queue(p[i].ip, p[i].new, p[i].len);
	int flushed = ftrt_text_flush();
	return err ? err : flushed;
}
