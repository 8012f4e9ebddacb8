/*
 * Slow clients of a control socket: they hold connections without ever
 * sending a whole request.
 *
 *   ctlhold NAME N
 *
 * Connects N times to the abstract socket NAME (given without its
 * leading NUL; its trailing NUL is added), prints "held K" (K: the
 * connections made), then sends each connection still open one byte
 * ("s", never a newline) every second, until its stdin ends.
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

#define MAX 256

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[2]), held = 0, fd[MAX];
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t len = strlen(argv[1]);
	if (n > MAX || len + 2 > sizeof a.sun_path)
		return 2;
	memcpy(a.sun_path + 1, argv[1], len);
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len + 1);
	for (int i = 0; i < n; i++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (s >= 0 && connect(s, (struct sockaddr *)&a, alen) == 0)
			fd[held++] = s;
		else if (s >= 0)
			close(s);
	}
	printf("held %d\n", held);
	fflush(stdout);
	for (;;) {
		struct pollfd p = { 0, POLLIN, 0 };
		if (poll(&p, 1, 1000) != 0)
			break; /* stdin ended */
		for (int i = 0; i < held; i++)
			send(fd[i], "s", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	return 0;
}
