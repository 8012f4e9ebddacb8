/*
 * The trace directory and the files in it, made so that no other user
 * can turn a write of the runtime's into a write of theirs.
 *
 * The runtime may run as root, or setuid, in a directory other users can
 * write (/tmp, a shared build tree). Anything it did by name there could
 * be raced: a directory made by mkdir and then opened by name may have
 * been swapped for a symbolic link in between, and a file opened with
 * O_CREAT|O_TRUNC may be a link another user planted, to a file of
 * root's. So every step goes through a directory descriptor:
 *
 *  - the parent directory is opened once; the trace directory is made
 *    in it with mkdirat under a temporary name, opened at once with
 *    O_DIRECTORY|O_NOFOLLOW, and checked to be the one made (a
 *    directory, owned by the effective user, with no permission bit
 *    beyond those asked for) before anything is written into it;
 *  - it is renamed into place with renameat2(RENAME_NOREPLACE), and an
 *    earlier trace is moved aside the same way, relative to the parent:
 *    a rename moves a name, never follows it;
 *  - every file in it is created with O_CREAT|O_EXCL|O_NOFOLLOW relative
 *    to its descriptor (ftrt_file_create), and renamed within it.
 *
 * Traces hold load addresses and return addresses into the C library,
 * which a program's address-space randomisation keeps secret: the
 * directory is 0700 and its files 0600 unless FTRACE_MODE widens that
 * (ftrt_dir_set_mode; never in a secure-execution process).
 *
 * A location recorded in the binary (ftpatch enable --trace-dir) is
 * checked first, from the root down (walk_trusted): an absolute path,
 * each directory on it reached without following a symbolic link, owned
 * by root or the effective user, and writable by no one else, unless it
 * is sticky (as /tmp is: others may add names there, but not rename or
 * remove one of root's). The trace directory's own parent may not be
 * writable by anyone else even so, as the runtime makes and moves names
 * there. That is the only place a secure-execution process writes.
 *
 * Start-up code (the constructor, or dlopen's pass): libc is used freely
 * there, but for ftrt_file_create, which the trace's end may call from a
 * signal handler: a raw system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch/sys.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "session.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

static unsigned file_mode = 0600, dir_mode = 0700;

/*
 * FTRACE_MODE=MODE: the trace's files get MODE, an octal mode of at
 * least 0600 and at most 0644 (0640: the owner's group may read the
 * trace; 0644: anyone), and its directories the search bit where MODE
 * has the read bit. Never writable by others: the runtime creates files
 * in the directory and must be the only one who does. The umask applies
 * as to any file.
 */
void ftrt_dir_set_mode(const char *mode)
{
	if (!mode || !*mode)
		return;
	char *end;
	unsigned long m = strtoul(mode, &end, 8);
	if (*end || (m & 0600) != 0600 || (m & ~0644ul)) {
		ftrt_say("ftrt: FTRACE_MODE: want an octal file mode from 0600 to 0644 (0640: the group may read the trace); "
			 "0600 used\n");
		return;
	}
	file_mode = (unsigned)m;
	dir_mode = (unsigned)m | 0100 | (m & 0040 ? 0010 : 0) | (m & 0004 ? 0001 : 0);
}

long ftrt_file_create(int dir, const char *name)
{
	return sys(SYS_openat, dir, (long)name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, file_mode, 0, 0);
}

/*
 * Whether the directory open at fd may lie on the way to a recorded trace
 * location: NULL when it may, else why not. last: it is the trace
 * directory's parent, where no sticky bit excuses others' write access.
 */
static const char *trusted(int fd, int last)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
		return "has a component on the way that is not a directory";
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return last ? "has a parent directory owned by another user than root or the effective user"
			    : "has a directory on the way owned by another user than root or the effective user";
	if ((st.st_mode & 022) && (last || !(st.st_mode & S_ISVTX)))
		return last ? "has a parent directory writable by group or others"
			    : "has a directory on the way writable by group or others, and not sticky";
	return NULL;
}

/*
 * Open the parent of the recorded location path from the root down, one
 * component at a time, never following a symbolic link, each directory
 * trusted (above); *base is the last component, the trace directory's
 * name. The descriptor (O_PATH), or -1 with *why set.
 */
static int walk_trusted(const char *path, const char **base, const char **why)
{
	if (path[0] != '/') {
		*why = "is not an absolute path";
		return -1;
	}
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		*why = "cannot open /";
		return -1;
	}
	const char *p = path + 1;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		char name[NAME_MAX + 1];
		if (len == 0 || len > NAME_MAX || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
			*why = "is not a clean absolute path (an empty, \".\", \"..\" or overlong component)";
			goto fail;
		}
		if ((*why = trusted(fd, slash == NULL)) != NULL)
			goto fail;
		if (!slash) {
			*base = p;
			return fd;
		}
		memcpy(name, p, len);
		name[len] = 0;
		int next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			struct stat st;
			*why = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)
				       ? "has a symbolic link on the way"
				       : "has a directory on the way that does not exist or cannot be searched";
			goto fail;
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
fail:
	close(fd);
	return -1;
}

/*
 * Open the parent of path as the kernel resolves it (FTRACE_OUT, or the
 * default ./ftrace.data: the user's own choice, in the user's own
 * process); *base is the last component.
 */
static int open_parent(const char *path, const char **base, const char **why)
{
	const char *slash = strrchr(path, '/');
	*base = slash ? slash + 1 : path;
	if (!**base || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0) {
		*why = "does not name a directory to make";
		return -1;
	}
	char parent[PATH_MAX];
	size_t len = slash ? (size_t)(slash - path) : 0;
	if (len >= sizeof parent) {
		*why = "is too long";
		return -1;
	}
	if (slash && len == 0)
		len = 1; /* "/name": the root */
	memcpy(parent, slash ? path : ".", slash ? len : 1);
	parent[slash ? len : 1] = 0;
	int fd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		*why = "has a parent directory that does not exist or cannot be searched";
	return fd;
}

/* Whether the directory name in parent is a trace some process is
 * writing now: one whose lock (see ftrt_dir_make) is held, or a session
 * whose root still runs (ftpatch record, between two of the programs
 * it started: none holds the lock then). */
static int in_use(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int held = flock(fd, LOCK_EX | LOCK_NB) != 0 || ftrt_session_running(fd);
	close(fd); /* and with it the lock, if this took it */
	return held;
}

/* Move name in parent aside, to name.old (or name.old.N when that is
 * taken too), never replacing anything. */
static int move_aside(int parent, const char *name)
{
	char aside[NAME_MAX + 16];
	for (int i = 0; i < 1000; i++) {
		int n = i == 0 ? snprintf(aside, sizeof aside, "%s.old", name) : snprintf(aside, sizeof aside, "%s.old.%d", name, i);
		if (n < 0 || (size_t)n >= sizeof aside)
			return -1;
		if (renameat2(parent, name, parent, aside, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno == EINVAL || errno == ENOSYS) {
			/* A file system (or kernel) without RENAME_NOREPLACE. */
			struct stat st;
			if (fstatat(parent, aside, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
				return renameat(parent, name, parent, aside);
		} else if (errno != EEXIST) {
			return -1;
		}
	}
	return -1;
}

/*
 * Make the trace directory path and open it; recorded: path is the
 * binary's recorded location, checked from the root down; session: it
 * is a session's (above), which this process may join. Returns the
 * directory's descriptor, locked (shared, a session's), or -1 with *why
 * set. One that exists is never mixed with this run nor destroyed:
 *
 *  - A session this process joins is joined.
 *  - One a running process is writing (a process of another session, or
 *    a traced program of an older runtime) is left alone: this process's
 *    goes to path.PID instead, PID the session's root's (ftpatch record:
 *    where every process of its session goes, and joins the first). The directory's lock says which are in
 *    use: each process of a session holds a shared flock on it for as
 *    long as it runs (an older runtime, or a snapshot, an exclusive one).
 *  - Any other, a finished run's, is moved aside to path.old (or
 *    path.old.N when that is taken too).
 *
 * The directory is made under a temporary name, opened, checked, locked,
 * then renamed into place only if nothing took the name meanwhile, so a
 * process starting at the same moment never finds it unlocked.
 */
static int make_dir(const char *path, int recorded, const char **why, int session)
{
	char dir[PATH_MAX], name[NAME_MAX + 1], tmp[NAME_MAX + 1];
	/* FTRACE_OUT=out/ names out: the names made beside it (out.PID,
	 * out.old, out.tmp-PID) must not land inside it. */
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len == 0 || len >= sizeof dir) {
		*why = len ? "is too long" : "is empty";
		return -1;
	}
	memcpy(dir, path, len);
	dir[len] = 0;
	const char *base;
	int parent = recorded ? walk_trusted(dir, &base, why) : open_parent(dir, &base, why);
	if (parent < 0)
		return -1;
	int pid = (int)getpid(), fd = -1;
	int n = snprintf(name, sizeof name, "%s", base), t = snprintf(tmp, sizeof tmp, "%s.tmp-%d", base, pid);
	*why = "has a name too long";
	if (n < 0 || (size_t)n >= sizeof name || t < 0 || (size_t)t >= sizeof tmp)
		goto out;
	for (int tries = 0; tries < 10; tries++) {
		struct stat st;
		if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (session && (fd = ftrt_session_join(parent, name)) >= 0)
				goto out; /* a session this process's ancestry is part of */
			if (in_use(parent, name)) {
				*why = "is in use, and so is its .PID beside it";
				if (strcmp(name, base) != 0)
					goto out; /* dir.PID in use: not ours to take */
				n = snprintf(name, sizeof name, "%s.%d", base, session ? ftrt_session_pid() : pid);
				*why = "has a name too long";
				if (n < 0 || (size_t)n >= sizeof name)
					goto out;
				continue;
			}
			*why = "exists and cannot be moved aside";
			if (move_aside(parent, name) != 0)
				goto out;
		}
		*why = "cannot be made (no permission, or no space?)";
		if (mkdirat(parent, tmp, dir_mode) != 0)
			goto out;
		fd = openat(parent, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* The one made: a directory of ours with no permission bit
		 * beyond those asked for, not something put in its place (a
		 * setgid parent's S_ISGID, which mkdir passes on, is no
		 * permission bit). */
		if (fd < 0 || fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		    (st.st_mode & 0777 & ~dir_mode)) {
			*why = "was replaced by another user's while it was being made";
			if (fd >= 0)
				close(fd);
			fd = -1;
			goto out;
		}
		if (flock(fd, (session ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
			*why = "cannot be locked";
			goto drop;
		}
		if (session && ftrt_session_mark(fd) != 0) {
			*why = "cannot be written (no space?)";
			goto drop;
		}
		if (renameat2(parent, tmp, parent, name, RENAME_NOREPLACE) == 0)
			goto out;
		/* Taken meanwhile (or RENAME_NOREPLACE unknown to the file system
		 * or kernel, and then a plain rename, which cannot replace a
		 * directory that holds anything). */
		if ((errno == EINVAL || errno == ENOSYS) && fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0 &&
		    renameat(parent, tmp, parent, name) == 0)
			goto out;
		*why = "was taken by another process while it was being made";
	drop:
		close(fd);
		fd = -1;
		unlinkat(parent, tmp, AT_REMOVEDIR);
	}
out:
	close(parent);
	return fd;
}

int ftrt_dir_make(const char *path, int recorded, const char **why)
{
	return make_dir(path, recorded, why, 0);
}

int ftrt_dir_make_session(const char *path, int recorded, const char **why)
{
	return make_dir(path, recorded, why, 1);
}

unsigned ftrt_dir_file_mode(void)
{
	return file_mode;
}

unsigned ftrt_dir_dir_mode(void)
{
	return dir_mode;
}
