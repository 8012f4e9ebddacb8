/*
 * Function attributes the test programs share.
 *
 * NOINLINE keeps a function a call of its own at every optimization
 * level, so each call the program makes is one the tracer must see:
 * noipa, where the compiler has it, also keeps the caller from using what
 * it knows of the body (a constant result, an unused argument) and from
 * calling a clone under another name; otherwise noinline.
 *
 * NOTRACE gives a function no site: neither -pg's call nor
 * -fpatchable-function-entry's NOPs.
 */
#ifndef PROGS_ATTRS_H
#define PROGS_ATTRS_H

#if defined(__has_attribute) && __has_attribute(noipa)
#define NOINLINE __attribute__((noipa))
#else
#define NOINLINE __attribute__((noinline))
#endif

#define NOTRACE __attribute__((no_instrument_function, patchable_function_entry(0, 0)))

#endif
