/*
 * A snapshot of the flight recorder (ftrace.h's ftrace_snapshot, and
 * `ftpatch ctl PID snapshot`): a whole trace directory of what every
 * thread's ring and buffer hold now, while tracing goes on. Into the
 * directory asked for (made as a trace directory is: dir.c), or
 * snapshot-N inside the trace's own. Each thread's records are copied by
 * ring.c while the thread goes on recording; the metadata says the
 * trace ended now, so a reader takes it whole. Not from a signal
 * handler (it takes the list of buffers, and the module records).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "live.h"
#include "tracer.h"

static const char *why = "";

const char *ftrt_snapshot_why(void)
{
	return why;
}

/* Write one thread's copied records, words[0, n), as its stream in dir. */
static int put_stream(int dir, const struct tbuf *b, const uint64_t *words, size_t n)
{
	char name[64];
	char *p = ftrt_utoa(name, (uint64_t)b->pid);
	*p++ = '-';
	p = ftrt_utoa(p, (uint64_t)b->tid);
	memcpy(p, STREAM_SUFFIX, sizeof STREAM_SUFFIX);
	long fd = ftrt_file_create(dir, name);
	if (sys_failed(fd))
		return (int)fd;
	unsigned char hdr[STREAM_HEADER];
	ftrt_stream_header(hdr, b);
	int err = ftrt_put((int)fd, hdr, sizeof hdr, 0) == sizeof hdr && ftrt_put_records((int)fd, words, (uint32_t)n, sizeof hdr) == n * 8 ? 0 : -EIO;
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	return err;
}

int ftrt_snapshot(const char *dir, char *made, size_t size)
{
	static int count;
	if (!ftrt_tracing()) {
		why = "no trace is open (nothing enabled yet?)";
		return -ENOENT;
	}
	if (!ftrt_ring_slots) {
		why = "not a flight recorder: the trace is written as it goes (FTRACE_BUFFER=ring:SIZE keeps it in memory)";
		return -ENOTSUP;
	}
	int fd;
	if (dir && *dir) {
		const char *w = "";
		fd = ftrt_dir_make(dir, 0, &w);
		if (fd < 0) {
			why = w;
			return -EACCES;
		}
		snprintf(made, size, "%s", dir);
	} else {
		char name[32], self[64], path[PATH_MAX];
		snprintf(name, sizeof name, "snapshot-%d", __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED));
		if (mkdirat(ftrt_trace_fd, name, 0700) != 0 ||
		    (fd = openat(ftrt_trace_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			why = "cannot make the snapshot's directory in the trace's";
			return -errno;
		}
		snprintf(self, sizeof self, "/proc/self/fd/%d", ftrt_trace_fd);
		ssize_t n = readlink(self, path, sizeof path - 1);
		path[n > 0 ? n : 0] = 0;
		snprintf(made, size, "%s/%s", path, name);
	}
	size_t bytes = ftrt_ring_snapshot_bytes();
	uint64_t *words = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (words == MAP_FAILED) {
		close(fd);
		why = "no memory for the copy of a thread's ring";
		return -ENOMEM;
	}
	int err = 0, me = (int)sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	unsigned long mask;
	sys_sigs_hold(&mask);
	ftrt_bufs_lock(me);
	for (struct tbuf *b = ftrt_bufs; b && !err; b = b->next) {
		size_t n = ftrt_ring_snapshot(b, words);
		if (n)
			err = put_stream(fd, b, words, n);
	}
	ftrt_bufs_unlock();
	sys_sigs_release(&mask);
	munmap(words, bytes);
	if (err) {
		why = "a thread's stream could not be written (the disk full?)";
	} else {
		int mods = ftrt_modules_hold();
		ftrt_meta_write_in(fd, 1, now(), mono_ns(), "meta.tmp", 0);
		if (mods)
			ftrt_modules_release();
	}
	close(fd);
	return err;
}
