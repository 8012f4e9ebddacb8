/*
 * The runtime's descriptors, kept out of the program's way (fds.c).
 *
 * A program may close descriptors it did not open: a daemon closes every
 * one it inherited (close(3..1023), close_range, a loop up to the limit)
 * and then opens its own, which take the lowest numbers free. So every
 * descriptor the runtime keeps (the trace directory, each thread's
 * stream, the metadata and snapshot files while they are written,
 * /proc/self/mem, the control socket and its connections, the argument
 * reader's pipe, the FTRACE_ARGS_SOCKET connection) is
 *
 *  - lifted above the program's range once made (ftrt_fd_lift):
 *    duplicated close-on-exec to the lowest number free from a floor near
 *    the RLIMIT_NOFILE soft limit, its first number closed;
 *  - known by what it is open on (the device and inode fstat gives a
 *    file, a directory, a pipe or a socket), and checked to be still that
 *    before each use: once per write of a buffer, not per record. A
 *    number that is no longer the runtime's is the program's: never read,
 *    written or closed. Its user opens again what it can (the trace
 *    directory by its path, a stream by its name in it, /proc/self/mem,
 *    the control socket, the pipe) and counts what it cannot as lost.
 *
 * Raw system calls only: the trace's end uses these in a signal handler.
 */
#ifndef FTRT_FDS_H
#define FTRT_FDS_H

#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* A descriptor of the runtime's and what it is open on; fd -1: none. */
struct ftrt_fd {
	int fd;
	uint64_t dev, ino;
};

#define FTRT_FD_NONE ((struct ftrt_fd){ .fd = -1 })

/* fd (a raw call's result) moved above the program's range: the new
 * number, its old one closed; fd itself when there is no room there (a
 * low RLIMIT_NOFILE) or fd is an error. */
long ftrt_fd_lift(long fd) HIDDEN;
/* Keep fd (a raw call's result) in *k: lifted, and what it is open on
 * recorded. 0, or -errno (fd an error, or closed: *k is none). */
int ftrt_fd_keep(struct ftrt_fd *k, long fd) HIDDEN;
/* Whether fd is still open on dev and ino. */
int ftrt_fd_same(int fd, uint64_t dev, uint64_t ino) HIDDEN;
/* Whether k holds a descriptor that is still the one kept. */
int ftrt_fd_ours(const struct ftrt_fd *k) HIDDEN;
/* Close k's descriptor if it is still the one kept (else the number is
 * the program's, and left alone); k is none after. */
void ftrt_fd_close(struct ftrt_fd *k) HIDDEN;

/* Write buf[0, len) at offset off of fd: the bytes written, len unless
 * a write failed (a full disk, an I/O error). Every writer of the
 * runtime's (record/stream.c's, text.c's to /proc/self/mem); the caller
 * keeps within RLIMIT_FSIZE (record/stream.c's fsize_room). */
size_t ftrt_put(int fd, const void *buf, size_t len, uint64_t off) HIDDEN;

#endif
