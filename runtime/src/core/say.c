/*
 * What the runtime writes on the program's stderr (say.h): lines built
 * on the stack, values in them escaped and cut, all of them within one
 * budget for the process's life.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "arch/sys.h"
#include "say.h"

/* The bytes of lines the process has written or dropped: past
 * SAY_BUDGET, nothing more but the one line that says so. A forked
 * child goes on from its parent's count. */
static _Atomic size_t said;

static void put(const char *p, size_t n)
{
	for (int tries = 0; n && tries < 8; tries++) {
		long w = sys(SYS_write, 2, (long)p, (long)n, 0, 0, 0);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			return;
		p += w, n -= (size_t)w;
	}
}

static void emit(const char *line, size_t n)
{
	static const char enough[] = "ftrt: further warnings suppressed (the runtime's warnings are bounded, 64 KiB a process)\n";
	size_t before = atomic_fetch_add_explicit(&said, n, memory_order_relaxed);
	if (before + n <= SAY_BUDGET)
		put(line, n);
	else if (before <= SAY_BUDGET)
		put(enough, sizeof enough - 1);
}

void ftrt_say(const char *line)
{
	emit(line, strlen(line));
}

void ftrt_say_begin(struct say *s)
{
	memcpy(s->b, "ftrt: ", 6);
	s->n = 6;
	s->full = 0;
}

/* Room for n bytes more, before the "...\n" a line may end with. */
static int room(struct say *s, size_t n)
{
	if (s->n + n + 4 > sizeof s->b) {
		s->full = 1;
		return 0;
	}
	return 1;
}

void ftrt_say_text(struct say *s, const char *t)
{
	size_t n = strlen(t);
	if (!room(s, n)) {
		n = sizeof s->b - 4 - s->n;
		s->full = 1;
	}
	memcpy(s->b + s->n, t, n);
	s->n += n;
}

/* The length of the UTF-8 sequence of a printable character at p (of
 * at most left bytes): 0 when it is not one (a bad sequence, or a C1
 * control character, U+0080-U+009F, which a terminal may act on). */
static size_t utf8(const unsigned char *p, size_t left)
{
	size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
	if (!n || n > left)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0)
		return 0;
	if ((n == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (n == 4 && p[0] == 0xf0 && p[1] < 0x90) || (n == 4 && p[0] == 0xf4 && p[1] > 0x8f))
		return 0; /* overlong, or past U+10FFFF */
	return n;
}

void ftrt_say_value(struct say *s, const char *v, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)v;
	size_t out = 0, i = 0;
	while (i < len) {
		char e[4];
		size_t n, k = utf8(p + i, len - i);
		const char *from = e;
		if (k)
			from = (const char *)p + i, n = k;
		else if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			from = (const char *)p + i, n = k = 1;
		else if (p[i] == '\\')
			e[0] = e[1] = '\\', n = 2, k = 1;
		else if (p[i] == '\n')
			e[0] = '\\', e[1] = 'n', n = 2, k = 1;
		else if (p[i] == '\t')
			e[0] = '\\', e[1] = 't', n = 2, k = 1;
		else
			e[0] = '\\', e[1] = 'x', e[2] = hex[p[i] >> 4], e[3] = hex[p[i] & 15], n = 4, k = 1;
		if (out + n > SAY_VALUE_MAX || !room(s, n))
			break;
		memcpy(s->b + s->n, from, n);
		s->n += n, out += n, i += k;
	}
	if (i < len && !s->full && room(s, 3)) { /* cut at SAY_VALUE_MAX */
		memcpy(s->b + s->n, "...", 3);
		s->n += 3;
	}
}

void ftrt_say_str(struct say *s, const char *v)
{
	if (v)
		ftrt_say_value(s, v, strnlen(v, SAY_LINE));
}

void ftrt_say_num(struct say *s, uint64_t v)
{
	char d[20];
	int n = 0;
	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (!room(s, (size_t)n))
		return;
	while (n)
		s->b[s->n++] = d[--n];
}

void ftrt_say_end(struct say *s)
{
	if (s->full) {
		memcpy(s->b + s->n, "...", 3);
		s->n += 3;
	}
	s->b[s->n++] = '\n';
	emit(s->b, s->n);
}
