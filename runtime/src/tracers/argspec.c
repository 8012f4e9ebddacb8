/*
 * FTRACE_ARGS and FTRACE_RETVAL's grammar (argspec.h; package
 * ftpatch/argspec's comment gives it whole).
 */
#include <stdint.h>
#include <string.h>

#include "argspec.h"

/* The limits, in the reasons of a refusal. */
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)
#define STACK_MAX TEXT(ARG_STACK_MAX)
#define ITEMS_MAX TEXT(ARG_MAX)
/* argN's numbers: the registers', then the stack's words in its first
 * ARG_STACK_MAX bytes. */
#if defined(__aarch64__)
#define ARGN_LAST 72
#define ARGN_RANGES "arg1-arg8 are registers, arg9-arg72"
#else
#define ARGN_LAST 70
#define ARGN_RANGES "arg1-arg6 are registers, arg7-arg70"
#endif
_Static_assert(ARGN_LAST == ARGSPEC_INT_REGS + ARG_STACK_MAX / 8, "ARGN_RANGES names the registers and the stack's words");

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

/* What a struct's layout says (layout()): its bytes, and, when it
 * holds only floating-point members, their count and their fewest and
 * most bits (count 0: it holds something else); its eightbytes that
 * hold something else (bit e: eightbyte e). */
struct shape {
	unsigned size, count, lo, hi, ints;
};

/* The bytes and alignment of the scalar member [p, end) of a layout
 * into *size; its bits into *fbits when it is floating point (else 0):
 * 0, or -1. */
static int member(const char *p, const char *end, unsigned *size, unsigned *fbits)
{
	size_t len = (size_t)(end - p);
	*fbits = 0;
	if (len == 1 && (*p == 'p' || *p == 'c' || *p == 'b')) {
		*size = *p == 'p' ? 8 : 1;
		return 0;
	}
	if (len == 0 || (*p != 'd' && *p != 'i' && *p != 'u' && *p != 'x' && *p != 'f'))
		return -1;
	unsigned bits = 64;
	if (len == 2 && p[1] == '8' && *p != 'f')
		bits = 8;
	else if (len == 3 && p[1] == '1' && p[2] == '6' && *p != 'f')
		bits = 16;
	else if (len == 3 && p[1] == '3' && p[2] == '2')
		bits = 32;
	else if (len == 3 && p[1] == '8' && p[2] == '0' && *p == 'f')
		bits = 80;
	else if (len == 4 && p[1] == '1' && p[2] == '2' && p[3] == '8' && *p == 'f')
		bits = 128;
	else if (len != 1 && !(len == 3 && p[1] == '6' && p[2] == '4'))
		return -1;
	*size = bits > 64 ? 16 : bits / 8;
	if (*p == 'f')
		*fbits = bits;
	return 0;
}

/* A struct being read: its members so far. */
struct frame {
	unsigned size, align, count, lo, hi, members;
	int other;     /* a member that is not floating point */
	uint64_t mask; /* its bytes that hold one (bit b: byte b, of the first 64) */
};

/* Add a member of size bytes, aligned to align, of count floating-point
 * members of lo to hi bits (count 0: not only floats), whose bytes that
 * hold something else are mask, to f. */
static void add(struct frame *f, unsigned size, unsigned align, unsigned count, unsigned lo, unsigned hi, uint64_t mask)
{
	unsigned off = (f->size + align - 1) / align * align;
	if (off < 64)
		f->mask |= mask << off;
	f->size = off + size;
	if (align > f->align)
		f->align = align;
	f->members++;
	if (!count)
		f->other = 1;
	f->count += count;
	if (lo < f->lo)
		f->lo = lo;
	if (hi > f->hi)
		f->hi = hi;
}

/* The layout [p, end) ({i32,i32}: package ftpatch/trace's Layout gives
 * the grammar and C's placement of members), into s: 0, or -1. */
static int layout(const char *p, const char *end, struct shape *s)
{
	struct frame st[ARG_LAYOUT_MAX / 2 + 1];
	int d = 0, more = 0;
	if (end - p > ARG_LAYOUT_MAX || p == end || *p != '{')
		return -1;
	st[0] = (struct frame){ 0, 1, 0, 128, 0, 0, 0, 0 };
	p++;
	for (;;) {
		/* A member. */
		if (d == 0 && st[0].members && end - p >= 4 && memcmp(p, "...}", 4) == 0) {
			more = 1;
			p += 3;
		} else if (p < end && *p == '{') {
			st[++d] = (struct frame){ 0, 1, 0, 128, 0, 0, 0, 0 };
			p++;
			continue;
		} else {
			const char *q = p;
			while (q < end && *q != ',' && *q != '}')
				q++;
			unsigned size, fbits;
			if (member(p, q, &size, &fbits) != 0)
				return -1;
			add(&st[d], size, size, fbits ? 1 : 0, fbits ? fbits : 128, fbits, fbits ? 0 : (1ull << size) - 1);
			p = q;
		}
		/* What follows it: another, or the end of one struct or more. */
		for (;;) {
			if (p == end)
				return -1;
			if (*p == ',' && !more) {
				p++;
				break;
			}
			if (*p != '}')
				return -1;
			p++;
			struct frame *f = &st[d];
			f->size = (f->size + f->align - 1) / f->align * f->align;
			if (d == 0) {
				if (p != end || f->size > ARG_STRUCT_MAX)
					return -1;
				*s = (struct shape){ f->size, f->other ? 0 : f->count, f->lo, f->hi, 0 };
				for (unsigned e = 0; e < 8; e++)
					if (f->mask >> (8 * e) & 0xff)
						s->ints |= 1u << e;
				return 0;
			}
			d--;
			add(&st[d], f->size, f->align, f->other ? 0 : f->count, f->lo, f->hi, f->mask);
		}
	}
}

/* Where a format's value is. */
enum { IN_INT, IN_FP, IN_STACK, IN_RET };

/* The format [p, end) of a value in w, into it: 0, or -1. A struct's
 * shape into *s. */
static int format(const char *p, const char *end, int w, struct arg_item *it, struct shape *s)
{
	size_t len = (size_t)(end - p);
	if (len && *p == '{') {
		if (layout(p, end, s) != 0 || (w == IN_FP && !s->count))
			return -1;
		it->type = ARG_STRUCT;
		it->size = (unsigned char)s->size;
		it->ints = (unsigned char)s->ints;
		it->text = p;
		it->text_len = (unsigned char)len;
		return 0;
	}
	if (w != IN_FP && len >= 2 && p[0] == 'e' && p[1] == ':') {
		if (!enum_ok(p + 2, end))
			return -1;
		it->type = ARG_ENUM;
		it->text = p + 2;
		it->text_len = (unsigned char)(len - 2);
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
		it->fp = w != IN_STACK;
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
	else if (blen == 2 && bits[0] == '8' && bits[1] == '0' && it->type == ARG_DOUBLE)
		it->bits = 80;
	else if (blen == 3 && bits[0] == '1' && bits[1] == '2' && bits[2] == '8' && it->type == ARG_DOUBLE)
		it->bits = 128;
	else
		return -1;
	if (it->type == ARG_DOUBLE) {
		switch (it->bits) {
		case 8:
		case 16:
			return -1;
		case 32:
			it->type = ARG_FLOAT;
			break;
		case 80:
#if defined(__aarch64__)
			return -1; /* arm64's long double is binary128 */
#else
			if (w == IN_FP)
				return -1; /* no vector register holds one */
			it->type = ARG_F80, it->size = 16;
			break;
#endif
		case 128:
			it->type = ARG_F128, it->size = 16;
			break;
		}
	}
	return 0;
}

/* Whether struct item it, of shape s, fits the registers it names (the
 * Go side's fitLayout). */
static int fits(const struct arg_item *it, const struct shape *s)
{
	unsigned words = (s->size + 7) / 8;
	if (it->stack)
		return 1;
#if defined(__aarch64__)
	if (it->fp)
		return s->count <= 4 && s->lo == s->hi && it->n + s->count <= ARGSPEC_FP_REGS;
#else
	if (it->fp && s->hi > 64)
		return 0;
#endif
	if (s->size > 16)
		return 0;
	return !it->fp || it->n + words <= ARGSPEC_FP_REGS;
}

/* A number at *p, of no leading zero (unless zero and zero_ok), moved
 * past; -1 when there is none. Numbers past every limit read as 1 << 20. */
static long number(const char **p, const char *end, int zero_ok)
{
	const char *q = *p;
	if (q == end || !is_digit(*q) || (*q == '0' && (!zero_ok || (q + 1 < end && is_digit(q[1])))))
		return -1;
	long n = 0;
	while (q < end && is_digit(*q))
		if ((n = n * 10 + (*q++ - '0')) > 1 << 20)
			n = 1 << 20; /* past every limit, and a multiple of 8 */
	*p = q;
	return n;
}

/* Whether argN+fpargM item it, of shape s, fits its registers (the Go
 * side's fitMixed): x86-64's alone. */
static int fits_mixed(const struct arg_item *it, const struct shape *s)
{
#if defined(__aarch64__)
	(void)it, (void)s;
	return 0;
#else
	unsigned words = (s->size + 7) / 8, in_ints = (unsigned)__builtin_popcount(s->ints & ((1u << words) - 1));
	if (it->type != ARG_STRUCT || s->size > 16 || it->n >= ARGSPEC_INT_REGS)
		return 0;
	return it->n + in_ints <= ARGSPEC_INT_REGS && it->fpn + (words - in_ints) <= ARGSPEC_FP_REGS;
#endif
}

/* One item of FTRACE_ARGS, [p, end): "?", [*]argN[/fmt], fpargN[/fmt],
 * [*]stack+OFF[/fmt] or argN+fpargM/layout. NULL, or why it is refused. */
static const char *item(const char *p, const char *end, struct arg_item *it)
{
	memset(it, 0, sizeof *it);
	if (end - p == 1 && *p == '?') {
		it->type = ARG_NONE;
		return NULL;
	}
	int w = IN_INT;
	if (p < end && *p == '*')
		it->deref = 1, p++;
	if (!it->deref && end - p >= 5 && strncmp(p, "fparg", 5) == 0)
		it->fp = 1, w = IN_FP, p += 5;
	else if (end - p >= 3 && strncmp(p, "arg", 3) == 0)
		p += 3;
	else if (end - p >= 6 && strncmp(p, "stack+", 6) == 0)
		it->stack = 1, w = IN_STACK, p += 6;
	else
		return "an item is argN, fpargN, stack+OFF, *argN/{...}, *stack+OFF/{...}, argN+fpargM/{...} or ?";
	long n = number(&p, end, it->stack), m = 0;
	if (n < 0)
		return it->stack ? "stack+OFF: OFF a number" : "argN, fpargN: N a number from 1";
	if (!it->deref && !it->fp && !it->stack && end - p >= 6 && strncmp(p, "+fparg", 6) == 0) {
		p += 6;
		if ((m = number(&p, end, 0)) < 0 || m > ARGSPEC_FP_REGS)
			return "argN+fpargM: M a floating-point register's number";
		it->mixed = 1;
		it->fpn = (unsigned char)(m - 1);
	}
	if (p < end && *p != '/')
		return "an item's format follows a '/'";
	if (it->stack && (n % 8 || n > ARG_STACK_MAX))
		return "stack+OFF: OFF a multiple of 8, within the stack arguments' first " STACK_MAX " bytes";
	if (it->fp && n > ARGSPEC_FP_REGS)
		return "fpargN: past the floating-point argument registers";
	if (!it->stack && n > ARGN_LAST)
		return "argN: " ARGN_RANGES " the stack's words after them, in its arguments' first " STACK_MAX " bytes";
	if (it->stack)
		it->off = (unsigned short)n;
	else
		it->n = (unsigned char)(n - 1);
	it->bits = 64;
	it->type = it->fp ? ARG_DOUBLE : ARG_INT;
	struct shape s = { 0, 0, 0, 0, 0 };
	if (p < end) {
		unsigned char fp = it->fp;
		if (format(p + 1, end, w, it, &s) != 0)
			return "a format unknown, or not one for where the item is";
		it->fp = fp;
	}
	if (it->deref && it->type != ARG_STRUCT)
		return "*: the struct's layout, {...}, is the format";
	if (it->mixed)
		return fits_mixed(it, &s) ? NULL : "argN+fpargM: the struct does not fit those registers";
	it->reg = !it->stack && !it->deref && (it->fp || it->n < ARGSPEC_INT_REGS) && it->type != ARG_STRUCT && it->type != ARG_F80 &&
		  it->type != ARG_F128 && it->type != ARG_STRING && it->type != ARG_ENUM;
	/* What it reads, and of the stack from where. */
	long size = 8, at = -1;
	if (it->stack)
		at = it->off;
	else if (!it->fp && it->n >= ARGSPEC_INT_REGS)
		at = 8 * (it->n - ARGSPEC_INT_REGS);
	if (it->type == ARG_F80 || it->type == ARG_F128)
		size = 16;
	if (it->type == ARG_STRUCT && !it->deref) {
		if (!fits(it, &s))
			return "the struct does not fit the registers it names";
		size = (s.size + 7) / 8 * 8;
		it->per_reg = 8;
#if defined(__aarch64__)
		if (it->fp)
			it->per_reg = (unsigned char)(s.lo > 64 ? 16 : s.lo / 8); /* a member a register */
#endif
	}
	return at >= 0 && at + size > ARG_STACK_MAX ? "it reads past the stack arguments' first " STACK_MAX " bytes" : NULL;
}

/* A return value's format [p, end), into it: NULL, or why it is
 * refused. */
static const char *ret_format(const char *p, const char *end, struct arg_item *it)
{
	struct shape s = { 0, 0, 0, 0, 0 };
	if (end - p == 1 && *p == '?') {
		it->type = ARG_NONE;
		return NULL;
	}
	if (p < end && *p == '*') {
#if defined(__aarch64__)
		return "*{...}: x8, the address, is not kept to the return"; /* on arm64 */
#else
		if (end - p < 2 || p[1] != '{' || format(p + 1, end, IN_RET, it, &s) != 0)
			return "*: the struct's layout, {...}, is the format";
		it->deref = 1;
		return NULL;
#endif
	}
	if (format(p, end, IN_RET, it, &s) != 0)
		return "a format unknown, or not one of a return value";
	if (it->type != ARG_STRUCT)
		return NULL;
	it->per_reg = 8;
#if defined(__aarch64__)
	if (s.count >= 1 && s.count <= 4 && s.lo == s.hi)
		it->fp = 1, it->per_reg = (unsigned char)(s.lo > 64 ? 16 : s.lo / 8); /* v0-v3, a member each */
#else
	if (s.count && s.hi > 64)
		return "a long double's struct is returned in memory: *{...}";
	if (s.count)
		it->fp = 1; /* xmm0, xmm1 */
	if (s.size > 16)
		return "a struct of more than 16 bytes is returned in memory: *{...}";
#endif
	return s.size > 16 && !it->fp ? "a struct of more than 16 bytes is returned in memory" : NULL;
}

const char *ftrt_argspec_entry(const char *p, const char *end, int ret, struct arg_entry *e)
{
	e->n = 0;
	if (ret) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		e->glob = p, e->glen = (size_t)((slash ? slash : end) - p);
		if (!glob_ok(p, p + e->glen))
			return "the glob is empty, or holds a ',', '@', space or control character";
		struct arg_item *it = &e->it[0];
		memset(it, 0, sizeof *it);
		it->type = ARG_INT, it->bits = 64;
		e->n = 1;
		return slash ? ret_format(slash + 1, end, it) : NULL;
	}
	const char *at = memchr(p, '@', (size_t)(end - p));
	if (!at)
		return "no '@' after the glob";
	if (!glob_ok(p, at))
		return "the glob is empty, or holds a ',', '/', space or control character";
	e->glob = p, e->glen = (size_t)(at - p);
	for (const char *q = at + 1;;) {
		/* The item's end: a comma outside a layout's braces. */
		const char *c = q;
		for (int depth = 0; c < end && (depth || *c != ','); c++)
			depth += (*c == '{') - (*c == '}');
		if (e->n == ARG_MAX)
			return "more than " ITEMS_MAX " items: a record holds at most " ITEMS_MAX;
		const char *why = item(q, c, &e->it[e->n]);
		if (why)
			return why;
		e->n++;
		if (c == end)
			return NULL;
		q = c + 1;
	}
}
