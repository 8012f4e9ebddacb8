/*
 * Runs the runtime's parser of FTRACE_ARGS and FTRACE_RETVAL
 * (runtime/src/argspec.c) over the specs on standard input, one a line,
 * "A TEXT" (FTRACE_ARGS) or "R TEXT" (FTRACE_RETVAL), and prints for
 * each "ok CANONICAL" (every entry's items as package argspec's
 * Item.String writes them) or "bad" (an entry refused).
 * TestRuntimeParser builds it for each architecture.
 */
#include <stdio.h>
#include <string.h>

#include "argspec.h"

static void format(const struct arg_item *it, char *out, size_t size)
{
	switch (it->type) {
	case ARG_NONE: snprintf(out, size, "?"); break;
	case ARG_INT: snprintf(out, size, "i%d", it->bits); break;
	case ARG_UDEC: snprintf(out, size, "u%d", it->bits); break;
	case ARG_UINT: snprintf(out, size, "x%d", it->bits); break;
	case ARG_PTR: snprintf(out, size, "p"); break;
	case ARG_STRING: snprintf(out, size, "s"); break;
	case ARG_CHAR: snprintf(out, size, "c"); break;
	case ARG_BOOL: snprintf(out, size, "b"); break;
	case ARG_ENUM: snprintf(out, size, "e:%.*s", it->enum_len, it->enum_name); break;
	case ARG_DOUBLE: snprintf(out, size, "f64"); break;
	case ARG_FLOAT: snprintf(out, size, "f32"); break;
	default: snprintf(out, size, "type%d", it->type); break;
	}
}

int main(void)
{
	static char line[1 << 16], out[1 << 17];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		int ret = line[0] == 'R';
		char *o = out;
		int bad = 0, first = 1;
		for (const char *p = line + 2, *next; p && !bad; p = next) {
			const char *end;
			next = ftrt_argspec_next(p, &end);
			if (p == end)
				continue;
			struct arg_entry e;
			if (ftrt_argspec_entry(p, end, ret, &e) != 0) {
				bad = 1;
				break;
			}
			o += sprintf(o, "%s%.*s%s", first ? "" : ";", (int)e.glen, e.glob, ret ? "/" : "@");
			first = 0;
			for (int i = 0; i < e.n; i++) {
				char f[128];
				const struct arg_item *it = &e.it[i];
				format(it, f, sizeof f);
				if (ret || it->type == ARG_NONE)
					o += sprintf(o, "%s%s", i ? "," : "", f);
				else
					o += sprintf(o, "%s%sarg%d/%s", i ? "," : "", it->fp ? "fp" : "", it->n + 1, f);
			}
		}
		printf(bad ? "bad\n" : "ok %s\n", out);
		out[0] = 0;
	}
	return 0;
}
