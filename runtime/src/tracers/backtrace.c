/*
 * backtrace through graphed frames.
 *
 * Under function_graph a traced call's return slot holds the tracer's
 * hook (its trampoline's return point, or return_to_handler), and the
 * caller's return address is on the shadow stack. glibc's backtrace
 * walks the stack with libgcc's unwinder, which finds no unwind info at
 * the hook and stops there: every frame above the innermost graphed call
 * was missing. So the program's calls of backtrace are wrapped: the real
 * return addresses are put back into the slots for the walk, as for an
 * exception (ftrt_graph_suspend), and the hooks again after it
 * (ftrt_graph_resume: no call above this frame was left, so none is
 * recorded unwound). The walk then sees the stack the untraced program
 * has.
 *
 * Wrapped at link time (--wrap=backtrace, as the exec functions are, see
 * exec.c): glibc's backtrace reaches the unwinder through a handle of
 * its own, so interposing the unwinder would not see it; and a wrapper
 * calls the C library's own in a static link too. A call from a shared
 * object is not wrapped: its walk stops at the innermost graphed call as
 * before. Nothing changes when function_graph is not the tracer. A
 * backtrace from a destructor that runs while an exception unwinds sees
 * through the calls made since, as through the others.
 */
#include <stdint.h>
#include <string.h>

#include "arch/arch.h"
#include "core/ftrt.h"
#include "entry.h"

void return_to_handler(void);

#if !FTRT_ARCH_SLOTS
/* Where return addresses have no slots the walk goes through each hook
 * with the unwind info frames.c gives it: a program that walks its
 * stack links frames.c, whatever else it links. */
struct dwarf_eh_bases;
const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);
__attribute__((used)) static const void *(*const frames_lookup)(void *, struct dwarf_eh_bases *) = _Unwind_Find_FDE;
#endif

/* Frames a walk takes into a buffer of its own, so that this wrapper's
 * frame (the first the walk finds) is dropped without losing the last
 * the caller asked for. A larger request fills the caller's buffer and
 * gives one frame fewer. */
#define OWN_MAX 256

int __real_backtrace(void **buffer, int size);

int __wrap_backtrace(void **buffer, int size)
{
	if (size <= 0)
		return __real_backtrace(buffer, size);
	void *own[OWN_MAX + 1];
	void **walk = size <= OWN_MAX ? own : buffer;
	int lent = ftrt_graph_suspend(NULL);
	int n = __real_backtrace(walk, walk == own ? size + 1 : size);
	if (lent)
		ftrt_graph_resume(NULL, 0);
	/* walk[0] is the return into this wrapper: the caller's own call of
	 * backtrace returns from here, and the walk it asked for starts at
	 * walk[1], as the C library's does without the wrapper. */
	if (n <= 0)
		return n;
	/* Where return addresses have no slots (arch.h), nothing was put
	 * back: the walk went through each graphed call's hook as a frame of
	 * its own (frames.c), whose return address is the real one. Those
	 * frames go. A walk that filled the buffer with them ends a little
	 * short. */
	int m = 0;
	for (int i = 1; i < n; i++)
		if (FTRT_ARCH_SLOTS || walk[i] != (void *)return_to_handler)
			buffer[m++] = walk[i];
	return m;
}

#ifdef FTRT_PRELOAD
/* Preloaded: the C library's backtrace is this wrapper (entry.h). */
FTRT_INTERPOSE(backtrace);
FTRT_REAL(int, backtrace, (void **buffer, int size), (buffer, size))
#endif
