/*
 * The control socket: `ftpatch ctl PID ...` asks a running process to
 * enable and disable functions, change the tracer, pause and resume, or
 * snapshot its flight recorder (live.c and snapshot.c do the work, as
 * for ftrace.h's API).
 *
 * Only when asked at start: FTRACE_CTL=1 in the environment, or the
 * program's config record (ftpatch enable --ctl) unless FTRACE_CTL=0,
 * read once when the program's initialisers begin (lifetime.c), never in
 * a secure-execution process; otherwise no thread and no socket, until
 * ftpatch attaches to the process and asks (ftrt_attach, below).
 *
 * Where: a socket in the abstract namespace, named "ftpatch-PID-RANDOM"
 * and a NUL, RANDOM 16 hex digits from the kernel's random source. No
 * file: nothing to make in a directory another user could make first,
 * nothing to unlink at exit, nothing left behind however the process
 * ends (the name goes with the last descriptor: at exit, at exec, which
 * closes it, and a forked child closes its copy at once). The random part
 * keeps another user from taking the name before the process does (a
 * name taken gets another). `ftpatch ctl PID` finds the socket among
 * those process PID holds (/proc/PID/net/unix, /proc/PID/fd) and,
 * connected, checks that its listener is process PID (SO_PEERCRED)
 * before it sends anything: the process's environment is not read.
 * Abstract sockets belong to the network namespace, where any process
 * may connect: a connection is served only when its peer is this user
 * or root (SO_PEERCRED); any other is answered "permission denied" at
 * once and closed.
 *
 * Who serves: one thread of the runtime's, which blocks every signal and
 * runs nothing traced, up to CONN_MAX connections at once. Each has
 * DEADLINE_MS from its accept for its whole request and the reply: one
 * slower is answered with an error and closed, so a client that sends a
 * byte now and then, or nothing, holds a slot for that long at most; a
 * connection that finds every slot taken is answered "busy" at once
 * (ftpatch ctl asks again). Nothing sent raises SIGPIPE (MSG_NOSIGNAL).
 *
 * The socket and each connection lie above the program's descriptors and
 * are checked before each use to be still the runtime's (fds.h): a
 * number the program closed, and perhaps reused for its own clients, is
 * never accepted on, read, written or closed; the socket is made again,
 * under a new name.
 *
 * The protocol: one request line, one reply, then the connection
 * closes. Requests: status, enable GLOB..., disable GLOB..., tracer
 * NAME, on, off, snapshot [DIR], out DIR (where the trace opens, before
 * the first enable), end (every site disabled, the trace ended: the
 * process records no more; ftpatch record -p's detach). Replies: "ok"
 * and what was done, or "error: " and why; status replies with "key
 * value" lines after "ok".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "arch/fds.h"
#include "core/say.h"
#include "patch/live.h"
#include "record/tracer.h"

#define CONN_MAX 8       /* connections served at once */
#define REQ_MAX 65536    /* the longest request line, its newline included */
#define DEADLINE_MS 5000 /* for a connection's whole request and reply */

/* A connection being served: its descriptor (fd -1: the slot is free),
 * its deadline (ms, CLOCK_MONOTONIC) and the request so far. */
struct conn {
	struct ftrt_fd k;
	long deadline;
	size_t n;
	char req[REQ_MAX];
};

static struct conn *conns; /* CONN_MAX of them, mapped when the server starts */
static struct ftrt_fd listener = FTRT_FD_NONE;
static char out[8192];     /* the reply being sent */

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
		char dir[PATH_MAX];
		ftrt_trace_path(dir, sizeof dir);
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
	if (strcmp(cmd, "out") == 0) {
		r = ftrt_live_out(arg);
		if (r < 0)
			reply(out, size, "error: out: %s (%s)\n", strerror(-r), ftrt_live_why());
		else
			reply(out, size, "ok trace directory %s\n", arg);
		return;
	}
	if (strcmp(cmd, "end") == 0) {
		r = ftrt_live_end();
		if (r < 0)
			reply(out, size, "error: end: %s (%s)\n", strerror(-r), ftrt_live_why());
		else
			reply(out, size, "ok %d sites disabled, trace ended\n", r);
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
	reply(out, size, "error: unknown request %.64s: want status, enable, disable, tracer, on, off, snapshot, out or end\n", cmd);
}

/* 16 random hex digits at p, for the socket's name: getrandom's, else
 * /dev/urandom's (a kernel without getrandom, or one whose random source
 * is not yet ready), else the clocks' and the stack's address, mixed. */
static void random_hex(char *p)
{
	uint64_t r = 0;
	if (sys(SYS_getrandom, (long)&r, sizeof r, 1 /* GRND_NONBLOCK */, 0, 0, 0) != sizeof r) {
		long fd = sys(SYS_openat, AT_FDCWD, (long)"/dev/urandom", O_RDONLY | O_CLOEXEC, 0, 0, 0);
		long n = sys_failed(fd) ? fd : sys(SYS_read, fd, (long)&r, sizeof r, 0, 0, 0);
		if (!sys_failed(fd))
			sys(SYS_close, fd, 0, 0, 0, 0, 0);
		if (n != sizeof r) {
			struct timespec a, b;
			clock_gettime(CLOCK_REALTIME, &a);
			clock_gettime(CLOCK_MONOTONIC, &b);
			r = ((uint64_t)a.tv_nsec << 32 ^ (uint64_t)a.tv_sec ^ (uint64_t)b.tv_nsec ^ (uintptr_t)&a) * 0x9e3779b97f4a7c15ull;
		}
	}
	for (int i = 0; i < 16; i++)
		p[i] = "0123456789abcdef"[r >> (60 - 4 * i) & 15];
}

/* The listening socket, made under a new name (another if a name is
 * taken), into listener: 0, or -errno. */
static int listen_make(void)
{
	for (int tries = 0; tries < 8; tries++) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "ftpatch-%d-", (int)getpid());
		random_hex(a.sun_path + 1 + n);
		/* The NUL after the name is the name's (qemu-user adds one to a
		 * name that has none, which a native client would not find). */
		socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n + 16 + 1);
		struct ftrt_fd k;
		int r = ftrt_fd_keep(&k, sys(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, 0, 0, 0));
		if (r != 0)
			return r;
		if (bind(k.fd, (struct sockaddr *)&a, len) == 0 && listen(k.fd, 64) == 0) {
			listener = k;
			return 0;
		}
		int err = errno;
		ftrt_fd_close(&k);
		if (err != EADDRINUSE)
			return -err;
	}
	return -EADDRINUSE;
}

/* Send msg on k, as much as goes by the deadline, and close k (each use
 * checked: fds.h). */
static void finish(struct ftrt_fd *k, const char *msg, long deadline)
{
	for (size_t done = 0, left = strlen(msg); done < left && ftrt_fd_ours(k);) {
		ssize_t w = send(k->fd, msg + done, left - done, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		long wait = deadline - now_ms();
		if (w == 0 || errno != EAGAIN || wait <= 0)
			break;
		struct pollfd p = { k->fd, POLLOUT, 0 };
		poll(&p, 1, (int)wait);
	}
	ftrt_fd_close(k);
}

/* A connection not to be served: msg, what it sent so far read (a
 * close with data unread would reset the connection, and the peer lose
 * msg), closed. */
static void turn_away(struct ftrt_fd *k, const char *msg)
{
	char sink[4096];
	for (int i = 0; i < 16 && recv(k->fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
		;
	finish(k, msg, now_ms());
}

/* The connections waiting (at most 64, so that those in slots are
 * served between): accepted, their peers checked, given slots. */
static void take_all(void)
{
	for (int i = 0; i < 64 && ftrt_fd_ours(&listener); i++) {
		struct ftrt_fd k;
		if (ftrt_fd_keep(&k, sys(SYS_accept4, listener.fd, 0, 0, SOCK_CLOEXEC | SOCK_NONBLOCK, 0, 0)) != 0)
			return; /* none left (EAGAIN), or aborted */
		struct ucred cr;
		socklen_t len = sizeof cr;
		if (getsockopt(k.fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || (cr.uid != geteuid() && cr.uid != 0)) {
			turn_away(&k, "error: permission denied: only the process's own user or root may control it\n");
			continue;
		}
		struct conn *c = NULL;
		for (int j = 0; j < CONN_MAX && !c; j++)
			if (conns[j].k.fd < 0)
				c = &conns[j];
		if (!c) {
			turn_away(&k, "error: busy: every request slot is taken; try again\n");
			continue;
		}
		c->k = k;
		c->deadline = now_ms() + DEADLINE_MS;
		c->n = 0;
	}
}

/* Read what c sent; once its request line is whole (or it closed, or
 * the line is too long), answer it. */
static void serve_one(struct conn *c)
{
	ssize_t k = recv(c->k.fd, c->req + c->n, REQ_MAX - 1 - c->n, MSG_DONTWAIT);
	if (k < 0) {
		if (errno != EAGAIN && errno != EINTR)
			ftrt_fd_close(&c->k); /* reset: nobody to answer */
		return;
	}
	if (k > 0) {
		c->n += (size_t)k;
		if (!memchr(c->req + c->n - k, '\n', (size_t)k) && c->n < REQ_MAX - 1)
			return;
	}
	c->req[c->n] = 0;
	char *nl = strchr(c->req, '\n');
	if (nl)
		*nl = 0;
	handle(c->req, out, sizeof out);
	finish(&c->k, out, c->deadline);
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[CONN_MAX + 1];
		struct conn *of[CONN_MAX + 1];
		int np = 0, wait = -1;
		long now = now_ms();
		/* The socket closed by the program (its number perhaps the
		 * program's own listener now): made again, under a new name. */
		if (!ftrt_fd_ours(&listener)) {
			listener = FTRT_FD_NONE;
			if (listen_make() != 0)
				wait = 1000; /* no descriptor left? again in a second */
		}
		if (listener.fd >= 0) {
			p[np] = (struct pollfd){ listener.fd, POLLIN, 0 };
			of[np++] = NULL;
		}
		for (int i = 0; i < CONN_MAX; i++) {
			struct conn *c = &conns[i];
			if (c->k.fd < 0)
				continue;
			if (!ftrt_fd_ours(&c->k)) {
				c->k = FTRT_FD_NONE; /* the program's now */
				continue;
			}
			if (c->deadline <= now) {
				finish(&c->k, "error: the request did not come whole in time\n", now);
				continue;
			}
			int left = (int)(c->deadline - now);
			wait = wait < 0 || left < wait ? left : wait;
			p[np] = (struct pollfd){ c->k.fd, POLLIN, 0 };
			of[np++] = c;
		}
		if (poll(p, (nfds_t)np, wait) <= 0)
			continue;
		for (int i = 0; i < np; i++) {
			if (!p[i].revents)
				continue;
			if (!of[i])
				take_all();
			else if (ftrt_fd_ours(&of[i]->k))
				serve_one(of[i]);
		}
	}
	return NULL;
}

/* In a child after fork: the socket and the connections are the
 * parent's, whose thread serves them; the child has no server, and
 * holds no copy that would keep the socket's name once the parent has
 * ended. Its own may start later (ftpatch record -p ends the trace of a
 * child forked while it recorded through it: ftrt_attach). */
static void after_fork(void)
{
	ftrt_fd_close(&listener);
	if (!conns)
		return;
	for (int i = 0; i < CONN_MAX; i++)
		ftrt_fd_close(&conns[i].k);
	munmap(conns, CONN_MAX * sizeof *conns);
	conns = NULL;
}

/* The server started: its socket made, its connections' slots mapped,
 * its thread running. 0, or -errno, with nothing of it left (no socket,
 * no mapping: an attach that fails leaves the process as it was; only
 * pthread_atfork's registration, a handler with nothing to close, stays
 * when the thread cannot start). Once in a process: a later call finds
 * it started (conns), and answers 0; a forked child's starts anew. */
static int start(void)
{
	static int registered; /* after_fork, once in the process's life */
	if (conns)
		return 0;
	int r = listen_make();
	if (r != 0)
		return r;
	struct conn *c = mmap(NULL, CONN_MAX * sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED) {
		ftrt_fd_close(&listener);
		return -ENOMEM;
	}
	for (int i = 0; i < CONN_MAX; i++)
		c[i].k = FTRT_FD_NONE;
	int err = registered ? 0 : pthread_atfork(NULL, NULL, after_fork);
	registered = !err;
	if (!err) {
		conns = c;
		err = ftrt_spawn(serve);
	}
	if (err) {
		conns = NULL;
		munmap(c, CONN_MAX * sizeof *c);
		ftrt_fd_close(&listener);
		return -err;
	}
	return 0;
}

void ftrt_ctl_start(void)
{
	if (ftrt_ctl_wanted() && start() != 0)
		ftrt_say("ftrt: FTRACE_CTL: the control socket cannot be made; not listening\n");
}

/*
 * The attach entry: `ftpatch ctl PID` on a process started without
 * FTRACE_CTL stops the process through ptrace and makes one of its
 * threads call this (abi.h's FTRT_ATTACH_SECTION says where it is), a
 * thread it chose stopped where the C library holds no lock of its own
 * (pthread_create below takes them), the others running meanwhile. The
 * server starts as FTRACE_CTL would have started it; a process that
 * listens already answers 0, one started with FTRACE_CTL=0 refuses
 * (-ECANCELED). In a secure-execution process too: only a
 * tracer the kernel let trace it (its own user, with the same
 * credentials, or one with CAP_SYS_PTRACE) gets here, and the server
 * answers only the process's user or root. Returns 0, or -errno.
 */
long ftrt_attach(void)
{
	/* FTRACE_CTL=0: whoever started the process said no control; said
	 * back as ECANCELED, which no socket call returns. */
	const char *no = ftrt_env(ENV_CTL);
	if (no && no[0] == '0' && !no[1])
		return -ECANCELED;
	/* Changes from now on keep each site's length: a detach gives the
	 * sites back their bytes (patch/live.h). */
	__atomic_store_n(&ftrt_live_whole, 1, __ATOMIC_RELAXED);
	ftrt_in_runtime++; /* the runtime's own calls of the C library: never library calls of the program's */
	int r = start();
	ftrt_in_runtime--;
	return r;
}

/* The word FTRT_ATTACH_SECTION holds: ftrt_attach's address, relocated
 * by the loader; retained by a link that drops unreferenced sections. */
__attribute__((section(FTRT_ATTACH_SECTION), used, retain)) static long (*const attach_entry)(void) = ftrt_attach;
