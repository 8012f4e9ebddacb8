/*
 * Library calls with arguments and return values to show
 * (tests/libargs_test.go): each of the C library's functions below is
 * called once, with values whose names the prototype table knows (open's
 * O_RDONLY|O_CLOEXEC, mmap's prot and flags, lseek's SEEK_END, fcntl's
 * F_GETFD, socket's AF_UNIX and SOCK_STREAM|SOCK_CLOEXEC, SIGUSR1), in
 * the directory it runs in. Prints the sum of what they returned.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static const char *volatile abc = "abc";

__attribute__((noinline)) void on_usr1(int sig)
{
	got = sig;
}

__attribute__((noinline)) long work(void)
{
	long sum = 0;
	int fd = creat("libargs.txt", 0644);
	sum += write(fd, "hello\n", 6);
	close(fd);
	fd = open("libargs.txt", O_RDONLY | O_CLOEXEC);
	sum += lseek(fd, 0, SEEK_END);
	sum += fcntl(fd, F_GETFD);
	char *volatile p = malloc(64);
	sum += (long)strlen(abc);
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sum += munmap(m, 4096);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sum += s >= 0;
	close(s);
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	sum += got;
	free(p);
	close(fd);
	unlink("libargs.txt");
	return sum;
}

int main(void)
{
	printf("%ld\n", work());
	return 0;
}
