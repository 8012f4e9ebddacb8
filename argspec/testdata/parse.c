/*
 * Runs the runtime's parser of FTRACE_ARGS and FTRACE_RETVAL
 * (runtime/src/tracers/argspec.c) over the specs on standard input, one
 * a line, "A TEXT" (FTRACE_ARGS) or "R TEXT" (FTRACE_RETVAL), and prints for
 * each "ok CANONICAL" (every entry's items as package argspec's
 * Item.String writes them), then, for each struct item, " S" and its
 * bytes as the runtime reckons them (and for a return value, "F" when it
 * reads them from the floating-point registers), "I" and the mask of its
 * eightbytes that hold more than floats, or "bad" (an entry refused). TestRuntimeParser builds it for each architecture.
 */
#include <stdio.h>
#include <string.h>

#include "tracers/argspec.h"

/* A layout's canonical text: every member i, u or x and its bits, f and
 * its bits, p, c or b. */
static void layout(const char *p, int len, char *out)
{
	const char *end = p + len;
	while (p < end) {
		if (*p == '{' || *p == '}' || *p == ',' || *p == '.') {
			*out++ = *p++;
			continue;
		}
		const char *q = p;
		while (q < end && *q != ',' && *q != '}')
			q++;
		char k = *p == 'd' ? 'i' : *p;
		if (k == 'p' || k == 'c' || k == 'b')
			out += sprintf(out, "%c", k);
		else
			out += sprintf(out, "%c%.*s", k, q - p > 1 ? (int)(q - p - 1) : 2, q - p > 1 ? p + 1 : "64");
		p = q;
	}
	*out = 0;
}

static void format(const struct arg_item *it, char *out, size_t size)
{
	char l[2 * ARG_LAYOUT_MAX];
	switch (it->type) {
	case ARG_NONE: snprintf(out, size, "?"); break;
	case ARG_INT: snprintf(out, size, "i%d", it->bits); break;
	case ARG_UDEC: snprintf(out, size, "u%d", it->bits); break;
	case ARG_UINT: snprintf(out, size, "x%d", it->bits); break;
	case ARG_PTR: snprintf(out, size, "p"); break;
	case ARG_STRING: snprintf(out, size, "s"); break;
	case ARG_CHAR: snprintf(out, size, "c"); break;
	case ARG_BOOL: snprintf(out, size, "b"); break;
	case ARG_ENUM: snprintf(out, size, "e:%.*s", it->text_len, it->text); break;
	case ARG_DOUBLE: snprintf(out, size, "f64"); break;
	case ARG_FLOAT: snprintf(out, size, "f32"); break;
	case ARG_F80: snprintf(out, size, "f80"); break;
	case ARG_F128: snprintf(out, size, "f128"); break;
	case ARG_STRUCT:
		layout(it->text, it->text_len, l);
		snprintf(out, size, "%s%s", it->deref ? "*" : "", l);
		break;
	default: snprintf(out, size, "type%d", it->type); break;
	}
}

int main(void)
{
	static char line[1 << 16], out[1 << 17], sizes[1 << 12];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		int ret = line[0] == 'R';
		char *o = out, *z = sizes;
		int bad = 0, first = 1;
		for (const char *p = line + 2, *next; p && !bad; p = next) {
			const char *end;
			next = ftrt_argspec_next(p, &end);
			if (p == end)
				continue;
			struct arg_entry e;
			if (ftrt_argspec_entry(p, end, ret, &e) != NULL) {
				bad = 1;
				break;
			}
			o += sprintf(o, "%s%.*s%s", first ? "" : ";", (int)e.glen, e.glob, ret ? "/" : "@");
			first = 0;
			for (int i = 0; i < e.n; i++) {
				char f[256];
				const struct arg_item *it = &e.it[i];
				format(it, f, sizeof f);
				if (it->type == ARG_STRUCT)
					z += sprintf(z, " S%d%sI%d", it->size, ret && it->fp ? "F" : "", it->ints);
				if (ret || it->type == ARG_NONE)
					o += sprintf(o, "%s%s", i ? "," : "", f);
				else if (it->stack)
					o += sprintf(o, "%s%sstack+%d/%s", i ? "," : "", it->deref ? "*" : "", it->off, f + it->deref);
				else if (it->mixed)
					o += sprintf(o, "%sarg%d+fparg%d/%s", i ? "," : "", it->n + 1, it->fpn + 1, f);
				else
					o += sprintf(o, "%s%s%sarg%d/%s", i ? "," : "", it->deref ? "*" : "", it->fp ? "fp" : "", it->n + 1, f + it->deref);
			}
		}
		if (bad)
			printf("bad\n");
		else
			printf("ok %s%s\n", out, sizes);
		out[0] = sizes[0] = 0;
	}
	return 0;
}
