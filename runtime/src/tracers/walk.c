/*
 * function_graph under the unwinder: an exception's walk (unwind.c) or a
 * backtrace's (backtrace.c) sees the real return addresses, the calls a
 * landing pad's frame made are popped, and frames.c finds a hook's
 * unwind info. Calls shadow.c and what tracer.h inlines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "entry.h"
#include "record/tracer.h"
#include "take.h"

/*
 * Walks of the stack: exceptions and forced unwinds (unwind.c), and
 * backtrace (backtrace.c).
 *
 * The unwinder finds each frame's caller through the frame's return
 * address; in a graphed call's slot it would find the hook and stop
 * there (std::terminate, or a backtrace cut short). So before it walks,
 * every hooked slot gets its real return address back
 * (ftrt_graph_suspend), and the walk opens a level. While one is open:
 *
 *   - before each landing pad the unwinder runs (a cleanup that runs
 *     destructors, or the handler that catches) it says the frame the
 *     pad is in, by the stack pointer the pad will run with
 *     (ftrt_graph_land): every graphed call whose frame lay at or below
 *     it is gone, and is recorded unwound there and then, so the calls
 *     the landing pad makes are graphed under the frame whose locals
 *     they destroy;
 *   - the calls landing pads make are graphed and hooked as usual;
 *   - the catch (or the raise coming back, or the backtrace's end)
 *     closes the level (ftrt_graph_resume): the survivors' slots get
 *     their hooks back, so their exits are recorded. While an outer
 *     level is still open (a destructor run by one exception's cleanup
 *     threw and caught one of its own), only the calls made since its
 *     last landing pad was entered do: the frame whose pad runs, and
 *     its callers, are still to be walked by that outer unwind.
 *
 * A call and the graphed function it tail-called share one slot: the
 * callee's entry holds the caller's hook as its return address. Slots
 * are given back innermost first and hooked again outermost first, so
 * such a chain is undone and redone whole.
 */

/* The thread's buffer, busy, for the functions below; NULL when there
 * is nothing to do (no graph, no buffer) or it cannot be done now (a
 * signal handler interrupted this thread's tracer, its shadow stack
 * perhaps half-changed). */
static struct tbuf *walk_begin(void)
{
	struct tbuf *b = tb;
	if (!b || !(ftrt_graph_used || ftrt_graph_users) || !take(b, (uintptr_t)__builtin_frame_address(0)))
		return NULL;
	return b;
}

/* Every hooked slot of s gets its entry's real return address, innermost
 * first. Where return addresses have no slots (arch.h: FTRT_ARCH_SLOTS)
 * nothing is written: the walk goes through each hook with the unwind
 * info frames.c gives it, and finds the real return address on the
 * shadow stack. */
static void unhook(struct shadow_stack *s)
{
	if (!FTRT_ARCH_SLOTS)
		return;
	for (uint32_t i = s->depth; i-- > 0;) {
		const struct shadow *sh = &s->e[i];
		uintptr_t *slot = (uintptr_t *)sh->sp - 1;
		if (*slot == sh->hook)
			*slot = sh->ret;
	}
}

/* Every slot of the entries of s from keep up that holds its entry's
 * real return address gets its hook back, outermost first. */
static void rehook(struct shadow_stack *s, uint32_t keep)
{
	if (!FTRT_ARCH_SLOTS)
		return;
	for (uint32_t i = keep; i < s->depth; i++) {
		const struct shadow *sh = &s->e[i];
		uintptr_t *slot = (uintptr_t *)sh->sp - 1;
		if (*slot == sh->ret)
			*slot = sh->hook;
	}
}

/* Pop the graphed calls made from a frame whose stack pointer is sp, or
 * deeper (their own stack pointer at return, their CFA, at most sp),
 * each recorded unwound; returns their shadow stack. */
static struct shadow_stack *drop_to(struct tbuf *b, uintptr_t sp)
{
	int rec = !ended();
	uint64_t ts = now();
	struct shadow_stack *s = ftrt_stack_at(b, sp, ts, rec);
	while (s->depth > 0 && s->e[s->depth - 1].sp <= sp)
		pop_left(b, s, ts, rec);
	return s;
}

/*
 * Before the unwinder walks the stack for the exception exc (its
 * _Unwind_Exception), or, exc NULL, for a backtrace: every graphed
 * frame's real return address back in its slot, and a level opened.
 * The walk is of the stack this runs on (the thread's own, or a
 * context's). Returns 1 when it opened a level, which ftrt_graph_resume
 * must close if the walk comes back; 0 when there was nothing to do, or
 * exc's own level is open already (a rethrow's _Unwind_Resume_or_Rethrow
 * calls _Unwind_RaiseException: one exception, one level).
 */
int ftrt_graph_suspend(const void *exc)
{
	struct tbuf *b = walk_begin();
	if (!b)
		return 0;
	uint64_t id;
	struct shadow_stack *s = ftrt_find_stack(b, (uintptr_t)__builtin_frame_address(0), &id);
	unhook(s);
	int open = !exc || b->levels == 0 || b->deep || b->level[b->levels - 1].exc != exc;
	if (open) {
		if (b->levels < LEVEL_MAX)
			b->level[b->levels++] = (struct level){ .exc = exc, .stack = s, .keep = s->depth };
		else
			b->deep++; /* closed unknown: its survivors keep their real addresses */
		b->suspended++;
	}
	unbusy(b, 0);
	return open;
}

/*
 * The unwinder is about to run a landing pad in the frame whose stack
 * pointer will be sp (from its _Unwind_SetIP: the CFA of the call the
 * exception came through, _Unwind_GetCFA): the graphed calls that frame
 * made are gone. So too in a walk that opened no level: one that passed
 * the graphed calls through frames.c's unwind info for their hooks (a
 * forced unwind the C library started), their slots untouched.
 */
void ftrt_graph_land(uintptr_t sp)
{
	struct tbuf *b = walk_begin();
	if (!b)
		return;
	struct shadow_stack *s = drop_to(b, sp);
	struct level *lv = b->levels ? &b->level[b->levels - 1] : NULL;
	if (lv && !b->deep && lv->stack == s) {
		lv->keep = s->depth;
		lv->landed = 1;
	}
	unbusy(b, 0);
}

/*
 * The walk for exc is over: it was caught in the frame whose landing pad
 * ran last (__cxa_begin_catch), its raise came back (no handler: nothing
 * was unwound), or, exc NULL, the backtrace is done. The survivors get
 * their hooks back, but for the frames an outer walk has still to walk.
 * sp: the catching frame's stack pointer when it called
 * __cxa_begin_catch; should no landing pad have been seen (a personality
 * routine that does not call _Unwind_SetIP through unwind.c), the calls
 * at or below it are dropped. A catch of an exception this thread did
 * not open a level for (a forced unwind that the C library raised
 * through its own handle on the unwinder) changes nothing.
 */
void ftrt_graph_resume(const void *exc, uintptr_t sp)
{
	struct tbuf *b = tb;
	if (!b || (b->levels == 0 && b->deep == 0))
		return;
	b = walk_begin();
	if (!b)
		return;
	if (b->deep) {
		b->deep--;
		b->suspended--;
	} else if (b->level[b->levels - 1].exc == exc) {
		const struct level *lv = &b->level[--b->levels];
		if (!lv->landed && sp)
			drop_to(b, sp);
		b->suspended--;
		const struct level *outer = b->levels ? &b->level[b->levels - 1] : NULL;
		rehook(lv->stack, outer && outer->stack == lv->stack ? outer->keep : 0);
	}
	unbusy(b, 0);
}

/*
 * For frames.c: whether hook is the hook of one of the graphed calls on
 * the stack this runs on (the unwinder walks the stack it runs on: the
 * thread's own, or a context's); if so, *hi says where that shadow stack
 * and its depth are, and gives an area of the thread's (FTRT_FRAME_INFO
 * bytes, zero until frames.c writes it, and again when it last wrote it
 * for another shadow stack) for the unwind info frames.c builds. 0 when
 * not, or when the thread's tracer is running (a signal handler
 * interrupted it: its shadow stack may be half-changed).
 */
int ftrt_graph_hook_info(uintptr_t hook, struct ftrt_hook_info *hi)
{
	struct tbuf *b = tb;
	if (!b || !(ftrt_graph_used || ftrt_graph_users) || (b->busy && !ftrt_abandoned(b, b->busy, (uintptr_t)__builtin_frame_address(0))))
		return 0;
	uint64_t id;
	struct shadow_stack *s = ftrt_find_stack(b, (uintptr_t)__builtin_frame_address(0), &id);
	for (uint32_t i = s->depth; i-- > 0;)
		if (s->e[i].hook == hook) {
			if (b->frame_info_for != s) {
				__atomic_store_n((uint32_t *)b->frame_info, 0, __ATOMIC_RELAXED);
				b->frame_info_for = s;
			}
			hi->area = b->frame_info;
			hi->shadow = (uintptr_t)s->e;
			hi->depth = (uintptr_t)&s->depth;
			return 1;
		}
	return 0;
}
