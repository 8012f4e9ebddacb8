/*
 * A fake control server, run as another user than the one asking:
 * ftpatch ctl must never take it for a process it does not listen for,
 * nor print what it answers as it is.
 *
 *   ctlfake link TARGET   makes $XDG_RUNTIME_DIR/ftpatch-SELF.sock a
 *                         symbolic link to TARGET
 *   ctlfake serve PID...  listens on $XDG_RUNTIME_DIR/ftpatch-SELF.sock
 *                         and on the abstract names a control socket of
 *                         its own and of each PID would have
 *                         ("ftpatch-PID-0123456789abcdef" and a NUL),
 *                         prints each request it is sent ("request
 *                         LINE") and answers it with terminal escape
 *                         sequences (OSC 52 writes the clipboard, CSI 2J
 *                         clears the screen)
 *
 * Either prints "ready" and runs until its stdin ends.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX 16

static const char junk[] = "ok\npid 1\ntracing \x1b]52;c;cm0gLXJmIH4K\x07\x1b[2Jon\n";

/* A listening socket at path, or at the abstract name of pid's control
 * socket when path is NULL; -1 when it cannot be made. */
static int listen_at(const char *path, int pid)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len = sizeof a;
	if (path) {
		snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	} else {
		int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "ftpatch-%d-0123456789abcdef", pid);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n + 1);
	}
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, len) != 0 || listen(s, 8) != 0)
		return -1;
	return s;
}

int main(int argc, char **argv)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char own[256];
	if (argc < 2 || !xdg)
		return 2;
	snprintf(own, sizeof own, "%s/ftpatch-%d.sock", xdg, (int)getpid());
	struct pollfd p[MAX];
	int n = 0;
	p[n++] = (struct pollfd){ 0, POLLIN, 0 };
	if (strcmp(argv[1], "link") == 0) {
		if (argc != 3 || symlink(argv[2], own) != 0)
			return 3;
	} else if (strcmp(argv[1], "serve") == 0) {
		p[n++] = (struct pollfd){ listen_at(own, 0), POLLIN, 0 };
		p[n++] = (struct pollfd){ listen_at(NULL, (int)getpid()), POLLIN, 0 };
		for (int i = 2; i < argc && n < MAX; i++)
			p[n++] = (struct pollfd){ listen_at(NULL, atoi(argv[i])), POLLIN, 0 };
		for (int i = 1; i < n; i++)
			if (p[i].fd < 0)
				return 4;
	} else {
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (poll(p, (nfds_t)n, -1) < 0)
			return 5;
		char buf[4096];
		if (p[0].revents && read(0, buf, sizeof buf) <= 0)
			break;
		for (int i = 1; i < n; i++) {
			if (!p[i].revents)
				continue;
			int c = accept(p[i].fd, NULL, NULL);
			if (c < 0)
				continue;
			ssize_t k = read(c, buf, sizeof buf - 1);
			buf[k > 0 ? k : 0] = 0;
			buf[strcspn(buf, "\n")] = 0;
			printf("request %s\n", buf);
			fflush(stdout);
			write(c, junk, sizeof junk - 1);
			close(c);
		}
	}
	unlink(own);
	return 0;
}
