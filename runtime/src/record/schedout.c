/*
 * Where the scheduler events sched.c drains go: the process's file,
 * "<pid>.sched" in its trace directory (abi.h's format), made at the
 * first drain with events; or, in the flight recorder
 * (FTRACE_BUFFER=ring:SIZE), a ring in memory, as the threads' records
 * go to theirs, which the trace's end writes as the file and a snapshot
 * (snapshot.c) into its directory: a snapshot shows the last switches
 * with the last calls.
 *
 * The ring holds whole chunks (abi.h: a word tid | count << 32, then
 * count events), oldest first: words[start % size, end % size), start
 * and end counting words ever put. A chunk with no room drops the
 * oldest ones; one larger than the ring keeps its last events. A reader
 * pairs a thread's departures with its returns, so a return whose
 * departure was dropped is left out there. Called with sched.c's lock
 * held (signals held back): raw system calls, nothing of the C library
 * (the reader thread calls it: sched.c), async-signal-safe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "arch/fds.h"
#include "sched.h"
#include "tracer.h"

#define RING_MIN (64u * 1024)          /* bytes: 8,000 switches */
#define RING_MAX (64ull * 1024 * 1024) /* bytes */

static struct ftrt_fd file = { .fd = -1 }; /* "<pid>.sched", once made */
static uint64_t file_off; /* where the next chunk goes */
static int file_failed;   /* it could not be made or written: no more */

static uint64_t *words; /* the flight recorder's ring; NULL: the file */
static uint64_t size;   /* its words */
static uint64_t start, end;

/* The name "<pid>.sched" into name (32 bytes). */
static void file_name(char *name, int pid)
{
	char *p = ftrt_utoa(name, (uint64_t)pid);
	ftrt_sched_copy(p, SCHED_SUFFIX, sizeof SCHED_SUFFIX);
}

/* Make "<pid>.sched" in dir with its header: 0, or -errno (nothing left). */
static int make_file(struct ftrt_fd *f, int dir, int pid)
{
	char name[32];
	file_name(name, pid);
	unsigned char hdr[SCHED_HEADER] = SCHED_MAGIC;
	uint32_t ids[2] = { (uint32_t)pid, 0 };
	ftrt_sched_copy(hdr + 8, ids, 8);
	if (ftrt_fsize_room(0) < SCHED_HEADER)
		return -EFBIG;
	int err = ftrt_fd_keep(f, ftrt_file_create(dir, name));
	if (!err && ftrt_put(f->fd, hdr, SCHED_HEADER, 0) != SCHED_HEADER) {
		sys(SYS_unlinkat, dir, (long)name, 0, 0, 0, 0); /* not a .sched file: no reader must find it */
		ftrt_fd_close(f);
		err = -EIO;
	}
	return err;
}

/* The file's descriptor, checked (fds.h), made at the first drain with
 * events (its header first), opened again by its name if the program
 * closed it; -1 when none can be. */
static int file_fd(int pid)
{
	if (file_failed)
		return -1;
	if (file.fd >= 0 && ftrt_fd_ours(&file))
		return file.fd;
	char name[32];
	file_name(name, pid);
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
	if (make_file(&file, dir, pid) != 0) {
		file_failed = 1;
		return -1;
	}
	file_off = SCHED_HEADER;
	return file.fd;
}

/* Drop the ring's oldest chunk. */
static void drop(void)
{
	start += 1 + (words[start % size] >> 32);
}

/* Put one chunk in the ring: its header word h (tid | count << 32), then
 * its events. */
static void put_chunk(uint64_t h, const uint64_t *ev)
{
	uint64_t count = h >> 32;
	if (count + 1 > size) { /* larger than the ring: its last events */
		ev += count - (size - 1);
		count = size - 1;
		h = (uint32_t)h | count << 32;
	}
	while (end + 1 + count - start > size)
		drop();
	words[end++ % size] = h;
	for (uint64_t i = 0; i < count; i++)
		words[end++ % size] = ev[i];
}

/* Put a drain's chunks, w words: to the file (0; -1: not written, and
 * none will be: the file ends with whole chunks), or the ring (0). */
int ftrt_sched_out_put(int pid, const uint64_t *chunks, uint64_t w)
{
	if (words) {
		for (uint64_t i = 0; i < w; i += 1 + (chunks[i] >> 32))
			put_chunk(chunks[i], chunks + i + 1);
		return 0;
	}
	int fd = file_fd(pid);
	if (fd < 0 || ftrt_fsize_room(file_off) < w * 8 || ftrt_put(fd, chunks, w * 8, file_off) != w * 8) {
		file_failed = 1;
		return -1;
	}
	file_off += w * 8;
	return 0;
}

/* Write the ring, oldest first, after the header of f (made): 0, or -EIO. */
static int write_ring(int fd)
{
	uint64_t n = end - start, at = start % size, first = size - at < n ? size - at : n;
	if (ftrt_fsize_room(SCHED_HEADER) < n * 8 || ftrt_put(fd, words + at, first * 8, SCHED_HEADER) != first * 8 ||
	    ftrt_put(fd, words, (n - first) * 8, SCHED_HEADER + first * 8) != (n - first) * 8)
		return -EIO;
	sys(SYS_ftruncate, fd, (long)(SCHED_HEADER + n * 8), 0, 0, 0, 0); /* an earlier end's longer ring */
	return 0;
}

/* The trace's end (or an exec's): the flight recorder's ring to the file. */
void ftrt_sched_out_end(int pid)
{
	if (!words || start == end)
		return;
	int fd = file_fd(pid);
	if (fd < 0 || write_ring(fd) != 0) {
		file_failed = 1;
		atomic_fetch_add_explicit(&ftrt_sched_lost, 1, memory_order_relaxed);
	}
}

/* A snapshot into the directory dir: the ring as "<pid>.sched" there
 * (none when it holds nothing). 0, or -errno. */
int ftrt_sched_out_snapshot(int pid, int dir)
{
	if (!words || start == end)
		return 0;
	struct ftrt_fd f;
	int err = make_file(&f, dir, pid);
	if (!err) {
		err = write_ring(f.fd);
		ftrt_fd_close(&f);
	}
	return err;
}

/* At the start, in the flight recorder: a ring of a quarter of a
 * thread's ring, between RING_MIN and RING_MAX. 0, or -errno. */
long ftrt_sched_out_ring(uint64_t thread_ring)
{
	uint64_t bytes = thread_ring / 4;
	bytes = bytes < RING_MIN ? RING_MIN : bytes > RING_MAX ? RING_MAX : bytes;
	long m = sys(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sys_failed(m))
		return m;
	words = (uint64_t *)m;
	size = bytes / 8;
	start = end = 0;
	return 0;
}

/* In a child after fork: the file and the switches in the ring are the
 * parent's; the child's go to its own. */
void ftrt_sched_out_fork(void)
{
	if (file.fd >= 0)
		ftrt_fd_close(&file); /* this process's copy: the parent's stays open */
	file = FTRT_FD_NONE;
	file_off = 0;
	file_failed = 0;
	start = end = 0;
}
