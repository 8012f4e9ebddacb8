/*
 * Sessions (abi.h's SESSION_FILE): which session a process joins, and
 * its image in it. dir.c makes the session's directory as it makes any
 * trace directory (ftrt_dir_make_session), asking this file whether an
 * existing one is to be joined (ftrt_session_join) and marking a new
 * one (ftrt_session_mark).
 *
 * Start-up code: libc is used freely.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch/fds.h"
#include "arch/sys.h"
#include "core/ftrt.h"
#include "session.h"
#include "tracer.h"

/*
 * A session: everything one recording traces, in one directory (abi.h's
 * SESSION_FILE and a directory per process image). The process that
 * starts it makes the directory (make_dir, below) with the session file
 * in it; every process of the session holds a shared flock on it for as
 * long as it runs (forked children share the open directory; an exec'd
 * image opens it again), so the directory is in use while any does.
 *
 * A process joins the session at FTRACE_OUT when the directory is one
 * (its session file) of the effective user's, and one of its ancestors,
 * itself first (an exec), then its parent, its parent's parent... up to
 * init, has an image in it, "PID@START" (START the process's start
 * time, so a pid used again is never taken for another's), or is the
 * session's root: the process that started it, or the one FTRACE_SESSION
 * named then (ftpatch record, whose children may be siblings: `record
 * -- sh -c 'a; b'`). An untraced
 * shell between two traced processes is passed through; a process of
 * another session, or of none, that names the same directory is no
 * descendant, and traces beside it as before.
 */

/* The raw system calls' /proc/PID/stat (pid 0: self): the parent's pid
 * and the start time (field 22, clock ticks since boot), after the
 * command name's closing parenthesis (a name may hold any byte). 0, or
 * -1. Async-signal-safe. */
static int proc_stat(int pid, int *ppid, uint64_t *start)
{
	char path[40] = "/proc/self/stat";
	if (pid) {
		char *p = path + 6;
		p = ftrt_utoa(p, (uint64_t)pid);
		memcpy(p, "/stat", 6);
	}
	long fd = sys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (sys_failed(fd))
		return -1;
	char buf[1024];
	long n = sys(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *q = NULL;
	for (char *c = buf; *c; c++)
		if (*c == ')')
			q = c;
	if (!q)
		return -1;
	/* ") S PPID ...": field 3 is the state, 4 the parent; 22 the start. */
	int field = 2;
	uint64_t v = 0;
	*ppid = 0;
	*start = 0;
	for (char *c = q + 1; *c; c++) {
		if (*c == ' ') {
			field++;
			v = 0;
			continue;
		}
		if (*c < '0' || *c > '9')
			continue;
		v = v * 10 + (uint64_t)(*c - '0');
		if (c[1] == ' ' || c[1] == 0) {
			if (field == 4)
				*ppid = (int)v;
			else if (field == 22) {
				*start = v;
				return 0;
			}
		}
	}
	return -1;
}

/* An image's name, "PID@START" (n 1) or "PID@START.N", into buf. */
static void image_name(char *buf, int pid, uint64_t start, unsigned n)
{
	char *p = ftrt_utoa(buf, (uint64_t)pid);
	*p++ = '@';
	p = ftrt_utoa(p, start);
	if (n > 1) {
		*p++ = '.';
		p = ftrt_utoa(p, n);
	}
	*p = 0;
}

/* Parse "PID@START" at p into *pid, *start: 0, or -1. */
static int parse_id(const char *p, int *pid, uint64_t *start)
{
	uint64_t v[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		const char *b = p;
		while (*p >= '0' && *p <= '9' && p - b < 20)
			v[k] = v[k] * 10 + (uint64_t)(*p++ - '0');
		if (p == b || (k == 0 && *p++ != '@'))
			return -1;
	}
	if ((*p && *p != '\n') || v[0] > 0x7fffffff)
		return -1;
	*pid = (int)v[0];
	*start = v[1];
	return 0;
}

/* Whether the directory fd is a session's: a directory of the effective
 * user's, holding a regular SESSION_FILE that starts SESSION_MAGIC; its
 * root process (the second line's) into *pid, *start (0, 0: none). */
static int is_session(int fd, int *pid, uint64_t *start)
{
	struct stat st;
	*pid = 0;
	*start = 0;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return 0;
	int f = openat(fd, SESSION_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (f < 0)
		return 0;
	char buf[256];
	ssize_t n = fstat(f, &st) == 0 && S_ISREG(st.st_mode) ? read(f, buf, sizeof buf - 1) : -1;
	close(f);
	if (n < (ssize_t)sizeof SESSION_MAGIC || memcmp(buf, SESSION_MAGIC "\n", sizeof SESSION_MAGIC) != 0)
		return 0;
	buf[n] = 0;
	const char *root = buf + sizeof SESSION_MAGIC;
	if (strncmp(root, SESSION_ROOT " ", sizeof SESSION_ROOT) == 0 && parse_id(root + sizeof SESSION_ROOT, pid, start) != 0)
		*pid = 0, *start = 0;
	return 1;
}

/* A listing of the directory open at root (its descriptor left open),
 * or NULL. */
static DIR *listing(int root)
{
	int fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* Whether the session open at root holds an image of one of the
 * processes pids[0, n): a directory "PID@...", in one pass over it. Its
 * start time is not compared: each pid is a living ancestor's, which no
 * other process can have meanwhile, and an emulator (qemu-user) gives a
 * process's own /proc/self/stat a start time of its own, which others
 * do not see and an exec changes. A file system that gives no entry's
 * type (DT_UNKNOWN) has its entries of that name taken for images. */
static int has_image(int root, const int *pids, int n)
{
	DIR *d = listing(root);
	if (!d)
		return 0;
	int found = 0;
	for (struct dirent *e; !found && (e = readdir(d));) {
		char *at;
		long pid = strtol(e->d_name, &at, 10);
		if (*at != '@' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		for (int k = 0; k < n && !found; k++)
			found = pids[k] == pid;
	}
	closedir(d);
	return found;
}

/* 1 when root holds an image of pid, with the first one's name
 * "PID@START" into base (64 bytes; NULL: not wanted) and the most images
 * of it into *most (has_image's reasons not to compare the start). */
static int image_of(int root, int pid, char *base, unsigned *most)
{
	char prefix[24];
	char *p = ftrt_utoa(prefix, (uint64_t)pid);
	*p++ = '@';
	size_t n = (size_t)(p - prefix);
	DIR *d = listing(root);
	if (!d)
		return 0;
	int found = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (strncmp(e->d_name, prefix, n) != 0 || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		const char *dot = strchr(e->d_name + n, '.');
		unsigned k = dot ? (unsigned)strtoul(dot + 1, NULL, 10) : 1;
		if (!found && base) {
			size_t len = dot ? (size_t)(dot - e->d_name) : strlen(e->d_name);
			if (len < 64) {
				memcpy(base, e->d_name, len);
				base[len] = 0;
			}
		}
		if (most && k > *most)
			*most = k;
		found = 1;
		if (!base && !most)
			break;
	}
	closedir(d);
	return found;
}

/* This process and its ancestors up to init, at most max: their pids
 * into pids and start times into starts (this process's own as it sees
 * it: under an emulator, not what others see), nearest first. How many. */
static int lineage(int *pids, uint64_t *starts, int max)
{
	int n = 0, pid = 0, ppid;
	while (n < max && proc_stat(pid, &ppid, &starts[n]) == 0) {
		pids[n++] = pid ? pid : (int)getpid();
		if (ppid <= 1)
			break;
		pid = ppid;
	}
	return n;
}

/* Whether the process pid started at start is an ancestor of this one
 * (its start time read as other processes see it). */
static int ancestor(int pid, uint64_t start)
{
	int pids[256];
	uint64_t starts[256];
	int n = lineage(pids, starts, 256);
	for (int k = 1; k < n; k++)
		if (pids[k] == pid && starts[k] == start)
			return 1;
	return 0;
}

/* The session name in parent, opened and locked (shared), when it is
 * one this process joins (above); else -1. */
int ftrt_session_running(int fd)
{
	int rpid, ppid;
	uint64_t rstart, start;
	return is_session(fd, &rpid, &rstart) && rpid > 0 && proc_stat(rpid, &ppid, &start) == 0 && start == rstart;
}

int ftrt_session_join(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rpid, pids[256], joins = 0;
	uint64_t rstart, starts[256];
	if (is_session(fd, &rpid, &rstart)) {
		/* The process and its ancestors: the session's root among them
		 * joins at once (itself by pid alone: its own start time is its
		 * own view); else one pass over the session's images. */
		int n = lineage(pids, starts, 256);
		for (int k = 0; k < n && !joins; k++)
			joins = pids[k] == rpid && (starts[k] == rstart || k == 0);
		joins = joins || has_image(fd, pids, n);
	}
	for (int tries = 0; joins && tries < 100; tries++) {
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			return fd;
		usleep(1000); /* another process's in_use probe holds it a moment */
	}
	close(fd);
	return -1;
}

/* The pid a session started here is named by beside a directory in use
 * (dir.c's path.PID): its root's, FTRACE_SESSION's when that is an
 * ancestor (ftpatch record), so every process of the session finds the
 * same one and joins it there; else this process's. */
int ftrt_session_pid(void)
{
	int pid;
	uint64_t start;
	const char *asked = ftrt_env(ENV_SESSION);
	if (asked && parse_id(asked, &pid, &start) == 0 && ancestor(pid, start))
		return pid;
	return (int)getpid();
}

/* Write the session file into the directory fd being made: rooted at
 * the process FTRACE_SESSION names (ftpatch record, which started this
 * one) when that is an ancestor, else at this process. */
int ftrt_session_mark(int fd)
{
	int pid, ppid;
	uint64_t start;
	const char *asked = ftrt_env(ENV_SESSION);
	if (!asked || parse_id(asked, &pid, &start) != 0 || !ancestor(pid, start)) {
		if (proc_stat(0, &ppid, &start) != 0)
			return -1;
		pid = (int)getpid();
	}
	char line[128] = SESSION_MAGIC "\n" SESSION_ROOT " ";
	char *p = line + sizeof SESSION_MAGIC + sizeof SESSION_ROOT;
	image_name(p, pid, start, 1);
	p += strlen(p);
	*p++ = '\n';
	int f = openat(fd, SESSION_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, ftrt_dir_file_mode());
	if (f < 0)
		return -1;
	int ok = write(f, line, (size_t)(p - line)) == p - line;
	close(f);
	return ok ? 0 : -1;
}

/* The session's directory, held (shared flock) while the process runs:
 * in use, so no new session moves it aside. */
static struct ftrt_fd root = FTRT_FD_NONE;
unsigned ftrt_image_no;
int ftrt_image_ppid;
int ftrt_image_forked;

long ftrt_session_image(int forked)
{
	int r = ftrt_fd_ours(&root) ? root.fd : -1;
	int ppid;
	uint64_t start;
	if (r < 0 || proc_stat(0, &ppid, &start) != 0)
		return -ENOENT;
	int pid = (int)sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	char name[64], base[64] = "";
	unsigned most = 0;
	/* The process's images so far (an exec's): the next one of that
	 * name, whatever start time the process sees now. A child just
	 * forked has none (its start time is new), and looks for none: a
	 * listing allocates, and a fork may be a signal handler's. */
	if (!forked)
		image_of(r, pid, base, &most);
	for (unsigned n = most + 1; n < most + 1000; n++) {
		if (base[0]) {
			char *p = base + strlen(base);
			memcpy(name, base, (size_t)(p - base));
			p = name + (p - base);
			*p++ = '.';
			*ftrt_utoa(p, n) = 0;
		} else {
			image_name(name, pid, start, n);
		}
		long e = sys(SYS_mkdirat, r, (long)name, ftrt_dir_dir_mode(), 0, 0, 0);
		if (e == -EEXIST)
			continue;
		if (sys_failed(e))
			return e;
		long fd = sys(SYS_openat, r, (long)name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
		struct stat st;
		if (!sys_failed(fd) && (sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0 || st.st_uid != geteuid() ||
					(st.st_mode & 0777 & ~ftrt_dir_dir_mode()))) {
			sys(SYS_close, fd, 0, 0, 0, 0, 0);
			return -EPERM; /* replaced by another user's meanwhile */
		}
		if (!sys_failed(fd))
			ftrt_image_no = n, ftrt_image_ppid = ppid, ftrt_image_forked = forked;
		return fd;
	}
	return -EEXIST;
}

void ftrt_session_close(void)
{
	ftrt_fd_close(&root);
}

int ftrt_session_open(const char *path, int recorded, const char **why)
{
	if (ftrt_fd_keep(&root, ftrt_dir_make_session(path, recorded, why)) != 0)
		return -1;
	long fd = ftrt_session_image(0);
	if (sys_failed(fd)) {
		*why = "cannot hold the process's own directory (no permission, or no space?)";
		ftrt_fd_close(&root);
		return -1;
	}
	return (int)fd;
}
