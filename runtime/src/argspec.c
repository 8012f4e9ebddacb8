/*
 * FTRACE_ARGS and FTRACE_RETVAL's grammar (argspec.h; package
 * ftpatch/argspec's comment gives it whole).
 */
#include <string.h>

#include "argspec.h"

const char *ftrt_argspec_next(const char *p, const char **end)
{
	const char *e = strchr(p, ';');
	if (!e)
		e = p + strlen(p);
	*end = e;
	return *e ? e + 1 : NULL;
}

/* Whether the glob [p, end) is one: not empty, and holding no ',', '/',
 * '@', space or control character. */
static int glob_ok(const char *p, const char *end)
{
	if (p == end)
		return 0;
	for (; p < end; p++) {
		unsigned char c = (unsigned char)*p;
		if (c <= ' ' || c == 0x7f || c == ',' || c == '/' || c == '@')
			return 0;
	}
	return 1;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* An enum's name: a C identifier, then perhaps '.' and digits; at most
 * ARG_ENUM_MAX bytes. */
static int enum_ok(const char *p, const char *end)
{
	if (p == end || end - p > ARG_ENUM_MAX)
		return 0;
	const char *q = p;
	for (; q < end && *q != '.'; q++)
		if (!(*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (q > p && is_digit(*q))))
			return 0;
	if (q == p)
		return 0;
	if (q == end)
		return 1;
	if (++q == end)
		return 0;
	for (; q < end; q++)
		if (!is_digit(*q))
			return 0;
	return 1;
}

/* Where a format's value is. */
enum { IN_INT, IN_FP, IN_RET };

/* The format [p, end) of a value in w, into it: 0, or -1. */
static int format(const char *p, const char *end, int w, struct arg_item *it)
{
	size_t len = (size_t)(end - p);
	if (w == IN_RET && len == 1 && *p == '?') {
		it->type = ARG_NONE;
		return 0;
	}
	if (w != IN_FP && len >= 2 && p[0] == 'e' && p[1] == ':') {
		if (!enum_ok(p + 2, end))
			return -1;
		it->type = ARG_ENUM;
		it->enum_name = p + 2;
		it->enum_len = (unsigned char)(len - 2);
		return 0;
	}
	if (len == 0)
		return -1;
	const char *bits = p + 1;
	size_t blen = len - 1;
	int sized = 1;
	switch (*p) {
	case 'f':
		if (w == IN_INT)
			return -1;
		it->type = ARG_DOUBLE;
		it->fp = 1;
		break;
	case 'd':
	case 'i':
		it->type = ARG_INT;
		break;
	case 'u':
		it->type = ARG_UDEC;
		break;
	case 'x':
		it->type = ARG_UINT;
		break;
	case 'p':
		it->type = ARG_PTR, sized = 0;
		break;
	case 's':
		it->type = ARG_STRING, sized = 0;
		break;
	case 'c':
		it->type = ARG_CHAR, sized = 0;
		break;
	case 'b':
		it->type = ARG_BOOL, sized = 0;
		break;
	default:
		return -1;
	}
	if (w == IN_FP && *p != 'f')
		return -1;
	it->bits = 64;
	if (!sized)
		return blen ? -1 : 0;
	if (blen == 0)
		return 0;
	if (blen == 1 && bits[0] == '8')
		it->bits = 8;
	else if (blen == 2 && bits[0] == '1' && bits[1] == '6')
		it->bits = 16;
	else if (blen == 2 && bits[0] == '3' && bits[1] == '2')
		it->bits = 32;
	else if (blen == 2 && bits[0] == '6' && bits[1] == '4')
		it->bits = 64;
	else
		return -1;
	if (it->type == ARG_DOUBLE) {
		if (it->bits < 32)
			return -1;
		if (it->bits == 32)
			it->type = ARG_FLOAT;
	}
	return 0;
}

/* One item of FTRACE_ARGS, [p, end): "?", argN[/fmt] or fpargN[/ffmt]. */
static int item(const char *p, const char *end, struct arg_item *it)
{
	memset(it, 0, sizeof *it);
	if (end - p == 1 && *p == '?') {
		it->type = ARG_NONE;
		return 0;
	}
	int fp = 0, max = ARGSPEC_INT_REGS;
	if (end - p >= 5 && strncmp(p, "fparg", 5) == 0)
		fp = 1, max = ARGSPEC_FP_REGS, p += 5;
	else if (end - p >= 3 && strncmp(p, "arg", 3) == 0)
		p += 3;
	else
		return -1;
	if (p == end || *p < '1' || *p > '9')
		return -1;
	int n = 0;
	while (p < end && is_digit(*p)) {
		n = n * 10 + (*p++ - '0');
		if (n > max)
			return -1;
	}
	if (p < end && *p != '/')
		return -1;
	it->fp = (unsigned char)fp;
	it->n = (unsigned char)(n - 1);
	it->bits = 64;
	it->type = fp ? ARG_DOUBLE : ARG_INT;
	if (p == end)
		return 0;
	return format(p + 1, end, fp ? IN_FP : IN_INT, it);
}

int ftrt_argspec_entry(const char *p, const char *end, int ret, struct arg_entry *e)
{
	e->n = 0;
	if (ret) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		e->glob = p, e->glen = (size_t)((slash ? slash : end) - p);
		if (!glob_ok(p, p + e->glen))
			return -1;
		struct arg_item *it = &e->it[0];
		memset(it, 0, sizeof *it);
		it->type = ARG_INT, it->bits = 64;
		e->n = 1;
		return slash ? format(slash + 1, end, IN_RET, it) : 0;
	}
	const char *at = memchr(p, '@', (size_t)(end - p));
	if (!at || !glob_ok(p, at))
		return -1;
	e->glob = p, e->glen = (size_t)(at - p);
	for (const char *q = at + 1;;) {
		const char *c = memchr(q, ',', (size_t)(end - q));
		if (!c)
			c = end;
		if (e->n == ARG_MAX || item(q, c, &e->it[e->n]) != 0)
			return -1;
		e->n++;
		if (c == end)
			return 0;
		q = c + 1;
	}
}
