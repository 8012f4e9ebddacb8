/*
 * ftrace.h for the test programs, or, built with -DUNTRACED (no
 * runtime), stubs of the calls they make that change nothing: the
 * untraced build's output is what every traced run must print.
 */
#ifndef TESTS_API_H
#define TESTS_API_H

#ifdef UNTRACED
static inline int ftrace_enable_functions(const char *g) { (void)g; return 0; }
static inline int ftrace_disable_functions(const char *g) { (void)g; return 0; }
static inline int ftrace_set_functions(const char *g) { (void)g; return 0; }
static inline const char *ftrace_error(void) { return ""; }
#else
#include <ftrace.h>
#endif

#endif
