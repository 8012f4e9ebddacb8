/*
 * The control socket: `ftpatch ctl PID ...` asks a running process to
 * enable and disable functions, change the tracer, pause and resume, or
 * snapshot its flight recorder (live.c and snapshot.c do the work, as
 * for ftrace.h's API).
 *
 * Only when asked at start: FTRACE_CTL=1 in the environment, or the
 * program's config record (ftpatch enable --ctl) unless FTRACE_CTL=0,
 * read once when the program's initialisers begin (lifetime.c), never in
 * a secure-execution process; otherwise no thread and no socket. The socket is ftpatch-PID.sock in a directory
 * only this user can enter: $XDG_RUNTIME_DIR when it is one, else
 * /tmp/ftpatch-UID, made 0700 and checked (a directory, this user's,
 * nobody else's to enter) before anything is made in it, so nobody else
 * can plant or reach the socket there. A connection is served only when
 * its peer is this user or root (SO_PEERCRED), by one thread of the
 * runtime's, which blocks every signal and runs nothing traced.
 *
 * The protocol: one request line, one reply, then the connection
 * closes. Requests: status, enable GLOB..., disable GLOB..., tracer
 * NAME, on, off, snapshot [DIR]. Replies: "ok" and what was done, or
 * "error: " and why; status replies with "key value" lines after "ok".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "live.h"
#include "say.h"
#include "tracer.h"

static int listen_fd = -1, owner; /* the listening socket, of process owner */
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

/* Whether path is a directory of this user's that nobody else may
 * enter or write (no link followed). */
static int private_dir(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0;
}

/* The socket's directory into dir: 0, or -1 with *why. */
static int socket_dir(char *dir, size_t size, const char **why)
{
	const char *x = secure_getenv("XDG_RUNTIME_DIR"); /* none in a secure-execution process (which never gets here) */
	if (x && x[0] == '/' && strlen(x) < size && private_dir(x)) {
		snprintf(dir, size, "%s", x);
		return 0;
	}
	snprintf(dir, size, "/tmp/ftpatch-%u", (unsigned)geteuid());
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		*why = "cannot be made";
		return -1;
	}
	if (!private_dir(dir)) {
		*why = "is not a directory of this user's that only it may enter (mode 0700)";
		return -1;
	}
	return 0;
}

/* The reply, into out (size bytes), cut short if need be. */
static __attribute__((format(printf, 3, 4))) void reply(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, size, fmt, ap);
	va_end(ap);
}

/* Reply to one request in req (NUL-terminated, no newline) into out. */
static void handle(char *req, char *out, size_t size)
{
	char *arg = strchr(req, ' ');
	if (arg)
		*arg++ = 0;
	const char *cmd = req;
	int r;
	if (strcmp(cmd, "status") == 0) {
		char path[64], dir[PATH_MAX] = "";
		snprintf(path, sizeof path, "/proc/self/fd/%d", ftrt_trace_fd);
		if (ftrt_tracing()) {
			ssize_t n = readlink(path, dir, sizeof dir - 1);
			dir[n > 0 ? n : 0] = 0;
		}
		reply(out, size, "ok\npid %d\ntracer %s\ntracing %s\ntrace %s\nbuffer %s\nenabled %zu\n", (int)getpid(),
			 ftrt_live_tracer_name(), !ftrt_tracing() ? "none" : ftrt_paused ? "off" : "on", dir[0] ? dir : "-",
			 ftrt_ring_slots ? BUFFER_RING : BUFFER_STREAM, ftrt_live_enabled());
		return;
	}
	if (strcmp(cmd, "enable") == 0 || strcmp(cmd, "disable") == 0) {
		if (!arg || !*arg) {
			reply(out, size, "error: %s needs one or more globs\n", cmd);
			return;
		}
		for (char *p = arg; *p; p++)
			if (*p == ' ')
				*p = ','; /* GLOB GLOB: one list */
		r = cmd[0] == 'e' ? ftrt_live_enable(arg) : ftrt_live_disable(arg);
		if (r < 0)
			reply(out, size, "error: %s: %s (%s)\n", cmd, strerror(-r), ftrt_live_why());
		else
			reply(out, size, "ok %d sites %s\n", r, cmd[0] == 'e' ? "enabled" : "disabled");
		return;
	}
	if (strcmp(cmd, "tracer") == 0) {
		r = ftrt_live_tracer(arg);
		if (r < 0)
			reply(out, size, "error: tracer: %s (%s)\n", strerror(-r), ftrt_live_why());
		else
			reply(out, size, "ok tracer %s\n", ftrt_live_tracer_name());
		return;
	}
	if (strcmp(cmd, "on") == 0 || strcmp(cmd, "off") == 0) {
		ftrt_live_pause(cmd[1] == 'f');
		reply(out, size, "ok tracing %s\n", cmd);
		return;
	}
	if (strcmp(cmd, "snapshot") == 0) {
		char made[PATH_MAX];
		r = ftrt_snapshot(arg, made, sizeof made);
		if (r < 0)
			reply(out, size, "error: snapshot: %s (%s)\n", strerror(-r), ftrt_snapshot_why());
		else
			reply(out, size, "ok snapshot %s\n", made);
		return;
	}
	reply(out, size, "error: unknown request %.64s: want status, enable, disable, tracer, on, off or snapshot\n", cmd);
}

/* One connection: its peer checked, its request read and answered. */
static void serve_one(int c)
{
	static char req[65536], out[8192];
	/* The request is read whoever sent it: a reply to a peer whose
	 * request is left unread would be lost to the connection's reset. */
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	size_t n = 0;
	while (n < sizeof req - 1) {
		ssize_t k = read(c, req + n, sizeof req - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		if (memchr(req + n - k, '\n', (size_t)k))
			break;
	}
	req[n] = 0;
	char *nl = strchr(req, '\n');
	if (nl)
		*nl = 0;
	struct ucred cr;
	socklen_t len = sizeof cr;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || (cr.uid != geteuid() && cr.uid != 0))
		reply(out, sizeof out, "error: permission denied: only the process's own user or root may control it\n");
	else
		handle(req, out, sizeof out);
	for (size_t done = 0, left = strlen(out); done < left;) {
		ssize_t k = write(c, out + done, left - done);
		if (k <= 0)
			break;
		done += (size_t)k;
	}
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		serve_one(c);
		close(c);
	}
}

/* At exit: the socket goes; not at a forked child's, whose parent's it is. */
static void ctl_end(void)
{
	if (sock_path[0] && getpid() == owner)
		unlink(sock_path);
}

void ftrt_ctl_start(void)
{
	if (!ftrt_ctl_wanted() || listen_fd >= 0)
		return;
	char dir[sizeof sock_path];
	const char *why = "";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (socket_dir(dir, sizeof dir - 32, &why) != 0) {
		struct say s;
		ftrt_say_begin(&s);
		ftrt_say_text(&s, "FTRACE_CTL: the socket's directory ");
		ftrt_say_str(&s, dir);
		ftrt_say_text(&s, " ");
		ftrt_say_text(&s, why);
		ftrt_say_text(&s, "; not listening");
		ftrt_say_end(&s);
		return;
	}
	reply(a.sun_path, sizeof a.sun_path, "%s/ftpatch-%d.sock", dir, (int)getpid());
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	unlink(a.sun_path); /* a socket an earlier process of this pid left */
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0) {
		ftrt_say("ftrt: FTRACE_CTL: the control socket cannot be made; not listening\n");
		close(fd);
		return;
	}
	listen_fd = fd;
	owner = getpid();
	memcpy(sock_path, a.sun_path, sizeof sock_path);
	if (ftrt_spawn(serve) != 0) {
		close(fd);
		listen_fd = -1;
		unlink(sock_path);
		sock_path[0] = 0;
		return;
	}
	atexit(ctl_end);
}
