/*
 * What the runtime writes on the program's stderr (say.c): its warnings,
 * every one, a line at a time. A value in a line (an entry of a
 * variable, a glob, a path, a module's name) is the program's or its
 * user's text, not the runtime's: it is cut to SAY_VALUE_MAX bytes and
 * its control characters escaped, so a line stays one line of bounded
 * length and writes nothing a terminal would act on. Over the process's
 * life the runtime writes at most SAY_BUDGET bytes of them, then one
 * line saying the rest are suppressed: a program's stderr is its own.
 *
 * Async-signal-safe: no allocation, lock or libc call; the line is built
 * on the caller's stack and written with raw system calls.
 */
#ifndef FTRT_SAY_H
#define FTRT_SAY_H

#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))

#define SAY_LINE 1024         /* a line's bytes at most, its newline included */
#define SAY_VALUE_MAX 200     /* a value's bytes at most, escaped, before "..." */
#define SAY_BUDGET (64 << 10) /* what the process writes on stderr at most */

/* A line being built: "ftrt: " first. */
struct say {
	char b[SAY_LINE];
	size_t n;
	int full; /* something did not fit: the line ends with "..." */
};

void ftrt_say_begin(struct say *s) HIDDEN;
/* The runtime's own text. */
void ftrt_say_text(struct say *s, const char *t) HIDDEN;
/* len bytes of a value at v, escaped and cut. */
void ftrt_say_value(struct say *s, const char *v, size_t len) HIDDEN;
/* A NUL-terminated value (NULL: nothing). */
void ftrt_say_str(struct say *s, const char *v) HIDDEN;
void ftrt_say_num(struct say *s, uint64_t v) HIDDEN;
/* The newline, and the line written, within the budget. */
void ftrt_say_end(struct say *s) HIDDEN;

/* A whole line of the runtime's own text ("ftrt: ...\n"), within the
 * budget. */
void ftrt_say(const char *line) HIDDEN;

#endif
