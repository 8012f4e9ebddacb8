/*
 * What an item of FTRACE_ARGS or FTRACE_RETVAL reads of a call, and how
 * it is written in the record (abi.h lays it out), for capture.c; and
 * the stack arguments a callback's ftrace_regs_get_argument reads
 * (fregs.c), read the same way.
 *
 * Values are recorded as they are in the registers: an integer of fewer
 * bits sign- or zero-extended from them (the rest of the register is
 * undefined), a char, bool or float from its low bits; an enum whole,
 * with its enum's name (the reader finds its enumerators in the trace's
 * enums file, which ftpatch record writes); a long double's 16 bytes; a
 * struct's bytes, gathered from its registers or memory, with its
 * layout's text (the reader shows the members by it).
 *
 * The stack's arguments are the caller's, above the function's entry
 * stack pointer (each architecture says where that is: fregs.c; at an
 * arm64 -pg site only when the prologue can be read, else the item is
 * not recorded, ?). Those on the page of the word just below the first
 * (the return address on x86-64, the ops caller's frame on arm64: both
 * mapped) are read as they are; any further, through the reader that
 * never faults (read_mem), so an item past a function's real arguments,
 * at the top of a stack with nothing mapped above it (a makecontext
 * stack's first function), costs a value, never the program. Memory
 * behind a pointer (a string, *argN's struct) is only ever read that
 * way: process_vm_readv, which fails on a bad pointer rather than
 * faulting (or, where it is refused, as under qemu-user, through a pipe
 * that the kernel reads the bytes into); a string or struct that cannot
 * be read is recorded as unreadable, with its address. A long double
 * returned on x86-64 is in the x87's st0, which the return path saves
 * with the vector registers (fgraph.c) before any of the runtime's code
 * runs.
 *
 * Signal-safe, no allocation, no lock: it runs in a graph user's entry
 * and return.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "arch/fds.h"
#include "arch/sys.h"
#include "argread.h"
#include "argspec.h"
#include "fgraph.h"
#include "ftrace.h"

/* The pipe read_mem reads through where process_vm_readv is refused
 * (qemu-user), each end checked before each use (fds.h), and whether a
 * reader holds it. */
static struct ftrt_fd pipe_end[2] = { FTRT_FD_NONE, FTRT_FD_NONE };
static int pipe_busy;

/* The pipe, made anew: 0, or -1 (none). */
static int make_pipe(void)
{
	int fd[2];
	ftrt_fd_close(&pipe_end[0]);
	ftrt_fd_close(&pipe_end[1]);
	if (sys(SYS_pipe2, (long)fd, O_CLOEXEC | O_NONBLOCK, 0, 0, 0, 0) != 0)
		return -1;
	if (ftrt_fd_keep(&pipe_end[0], fd[0]) == 0 && ftrt_fd_keep(&pipe_end[1], fd[1]) == 0)
		return 0;
	ftrt_fd_close(&pipe_end[0]);
	ftrt_fd_close(&pipe_end[1]);
	return -1;
}

/* A forked child's pipe is its own: the parent's would mix their bytes. */
static void after_fork(void)
{
	if (pipe_end[0].fd >= 0)
		make_pipe();
	pipe_busy = 0;
}

void ftrt_argread_start(void)
{
	static int started;
	if (__atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL))
		return;
	make_pipe();
	pthread_atfork(NULL, NULL, after_fork);
}

/* len bytes at src into dst, by the kernel, which fails (EFAULT) where a
 * load would fault: the bytes read, or -errno. */
static long read_mem(void *dst, uintptr_t src, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)src, len };
	long n = sys(SYS_process_vm_readv, sys(SYS_getpid, 0, 0, 0, 0, 0, 0), (long)&l, 1, (long)&r, 1, 0);
	if (n != -ENOSYS && n != -EPERM)
		return n;
	/* No process_vm_readv here: the kernel copies the bytes into a pipe
	 * (EFAULT for a bad address) and back, one reader at a time. */
	if (pipe_end[0].fd < 0 || __atomic_exchange_n(&pipe_busy, 1, __ATOMIC_ACQUIRE))
		return -EBUSY;
	/* Either end closed by the program (its number perhaps its own now):
	 * the pipe made again, never a write of the program's memory to a
	 * descriptor of its own. */
	if ((ftrt_fd_ours(&pipe_end[0]) && ftrt_fd_ours(&pipe_end[1])) || make_pipe() == 0) {
		n = sys(SYS_write, pipe_end[1].fd, (long)src, (long)len, 0, 0, 0);
		if (n > 0)
			n = sys(SYS_read, pipe_end[0].fd, (long)dst, n, 0, 0, 0);
	} else {
		n = -EBADF;
	}
	__atomic_store_n(&pipe_busy, 0, __ATOMIC_RELEASE);
	return n;
}

/* A string at p into out (at most ARG_STRING_MAX bytes, its NUL not
 * kept): its length, or -1 when p cannot be read. */
static int read_string(uintptr_t p, char *out, int *truncated)
{
	/* In pieces that end at a page's end: a string near the end of a
	 * readable page, before an unreadable one, is read whole. */
	int len = 0;
	*truncated = 0;
	while (len <= ARG_STRING_MAX) {
		uintptr_t at = p + (uintptr_t)len;
		size_t want = 4096 - (at & 4095);
		if (want > (size_t)(ARG_STRING_MAX + 1 - len))
			want = (size_t)(ARG_STRING_MAX + 1 - len);
		char buf[ARG_STRING_MAX + 1];
		long n = read_mem(buf, at, want);
		if (n <= 0)
			return len ? len : -1;
		for (long i = 0; i < n; i++) {
			if (!buf[i])
				return len;
			if (len == ARG_STRING_MAX) {
				*truncated = 1;
				return len;
			}
			out[len++] = buf[i];
		}
	}
	*truncated = 1;
	return ARG_STRING_MAX;
}

/* A string's length word and bytes, len of them from s, to w at *k. */
static void put_bytes(uint64_t *w, uint32_t *k, const char *s, int len, int trunc)
{
	w[(*k)++] = (uint64_t)len | (trunc ? ARG_TRUNCATED : 0);
	uint32_t words = ((uint32_t)len + 7) / 8;
	memset(&w[*k], 0, words * 8);
	memcpy(&w[*k], s, (size_t)len);
	*k += words;
}

/* Add item it with the register's value v to w at *k, which it moves
 * past it: a value of fewer bits extended from them (the register's
 * upper bits are undefined), a string read, an enum's name after it. */
static void put_item(uint64_t *w, uint32_t *k, const struct arg_item *it, uint64_t v)
{
	switch (it->type) {
	case ARG_NONE:
		return;
	case ARG_STRING: {
		char s[ARG_STRING_MAX + 1];
		int trunc, len = read_string((uintptr_t)v, s, &trunc);
		if (len < 0) {
			w[(*k)++] = ARG_UNREADABLE;
			w[(*k)++] = v;
			return;
		}
		put_bytes(w, k, s, len, trunc);
		return;
	}
	case ARG_ENUM:
		w[(*k)++] = v;
		put_bytes(w, k, it->text, it->text_len, 0);
		return;
	}
	w[(*k)++] = ftrt_arg_word(it, v);
}

_Static_assert(2 + ARG_STRUCT_MAX / 8 + ARG_LAYOUT_MAX / 8 <= ARG_ITEM_WORDS_MAX && 2 + ARG_ENUM_MAX / 8 <= ARG_ITEM_WORDS_MAX &&
		       2 + ARG_STRING_MAX / 8 <= ARG_ITEM_WORDS_MAX,
	       "a struct's, an enum's or a string's words fit an item's");

/* len bytes of the stack arguments at base from off into dst: 0, or -1
 * (where they are is not known, or they cannot be read). The page of
 * the word below base is known mapped (each architecture's caller of the
 * runtime wrote there: fregs.c); what lies on it is read as it is. */
static int stack_bytes(uintptr_t base, size_t off, void *dst, size_t len)
{
	uintptr_t at = base + off;
	if (!base)
		return -1;
	if (((base - 1) >> 12) == ((at + len - 1) >> 12)) {
		__builtin_memcpy(dst, (const void *)at, len); /* on a page known mapped */
		return 0;
	}
	return read_mem(dst, at, len) == (long)len ? 0 : -1;
}

/* len bytes of the call's stack arguments from off into dst, as
 * stack_bytes. */
static int stack_read(struct arg_call *c, size_t off, void *dst, size_t len)
{
	if (!c->looked)
		c->stack = ftrt_arch_stack_args(c->f, c->ip), c->looked = 1;
	return stack_bytes(c->stack, off, dst, len);
}

unsigned long ftrt_stack_word(uintptr_t base, unsigned i)
{
	uint64_t v;
	if (i >= ARG_STACK_MAX / 8 || stack_bytes(base, 8 * (size_t)i, &v, 8) != 0)
		return 0;
	return (unsigned long)v;
}

/* The call's integer argument i, from 0: a register, or past them the
 * stack's word. 0, or -1. */
static int int_word(struct arg_call *c, unsigned i, uint64_t *v)
{
	if (i < ARGSPEC_INT_REGS) {
		if (!ftrt_arch_int_arg_known(c->f, i))
			return -1;
		*v = ftrace_regs_get_argument(c->f, i);
		return 0;
	}
	return stack_read(c, 8 * (i - ARGSPEC_INT_REGS), v, 8);
}

/* The bytes item it takes: a word, a long double's 16, a struct's. */
static size_t item_size(const struct arg_item *it)
{
	return it->type == ARG_STRUCT ? it->size : it->type == ARG_F80 || it->type == ARG_F128 ? 16 : 8;
}

/* size bytes from vector registers n on, per bytes from each, into d. */
static void vec_bytes(struct ftrace_regs *f, unsigned n, size_t per, size_t size, unsigned char *d)
{
	for (size_t at = 0; at < size; at += per, n++) {
		uint64_t r[2];
		ftrt_arch_vec(f, n, r);
		__builtin_memcpy(d + at, r, size - at < per ? size - at : per);
	}
}

/* What argument item it reads of the call, into v: 0; -1 when it could
 * not be read (the stack's place not known, or unreadable); -2 when the
 * memory a pointer points to could not be, at *at. */
static int fetch(struct arg_call *c, const struct arg_item *it, uint64_t v[ARG_STRUCT_MAX / 8], uintptr_t *at)
{
	size_t size = item_size(it);
	if (it->deref) {
		uint64_t p;
		if ((it->stack ? stack_read(c, it->off, &p, 8) : int_word(c, it->n, &p)) != 0)
			return -1;
		*at = p;
		return read_mem(v, p, size) == (long)size ? 0 : -2;
	}
	if (it->stack)
		return stack_read(c, it->off, v, size);
	if (it->fp) {
		vec_bytes(c->f, it->n, it->type == ARG_STRUCT ? it->per_reg : size, size, (unsigned char *)v);
		return 0;
	}
	for (unsigned i = 0, n = it->n, fpn = it->fpn; 8 * i < size; i++) {
		if (it->mixed && !(it->ints >> i & 1)) {
			vec_bytes(c->f, fpn++, 8, 8, (unsigned char *)&v[i]); /* an eightbyte of floats */
			continue;
		}
		if (int_word(c, n++, &v[i]) != 0)
			return -1;
	}
	return 0;
}

/* Add item it, whose bytes are v (got is fetch's or ret_fetch's
 * answer), to w at *k: its type, ARG_NONE when it was not read. */
static unsigned put_value(uint64_t *w, uint32_t *k, const struct arg_item *it, const uint64_t *v, int got, uintptr_t at)
{
	if (it->type == ARG_STRUCT && got == -2) {
		w[(*k)++] = ARG_UNREADABLE;
		w[(*k)++] = at;
		return it->type;
	}
	if (got != 0)
		return ARG_NONE;
	switch (it->type) {
	case ARG_F80:
	case ARG_F128:
		w[(*k)++] = v[0];
		w[(*k)++] = v[1];
		break;
	case ARG_STRUCT:
		put_bytes(w, k, (const char *)v, it->size, 0);
		put_bytes(w, k, it->text, it->text_len, 0);
		break;
	default:
		put_item(w, k, it, v[0]);
	}
	return it->type;
}


unsigned ftrt_arg_put(uint64_t *w, uint32_t *k, struct arg_call *c, const struct arg_item *it)
{
	uint64_t v[ARG_STRUCT_MAX / 8] = { 0 };
	uintptr_t at = 0;
	return put_value(w, k, it, v, it->type == ARG_NONE ? -1 : fetch(c, it, v, &at), at);
}

/* What return value item it reads, into v, as fetch does: the integer
 * return registers, the vector ones (it->fp; x86-64's struct: each
 * eightbyte from those of its class), the x87's st0 (f80), or the
 * struct returned in memory whose address rax holds (deref). */
static int ret_fetch(struct ftrace_regs *f, const unsigned char *fp, const struct arg_item *it, uint64_t v[ARG_STRUCT_MAX / 8], uintptr_t *at)
{
	size_t size = item_size(it);
	if (it->type == ARG_NONE)
		return -1;
	if (it->type == ARG_F80)
		return fp ? ftrt_arch_ret_x87(fp, v) : -1;
	if (it->deref) {
		*at = ftrt_arch_ret_int(f, 0);
		return read_mem(v, *at, size) == (long)size ? 0 : -2;
	}
	if (it->fp && it->type != ARG_STRUCT) {
		vec_bytes(f, 0, size, size, (unsigned char *)v);
		return 0;
	}
#if defined(__aarch64__)
	if (it->fp) {
		vec_bytes(f, 0, it->per_reg, size, (unsigned char *)v); /* an HFA: a member a register */
		return 0;
	}
	v[0] = ftrt_arch_ret_int(f, 0);
	v[1] = ftrt_arch_ret_int(f, 1);
#else
	/* Each eightbyte from the next return register of its class: rax,
	 * rdx; xmm0, xmm1. */
	for (unsigned i = 0, n = 0, fpn = 0; i < 2 && 8 * i < size; i++) {
		if (it->type == ARG_STRUCT && !(it->ints >> i & 1))
			vec_bytes(f, fpn++, 8, 8, (unsigned char *)&v[i]);
		else
			v[i] = ftrt_arch_ret_int(f, n++);
	}
#endif
	return 0;
}

unsigned ftrt_ret_put(uint64_t *w, uint32_t *k, struct ftrace_regs *f, const unsigned char *fp, const struct arg_item *it)
{
	uint64_t v[ARG_STRUCT_MAX / 8] = { 0 };
	uintptr_t at = 0;
	return put_value(w, k, it, v, ret_fetch(f, fp, it, v, &at), at);
}
