/*
 * A module's own FTRACE_ARGS and FTRACE_RETVAL, asked of the server on
 * FTRACE_ARGS_SOCKET (ftpatch record --auto-args: package argspec's
 * Server) for capture.c: a request "BUILD-ID PATH\n" (BUILD-ID "-" for
 * none), then the answer "ARGS\nRETVAL\n" until the server closes.
 * Never on a hot path (a module's registration, the capture's start):
 * libc is used freely. Never waits past ASK_TIMEOUT_MS; a socket that
 * is gone, refuses or does not answer is warned about once and not
 * asked again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "arch/fds.h"
#include "arch/sys.h"
#include "core/ftrt.h"
#include "core/say.h"
#include "fgraph.h"

/* How long the runtime waits for the socket's answer about a module. */
#define ASK_TIMEOUT_MS 10000
/* The largest answer read: a module's entries. */
#define ASK_MAX (64u << 20)

static int gone; /* the socket failed once: warned, not asked again */

/* The socket failed (asked about path, if not NULL): said once. */
static void ask_failed(const char *sock, const char *why, const char *path)
{
	if (__atomic_exchange_n(&gone, 1, __ATOMIC_RELAXED))
		return;
	struct say s;
	ftrt_say_begin(&s);
	ftrt_say_text(&s, "FTRACE_ARGS_SOCKET ");
	ftrt_say_str(&s, sock);
	ftrt_say_text(&s, ": the modules' arguments are not recorded: ");
	ftrt_say_text(&s, why);
	if (path) {
		ftrt_say_text(&s, ", asked about ");
		ftrt_say_str(&s, path);
	}
	ftrt_say_end(&s);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until k is ready for events by the deadline: 0, or -1 (out of
 * time, or k closed by the program: fds.h). */
static int await(const struct ftrt_fd *k, short events, long deadline)
{
	for (;;) {
		long left = deadline - now_ms();
		if (left <= 0 || !ftrt_fd_ours(k))
			return -1;
		struct pollfd p = { k->fd, events, 0 };
		int k = poll(&p, 1, (int)left);
		if (k > 0)
			return 0;
		if (k < 0 && errno != EINTR)
			return -1;
	}
}

char *ftrt_args_ask(const char *path, const char *build_id, size_t *alen, size_t *rlen)
{
	const char *sock = ftrt_env(ENV_ARGS_SOCKET);
	if (!sock || !*sock || __atomic_load_n(&gone, __ATOMIC_RELAXED) || !path || strchr(path, '\n'))
		return NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(sock) >= sizeof sa.sun_path) {
		ask_failed(sock, "its path is too long", NULL);
		return NULL;
	}
	strcpy(sa.sun_path, sock);
	/* Each use of the socket checked first (fds.h): a program thread that
	 * closes descriptors it did not open never has its own written to or
	 * read from in its place. */
	struct ftrt_fd fd;
	if (ftrt_fd_keep(&fd, sys(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, 0, 0, 0)) != 0) {
		ask_failed(sock, "no socket", NULL);
		return NULL;
	}
	long deadline = now_ms() + ASK_TIMEOUT_MS;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	const char *why = NULL;
	if (!ftrt_fd_ours(&fd) || (connect(fd.fd, (struct sockaddr *)&sa, sizeof sa) != 0 &&
				   (errno != EAGAIN || await(&fd, POLLOUT, deadline) != 0))) {
		why = "no server there (ftpatch record is gone?)";
		goto out;
	}
	size_t plen = strlen(path), blen = strlen(build_id);
	size_t qlen = (blen ? blen : 1) + 1 + plen + 1;
	char *q = malloc(qlen);
	if (!q) {
		why = "no memory";
		goto out;
	}
	memcpy(q, blen ? build_id : "-", blen ? blen : 1);
	q[blen ? blen : 1] = ' ';
	memcpy(q + (blen ? blen : 1) + 1, path, plen);
	q[qlen - 1] = '\n';
	for (size_t done = 0; done < qlen && !why;) {
		ssize_t k = ftrt_fd_ours(&fd) ? send(fd.fd, q + done, qlen - done, MSG_NOSIGNAL) : (errno = EBADF, -1);
		if (k > 0)
			done += (size_t)k;
		else if (k < 0 && errno != EAGAIN && errno != EINTR)
			why = "the server closed";
		else if (k < 0 && errno == EAGAIN && await(&fd, POLLOUT, deadline) != 0)
			why = "no answer in time";
	}
	free(q);
	if (why)
		goto out;
	if (ftrt_fd_ours(&fd))
		shutdown(fd.fd, SHUT_WR);
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? 2 * cap : 4096;
			char *nb = ncap <= ASK_MAX ? realloc(buf, ncap) : NULL;
			if (!nb) {
				why = "an answer too big";
				goto out;
			}
			buf = nb, cap = ncap;
		}
		ssize_t k = ftrt_fd_ours(&fd) ? recv(fd.fd, buf + len, cap - len, 0) : (errno = EBADF, -1);
		if (k > 0) {
			len += (size_t)k;
			continue;
		}
		if (k == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN || await(&fd, POLLIN, deadline) != 0) {
			why = "no answer in time";
			goto out;
		}
	}
	char *nl = memchr(buf, '\n', len);
	char *nl2 = nl ? memchr(nl + 1, '\n', len - (size_t)(nl + 1 - buf)) : NULL;
	if (!nl2) {
		why = "an answer that is not two lines";
		goto out;
	}
	*alen = (size_t)(nl - buf);
	*rlen = (size_t)(nl2 - nl - 1);
out:
	if (why)
		ask_failed(sock, why, path);
	ftrt_fd_close(&fd);
	if (why) {
		free(buf);
		return NULL;
	}
	return buf;
}

