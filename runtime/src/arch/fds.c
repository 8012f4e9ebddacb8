/*
 * The runtime's descriptors above the program's range, and checked to be
 * still the runtime's before each use (fds.h says why).
 *
 * The floor: 1,024 numbers below the RLIMIT_NOFILE soft limit, or a
 * quarter of it when that is 4,096 or less (768 under the usual 1,024);
 * the limit taken as FD_TOP at most, since the kernel sizes a process's
 * descriptor table (and copies it at every fork) by its highest number.
 * A program that closes up to 1,023 under a higher limit leaves the
 * runtime's alone; one that closes everything up to its limit does not,
 * and the check before each use finds it out. Under a soft limit below
 * FD_LOW there is no room to leave: a descriptor stays where it was
 * made, checked all the same.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "fds.h"
#include "sys.h"

#define FD_TOP 16384 /* the highest limit the floor follows */
#define FD_LOW 64    /* under this soft limit, no floor */

/* The lowest number a lifted descriptor takes, or -1: none (the limit
 * too low, or not known). Read at each lift: the program may change its
 * limit. */
static long fd_floor(void)
{
	struct {
		uint64_t cur, max;
	} lim;
	if (sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&lim, 0, 0) != 0)
		return -1;
	uint64_t top = lim.cur < FD_TOP ? lim.cur : FD_TOP;
	if (top < FD_LOW)
		return -1;
	return (long)(top > 4096 ? top - 1024 : top - top / 4);
}

long ftrt_fd_lift(long fd)
{
	long floor = fd_floor();
	if (sys_failed(fd) || fd < 0 || floor < 0 || fd >= floor)
		return fd;
	long hi = sys(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor, 0, 0, 0);
	if (sys_failed(hi))
		return fd; /* nothing free up there: where it is */
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	return hi;
}

int ftrt_fd_keep(struct ftrt_fd *k, long fd)
{
	*k = FTRT_FD_NONE;
	if (sys_failed(fd))
		return (int)fd;
	fd = ftrt_fd_lift(fd);
	struct stat st;
	long r = sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0);
	if (r != 0) {
		sys(SYS_close, fd, 0, 0, 0, 0, 0);
		return (int)r;
	}
	k->dev = (uint64_t)st.st_dev;
	k->ino = (uint64_t)st.st_ino;
	k->fd = (int)fd;
	return 0;
}

int ftrt_fd_same(int fd, uint64_t dev, uint64_t ino)
{
	struct stat st;
	return fd >= 0 && sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

int ftrt_fd_ours(const struct ftrt_fd *k)
{
	return ftrt_fd_same(k->fd, k->dev, k->ino);
}

void ftrt_fd_close(struct ftrt_fd *k)
{
	if (ftrt_fd_ours(k))
		sys(SYS_close, k->fd, 0, 0, 0, 0, 0);
	*k = FTRT_FD_NONE;
}

size_t ftrt_put(int fd, const void *buf, size_t len, uint64_t off)
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
