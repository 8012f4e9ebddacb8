/*
 * The function_graph tracer: each traced call pushes {return address, site, stack
 * pointer at return, hook} on the thread's shadow stack. At a site at a
 * function's entry the site jumps to a trampoline of its own that calls
 * the function body, so it returns into the trampoline (its hook) and
 * the return stack predicts every return (arch/x86_64/graph.S);
 * elsewhere (-pg's mcount sites) the return address is replaced with
 * return_to_handler.
 * Either way the exit is recorded and the call returns where it really
 * returns. A thread whose calls nest deeper than SHADOW_MAX stops
 * graphing (counted): never a crash. With the subtree filters
 * (FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE: subtree.c) a call outside
 * the subtrees is not graphed at all, and every pop of a shadow entry
 * gives back what its mark counted.
 *
 * This file pushes a graphed call (ftrt_graph_push, for both kinds of
 * site) and pops it at its return (ftrt_graph_exit). Calls shadow.c,
 * thread.c (a thread's first buffer) and what tracer.h inlines.
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

#include "core/say.h"
#include "fgraph.h"
#include "graph.h"
#include "record/tracer.h"
#include "take.h"

/*
 * Push a graphed call: the site ip, the stack pointer sp it will return
 * with, where it really returns (ret) and what its return address will
 * be while it runs (hook). 0 when the call is not graphed: deeper
 * than FTRACE_DEPTH, or its stack's shadow stack overflowed (that stack
 * then stops graphing for good, counted, never a crash); or the subtree
 * filters leave it out (subtree.c says which, and why a notrace call is
 * graphed but not recorded); or no call is graphed any more (a context's
 * stack is unknown): then it is recorded as a call, if the subtree
 * filters can tell it is to be without a shadow stack: a chosen
 * function's own (FTRACE_GRAPH_FUNCS), or any but a notrace function's
 * (FTRACE_GRAPH_NOTRACE alone).
 */
int ftrt_graph_push(struct tbuf *b, uintptr_t ip, uintptr_t sp, uintptr_t ret, uintptr_t hook)
{
	uint64_t ts = now();
	int sub = ftrt_subtree, mark = sub ? ftrt_subtree_mark(ip) : 0;
	if (__builtin_expect(__atomic_load_n(&ftrt_graph_off, __ATOMIC_RELAXED), 0)) {
		if (sub && mark != MARK_CHOSEN && (mark == MARK_NOTRACE || (sub & SUBTREE_FUNCS)))
			return 0;
		record_call(b, ts, ip, ret);
		return 0;
	}
	struct shadow_stack *s = ftrt_stack_at(b, sp, ts, 1);
	uint32_t d = s->depth;
	if (__builtin_expect(d > 0 && left(b, &s->e[d - 1], sp, ret), 0))
		d = unwind_to(b, s, ts, sp, ret, 1);
	if (__builtin_expect(d >= ftrt_max_depth || s->stopped, 0)) {
		if (d >= SHADOW_MAX && !s->stopped) {
			s->stopped = 1;
			atomic_fetch_add_explicit(&ftrt_stopped, 1, memory_order_relaxed);
		}
		if (s->stopped)
			atomic_fetch_add_explicit(&ftrt_overflow, 1, memory_order_relaxed);
		return 0;
	}
	if (__builtin_expect(sub != 0, 0)) {
		if (s->notrace)
			return 0; /* inside a notrace call */
		if (!mark && (sub & SUBTREE_FUNCS) && !s->chosen)
			return 0; /* outside every chosen call */
	}
	/* A notrace call is graphed for its return, never recorded. */
	uint32_t n = mark == MARK_NOTRACE ? b->n : record_entry(b, ts, ip);
	struct shadow *sh = &s->e[d];
	sh->ret = ret;
	sh->ip = ip;
	sh->sp = sp;
	sh->hook = hook;
	sh->pos = b->base + n; /* base as the entry's flush, if any, left it */
	sh->mark = (uintptr_t)mark;
	s->depth = d + 1;
	if (__builtin_expect(mark != 0, 0)) {
		if (mark == MARK_NOTRACE)
			s->notrace++;
		else
			s->chosen++;
	}
	return 1;
}

/*
 * A call at the site ip, whose frame is at sp and which returns to ret,
 * that function_graph cannot hook (an arm64 -pg site whose prologue
 * says too little of where the return address was saved, or how it was
 * signed: arch/arm64/mcount.c) is recorded as a call, where the subtree
 * filters would have recorded it: not inside a notrace call, and with
 * FTRACE_GRAPH_FUNCS inside a chosen call or at a chosen function. So is
 * a library call whose return is not hooked (tracers/libcall.c). The
 * call is in the context its stack is (a coroutine's: context.c), which
 * a switch record says when it is not the last call's: a coroutine
 * resumed, whose first call is one of these, is not taken for the one
 * that ran before.
 */
void ftrt_graph_call(struct tbuf *b, uintptr_t ip, uintptr_t sp, uintptr_t ret)
{
	uint64_t ts = now();
	int sub = ftrt_subtree;
	const struct shadow_stack *s = ftrt_stack_at(b, sp, ts, 1);
	if (__builtin_expect(sub != 0, 0)) {
		int mark = ftrt_subtree_mark(ip);
		if (mark == MARK_NOTRACE || s->notrace)
			return;
		if ((sub & SUBTREE_FUNCS) && mark != MARK_CHOSEN && !s->chosen)
			return;
	}
	record_call(b, ts, ip, ret);
}

/*
 * The hot path of a per-site graph trampoline (ftrace_graph_enter, see
 * arch/x86_64/graph.S): push the call, whose return slot is slot; the
 * trampoline then calls the function itself, so it returns to hook
 * inside the trampoline. 1 if graphed; 0 and the trampoline just jumps
 * into the function.
 */
int ftrt_graph_enter(uintptr_t ip, uintptr_t *slot, uintptr_t hook)
{
	/* Paused, or the tracer changed live (live.c moves these sites to
	 * the caller, but a thread may be in the trampoline already). */
	if (paused() || __atomic_load_n(&ftrt_mode, __ATOMIC_RELAXED) != FTRT_GRAPH)
		return 0;
	struct tbuf *b = enter((uintptr_t)(slot + 1));
	if (!b)
		return 0;
	int graphed = ftrt_graph_push(b, ip, (uintptr_t)(slot + 1), *slot, hook);
	if (graphed)
		*slot = hook; /* with the entry, under busy: see left() */
	unbusy(b, 0);
	return graphed;
}

/* A graphed call returned and the shadow stack has no entry for it: no
 * record of where to return, and nothing sane is left to do. */
static __attribute__((noreturn, noinline)) void lost_return(void)
{
	ftrt_say("ftrt: function_graph: a return the shadow stack has no entry for\n");
	sys(SYS_kill, sys(SYS_getpid, 0, 0, 0, 0, 0, 0), 6 /* SIGABRT */, 0, 0, 0, 0);
	__builtin_trap();
}

/*
 * Called from return_to_handler (or a trampoline's return path) with the
 * stack pointer the function returned with: the call whose frame that
 * is returns, and the calls above it on the shadow stack were left
 * without returning (longjmp): they are popped and recorded as unwound.
 * Returns where the function really returns to.
 */
uintptr_t ftrt_graph_exit(uintptr_t sp)
{
	struct tbuf *b = tb;
	if (__builtin_expect(!b, 0))
		lost_return();
	/* Set before the shadow stack is read, or the time (see arch/x86_64/graph.S);
	 * and given back as it was: a return is never dropped, even inside
	 * a signal handler that interrupted the tracer. */
	uintptr_t was_busy = b->busy;
	if (!take(b, sp))
		b->busy = sp;
	else
		was_busy = 0;
	uint64_t ts = now();
	int rec = ftrt_trace_fd >= 0 && !ended(); /* once the trace is ending (or with graph users alone:
						   * none open), calls still return, unrecorded */
	struct shadow_stack *s = ftrt_stack_at(b, sp, ts, rec);
	/* The returning call is the innermost one whose frame is at sp (a
	 * tail-called one above its caller, at the same sp, first); any
	 * above it were left without returning: a longjmp out of them, or
	 * out of a signal handler on another stack. */
	uint32_t k = s->depth;
	while (k > 0 && s->e[k - 1].sp != sp)
		k--;
	if (__builtin_expect(k == 0, 0))
		lost_return();
	while (s->depth > k)
		pop_left(b, s, ts, rec);
	struct shadow *sh = &s->e[--s->depth];
	unmark(s, sh);
	/* A notrace call recorded no entry, and records no exit.
	 * FTRACE_THRESH: a call shorter than the threshold that called
	 * nothing traced (its entry is still the last record, in the buffer,
	 * so last is its time) is taken back, and last with it: the entry's
	 * time less its delta, the time of the record before it (a TIME
	 * written for the entry stays, and says the same). */
	rec = rec && MARK_RECORDED(sh->mark);
	if (__builtin_expect(sh->mark >> MARK_USERS_SHIFT != 0, 0))
		ftrt_fgraph_return(b, sh, sp); /* the graph users' returns, busy held */
	undata(b, sh);
	uint32_t n = b->n;
	uint64_t at = sh->pos - b->base; /* the entry's index in words[], when there */
	if (rec && ftrt_thresh_tsc && sh->pos >= b->base && at < n && is_entry(b->words[at]) &&
	    at + rec_words(b->words[at]) == n && ts - b->last < ftrt_thresh_tsc) {
		b->last -= entry_delta(b->words[at]);
		publish(b, (uint32_t)at);
		b->entries--;
	} else if (rec) {
		record_exit(b, ts);
	}
	uintptr_t ret = sh->ret; /* before busy goes: a handler's call may be pushed there after */
	unbusy(b, was_busy);
	return ret;
}
