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

#include "arch/fds.h"
#include "tracer.h"

static const char *why = "";

const char *ftrt_snapshot_why(void)
{
	return why;
}

/* Write one thread's copied records, words[0, n), as its stream in dir
 * (each descriptor checked before it is used: fds.h). */
static int put_stream(const struct ftrt_fd *dir, const struct tbuf *b, const uint64_t *words, size_t n)
{
	char name[64];
	char *p = ftrt_utoa(name, (uint64_t)b->pid);
	*p++ = '-';
	p = ftrt_utoa(p, (uint64_t)b->tid);
	memcpy(p, STREAM_SUFFIX, sizeof STREAM_SUFFIX);
	struct ftrt_fd f;
	int err = ftrt_fd_ours(dir) ? ftrt_fd_keep(&f, ftrt_file_create(dir->fd, name)) : -EBADF;
	if (err)
		return err;
	unsigned char hdr[STREAM_HEADER];
	ftrt_stream_header(hdr, b);
	err = ftrt_put(f.fd, hdr, sizeof hdr, 0) == sizeof hdr && ftrt_fd_ours(&f) &&
			      ftrt_put_records(f.fd, words, (uint32_t)n, sizeof hdr) == n * 8
		      ? 0
		      : -EIO;
	ftrt_fd_close(&f);
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
	struct ftrt_fd fd;
	if (dir && *dir) {
		const char *w = "";
		if (ftrt_fd_keep(&fd, ftrt_dir_make(dir, 0, &w)) != 0) {
			why = w;
			return -EACCES;
		}
		snprintf(made, size, "%s", dir);
	} else {
		char name[32], path[PATH_MAX];
		snprintf(name, sizeof name, "snapshot-%d", __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED));
		int trace = ftrt_trace_dir();
		if (trace < 0 || mkdirat(trace, name, 0700) != 0 ||
		    ftrt_fd_keep(&fd, openat(trace, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != 0) {
			why = "cannot make the snapshot's directory in the trace's";
			return trace < 0 ? -EBADF : -errno;
		}
		ftrt_trace_path(path, sizeof path);
		snprintf(made, size, "%s/%s", path, name);
	}
	size_t bytes = ftrt_ring_snapshot_bytes();
	uint64_t *words = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (words == MAP_FAILED) {
		ftrt_fd_close(&fd);
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
			err = put_stream(&fd, b, words, n);
	}
	ftrt_bufs_unlock();
	sys_sigs_release(&mask);
	munmap(words, bytes);
	if (err) {
		why = "a thread's stream could not be written (the disk full?)";
	} else if (ftrt_fd_ours(&fd) && ftrt_sched_snapshot(fd.fd) != 0) { /* the last switches too */
		err = -EIO;
		why = "the scheduler events could not be written (the disk full?)";
	}
	if (!err) {
		int mods = ftrt_modules_hold();
		if (ftrt_fd_ours(&fd))
			ftrt_meta_write_in(fd.fd, 1, now(), mono_ns(), "meta.tmp", 0);
		if (mods)
			ftrt_modules_release();
	}
	ftrt_fd_close(&fd);
	return err;
}
