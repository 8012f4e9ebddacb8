/*
 * The grammar of FTRACE_ARGS and FTRACE_RETVAL, read (argspec.c) into
 * the items capture.c records. Go's package ftpatch/argspec holds the
 * same grammar (its comment gives it) and validates ftpatch record's -A
 * and -R with it; its TestRuntimeParser runs this parser over a table
 * of specs, on each architecture, and fails where the two disagree.
 *
 * Pure: no allocation, no libc but string comparison, so a test links
 * it alone.
 */
#ifndef FTRT_ARGSPEC_H
#define FTRT_ARGSPEC_H

#include <stddef.h>

#include "abi.h"

/* The argument registers of each kind: argN up to ARGSPEC_INT_REGS is
 * a register, past them a word of the stack's arguments. */
#if defined(__aarch64__)
#define ARGSPEC_INT_REGS 8 /* x0-x7 */
#define ARGSPEC_FP_REGS 8  /* v0-v7 */
#else
#define ARGSPEC_INT_REGS 6 /* rdi rsi rdx rcx r8 r9 */
#define ARGSPEC_FP_REGS 8  /* xmm0-xmm7 */
#endif

/* One item: what to read and how to record it. */
struct arg_item {
	unsigned char type;     /* ARG_* */
	unsigned char fp;       /* in floating-point registers (fpargN; a return value's f, or a struct of floats) */
	unsigned char n;        /* argN, fpargN: N - 1 (argN past the registers: the stack's word N - 1 - ARGSPEC_INT_REGS) */
	unsigned char bits;     /* ARG_INT, ARG_UINT, ARG_UDEC: 8 16 32 64 (extended from) */
	unsigned char stack;    /* stack+OFF: at off in the stack's arguments */
	unsigned char deref;    /* "*": the struct the pointer there points to */
	unsigned short off;     /* stack+OFF: OFF, bytes */
	unsigned char size;     /* ARG_STRUCT: its bytes (the layout's); ARG_F80, ARG_F128: 16 */
	unsigned char per_reg;  /* ARG_STRUCT in vector registers: its bytes in each (x86-64 an eightbyte, arm64 a member) */
	unsigned char mixed;    /* argN+fpargM (x86-64): each eightbyte from the next register of its class */
	unsigned char fpn;      /* argN+fpargM: M - 1 */
	unsigned char ints;     /* ARG_STRUCT: its eightbytes that hold more than floats (bit e: eightbyte e; x86-64's class INTEGER) */
	unsigned char reg;      /* an argument in one register, recorded as one word (no string, no enum): capture.c's quick path */
	unsigned char text_len; /* ARG_ENUM: its name's bytes; ARG_STRUCT: its layout's */
	const char *text;       /* ARG_ENUM: its name; ARG_STRUCT: its layout; in the text parsed (no NUL) */
};

/* An entry: a glob (in the text parsed, no NUL) and its items (one, a
 * return value's). */
struct arg_entry {
	const char *glob;
	size_t glen;
	int n;
	struct arg_item it[ARG_MAX];
};

/* The entry of the text at p: *end is where it ends (a ';' or the NUL),
 * *next where the next one starts (NULL: none). */
const char *ftrt_argspec_next(const char *p, const char **end);

/* Parse the entry [p, end) of FTRACE_ARGS (ret 0) or FTRACE_RETVAL
 * (ret 1) into e: NULL, or, when the grammar refuses it, why (a short
 * phrase of static text). */
const char *ftrt_argspec_entry(const char *p, const char *end, int ret, struct arg_entry *e);

#endif
