/*
 * What an item of FTRACE_ARGS or FTRACE_RETVAL reads of a call, into a
 * record's words (argread.c), for capture.c.
 */
#ifndef FTRT_ARGREAD_H
#define FTRT_ARGREAD_H

#include <stdint.h>

#include "abi.h"
#include "argspec.h"

#define HIDDEN __attribute__((visibility("hidden")))

struct ftrace_regs;

/* The words an item takes in a record at most: a string's (its length
 * word and bytes), a struct's (its bytes and its layout, each with a
 * length word) or an enum's (its value, its name's length and bytes). */
#define ARG_ITEM_WORDS_MAX (2 + ARG_STRING_MAX / 8)

/* The call whose arguments are read: its ftrace_regs, its site, and its
 * stack arguments' address once an item needs it (0: not known; looked:
 * asked already). */
struct arg_call {
	struct ftrace_regs *f;
	uintptr_t ip;
	uintptr_t stack;
	int looked;
};

/* The word a register's value v is recorded as, for item it of a type
 * of one word: an integer of fewer bits extended from them (the rest of
 * the register is undefined), a char, bool or float its low bits. Inline:
 * capture.c records an item in one register (it->reg) with it alone. */
static inline uint64_t ftrt_arg_word(const struct arg_item *it, uint64_t v)
{
	int shift = 64 - it->bits;
	switch (it->type) {
	case ARG_INT:
		return shift ? (uint64_t)((int64_t)(v << shift) >> shift) : v;
	case ARG_UINT:
	case ARG_UDEC:
		return shift ? v << shift >> shift : v;
	case ARG_CHAR:
	case ARG_BOOL:
		return v & 0xff;
	case ARG_FLOAT:
		return v & 0xffffffff;
	}
	return v;
}

/* Argument item it of call c, or return value item it of the return
 * whose registers f holds (fp: what the return path saved of the
 * floating-point state), added to w at *k, which moves past it: the
 * item's type in the record (ARG_NONE when it could not be read). */
unsigned ftrt_arg_put(uint64_t *w, uint32_t *k, struct arg_call *c, const struct arg_item *it) HIDDEN;
unsigned ftrt_ret_put(uint64_t *w, uint32_t *k, struct ftrace_regs *f, const unsigned char *fp, const struct arg_item *it) HIDDEN;

/* The pipe the reader of memory uses where process_vm_readv is refused:
 * made once, when capturing starts or a callback that may read stack
 * arguments is registered (api.c), made anew in a forked child. */
void ftrt_argread_start(void) HIDDEN;

/* Word i of the stack arguments at base (0: not known), read as an
 * item's are, never faulting: 0 past the first ARG_STACK_MAX bytes, or
 * where they cannot be read. For ftrace_regs_get_argument (fregs.c). */
unsigned long ftrt_stack_word(uintptr_t base, unsigned i) HIDDEN;

#endif
