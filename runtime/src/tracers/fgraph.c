/*
 * Graph users (ftrace.h's struct fgraph_ops, the kernel's fgraph): the
 * program's code at the entry and at the return of the functions each
 * user chooses, on the shadow stack function_graph keeps (graph.h).
 *
 * A user is an ops of its own (gops->ops, its filter), registered with
 * FTRT_OPS_FL_AFTER: the list calls it after the tracer, so a call the
 * tracer pushed is on top when the user's entry (entry, below) runs.
 * The entry takes the thread's buffer (busy: the callbacks' own traced
 * calls are dropped by the tracer and not called back here), runs
 * entryfunc and, when it wants the return, adds the user's bit to the
 * call's shadow entry: the tracer's, when it pushed this very call, else
 * one pushed here, MARK_UNRECORDED, whose return slot (x86-64: the
 * return address on the stack; arm64: fregs->lr, which the ops caller
 * puts in x30) is hooked with return_to_handler, as the tracer's are.
 * The unwinder, longjmp and the exits of threads treat it as any other
 * graphed call: one shadow stack, whatever wants the calls on it.
 * graph.c's ftrt_graph_exit calls ftrt_fgraph_return for an entry with
 * users: each retfunc, with the return value.
 *
 * Users sit in slots 1-16 (gops->idx). Each change bumps an epoch; an
 * entry keeps the epoch of its push, and a user registered after it
 * never gets its return. A retfunc runs inside a grace walk (grace.h),
 * so after unregister_fgraph returns no callback of the user runs.
 *
 * Data (fgraph_reserve_data): a stack of the thread's own (fgdata),
 * each call's blocks from where its entry began, {idx, size} then the
 * bytes, 8-byte aligned; retrieved by idx at the return; given back at
 * the pop (record/encode.h's undata). Only on the thread's own stack: calls on
 * a makecontext stack get none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "core/grace.h"
#include "fgraph.h"
#include "ftrace.h"
#include "patch/live.h"
#include "patch/ops.h"
#include "patch/pass.h"
#include "record/tracer.h"
#include "take.h"

#define USERS 16
#define FGDATA_SIZE (256 * 1024)

static struct fgraph_ops *users[USERS + 1]; /* by idx; NULL: free (atomic) */
static uint16_t since[USERS + 1];           /* the epoch each registered at */
static uint16_t epoch = 1;                  /* bumped at each change */

void return_to_handler(void);

/* The call being entered on this thread: where its data begins, for
 * fgraph_reserve_data in an entryfunc (busy held: the thread's alone). */
struct entering {
	struct tbuf *b;
	uint32_t start;
	int own; /* on the thread's own stack: data may be kept */
};
static __thread struct entering *cur_entry __attribute__((tls_model("initial-exec")));
__thread int ftrt_in_users __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The thread's buffer (made at its first event, whether a trace is open
 * or not: the shadow stack is in it), taken (busy) for the call whose
 * stack pointer is ref; NULL when it cannot be: the tracer, or a user,
 * runs on this thread already (a signal handler, or a callback's own
 * traced call), or no buffer can be made. */
static struct tbuf *buffer(uintptr_t ref)
{
	struct tbuf *b = own_buffer();
	return b && take(b, ref) ? b : NULL;
}

/* A user's entry: its internal ops's callback. */
static void entry(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct fgraph_ops *g = op->private;
	struct fgraph_hook h;
	int hooks = ftrt_arch_fgraph_hook(fregs, ip, &h) == 0;
	uintptr_t *slot = hooks ? h.slot : NULL;
	/* Not hooked (an arm64 -pg prologue not understood): the frame
	 * record's end, a bound from below, as mcount.c's for such a call. */
	uintptr_t sp = hooks ? h.sp : (uintptr_t)ftrace_regs_get_stack_pointer(fregs) + 16;
	(void)parent_ip;
	int idx = g->idx;
	if (idx < 1 || idx > USERS)
		return;
	struct tbuf *b = buffer(sp);
	if (!b)
		return; /* the tracer runs on this thread (a handler), or no buffer */
	uint64_t ts = now();
	/* A context switch is recorded before the call's record, which
	 * function_graph writes after it; the function tracer, which has
	 * written the call already and keeps no stacks, records none (one
	 * after the call would hide it from the capture's arguments). */
	struct shadow_stack *s = ftrt_stack_at(b, sp, ts, ftrt_mode == FTRT_GRAPH && ftrt_trace_fd >= 0 && !ended());
	uint32_t d = s->depth;
	struct shadow *top = d > 0 ? &s->e[d - 1] : NULL;
	/* This very call, pushed by the tracer (or by a user before) in
	 * this walk: its slot already hooked. */
	int same = top && slot && top->sp == sp && top->ip == ip && *slot == h.val;
	if (!same && d > 0 && slot && left(b, top, sp, h.ret))
		d = unwind_to(b, s, ts, sp, h.ret, ftrt_trace_fd >= 0 && !ended());
	struct entering e = { b, b->fgtop, s == &b->own };
	if (same && (top->mark >> MARK_USERS_SHIFT) != 0)
		e.start = (uint32_t)(top->mark >> MARK_DATA_SHIFT); /* another user's data first */
	cur_entry = &e;
	struct ftrace_graph_ent ent = { .func = ip, .depth = (int)d - same };
	ftrt_in_users++;
	int want = g->entryfunc ? g->entryfunc(&ent, g, fregs) : 1;
	ftrt_in_users--;
	cur_entry = NULL;
	if (!want || !g->retfunc || !slot) {
		if (!same || !(top->mark >> MARK_USERS_SHIFT))
			b->fgtop = e.start; /* its data, if any, goes */
		unbusy(b, 0);
		return;
	}
	uintptr_t bit = (uintptr_t)1 << (MARK_USERS_SHIFT + idx - 1);
	if (ftrt_arch_fregs_prologue(fregs))
		bit |= MARK_PROLOGUE; /* its return keeps every vector register */
	if (same) {
		uintptr_t m = top->mark;
		if (!(m >> MARK_USERS_SHIFT))
			m |= (uintptr_t)e.start << MARK_DATA_SHIFT | (uintptr_t)__atomic_load_n(&epoch, __ATOMIC_RELAXED) << MARK_EPOCH_SHIFT;
		top->mark = m | bit;
	} else if (d < ftrt_max_depth && d < SHADOW_MAX && !s->stopped) {
		struct shadow *sh = &s->e[d];
		sh->ret = h.ret;
		sh->ip = ip;
		sh->sp = sp;
		sh->hook = (uintptr_t)return_to_handler;
		sh->pos = 0;
		sh->mark = MARK_UNRECORDED | bit | (uintptr_t)__atomic_load_n(&epoch, __ATOMIC_RELAXED) << MARK_EPOCH_SHIFT |
			   (uintptr_t)e.start << MARK_DATA_SHIFT;
		s->depth = d + 1;
		*slot = h.val; /* with the entry, under busy: see left() */
	} else {
		b->fgtop = e.start;
	}
	unbusy(b, 0);
}

/* The data of the call being returned from (ftrt_fgraph_return). */
static __thread const struct shadow *cur_ret __attribute__((tls_model("initial-exec")));
static __thread struct tbuf *cur_ret_b __attribute__((tls_model("initial-exec")));
static __thread const unsigned char *cur_ret_fp __attribute__((tls_model("initial-exec")));

void ftrt_fgraph_return(struct tbuf *b, const struct shadow *sh, uintptr_t sp)
{
	/* First: the C library's memset or memcpy, which the compiler may
	 * call for what follows, use the vector registers a result is in. */
	unsigned char fp[FTRT_ARCH_FP_SAVE] __attribute__((aligned(64)));
	uintptr_t m = sh->mark;
	int full = (m & MARK_PROLOGUE) != 0;
	ftrt_arch_fp_save(fp, full);
	unsigned bits = (unsigned)(m >> MARK_USERS_SHIFT) & MARK_USERS_MASK;
	uint16_t at = (uint16_t)(m >> MARK_EPOCH_SHIFT & MARK_EPOCH_MASK);
	struct ftrace_regs fregs;
	ftrt_arch_fgraph_exit_regs(&fregs, sp, sh->ret, fp);
	struct ftrace_graph_ret r = {
		.func = sh->ip,
		.retval = ftrace_regs_get_return_value(&fregs),
		.depth = (int)b->cur->depth, /* popped already: the calls under it */
	};
	struct ftrt_grace *g = ftrt_grace_enter();
	const struct shadow *was = cur_ret;
	struct tbuf *was_b = cur_ret_b;
	const unsigned char *was_fp = cur_ret_fp;
	cur_ret = sh, cur_ret_b = b, cur_ret_fp = fp;
	while (bits) {
		int idx = __builtin_ctz(bits) + 1;
		bits &= bits - 1;
		struct fgraph_ops *u = __atomic_load_n(&users[idx], __ATOMIC_ACQUIRE);
		/* Registered before the call was pushed (the epoch wraps at
		 * 2^16 changes: a user that old is compared as registered). */
		if (!u || (uint16_t)(at - since[idx]) >= 0x8000 || !u->retfunc)
			continue;
		ftrt_in_users++;
		u->retfunc(&r, u, &fregs);
		ftrt_in_users--;
	}
	cur_ret = was, cur_ret_b = was_b, cur_ret_fp = was_fp;
	ftrt_grace_exit(g);
	ftrt_arch_fp_restore(fp, full); /* the result as the function left it, whatever retfunc did */
}

void *fgraph_reserve_data(int idx, int size)
{
	struct entering *e = cur_entry;
	if (!e || idx < 1 || idx > USERS || size <= 0 || size > FGRAPH_DATA_MAX || !e->own)
		return NULL;
	struct tbuf *b = e->b;
	if (!b->fgdata) {
		void *m = mmap(NULL, FGDATA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		b->fgdata = m;
	}
	uint32_t need = 8 + (((uint32_t)size + 7) & ~7u);
	if (b->fgtop + need > FGDATA_SIZE)
		return NULL;
	unsigned char *p = b->fgdata + b->fgtop;
	uint32_t hdr[2] = { (uint32_t)idx, (uint32_t)size };
	memcpy(p, hdr, sizeof hdr);
	b->fgtop += need;
	return p + 8;
}

void *fgraph_retrieve_data(int idx, int *size)
{
	const struct shadow *sh = cur_ret;
	struct tbuf *b = cur_ret_b;
	if (!sh || !b || !b->fgdata)
		return NULL;
	uint32_t at = (uint32_t)(sh->mark >> MARK_DATA_SHIFT), end = b->fgtop;
	while (at + 8 <= end) {
		uint32_t hdr[2];
		memcpy(hdr, b->fgdata + at, sizeof hdr);
		if ((int)hdr[0] == idx) {
			if (size)
				*size = (int)hdr[1];
			return b->fgdata + at + 8;
		}
		at += 8 + ((hdr[1] + 7) & ~7u);
	}
	return NULL;
}

uintptr_t ftrt_fgraph_real_return(uintptr_t v, uintptr_t sp)
{
	struct tbuf *b = tb;
	if (v != (uintptr_t)return_to_handler || !b)
		return v;
	uint64_t id;
	const struct shadow_stack *s = ftrt_find_stack(b, sp, &id);
	for (uint32_t k = s ? s->depth : 0; k > 0; k--)
		if (s->e[k - 1].sp == sp && s->e[k - 1].hook == v)
			return s->e[k - 1].ret;
	return v;
}

struct tbuf *ftrt_fgraph_entering(void)
{
	return cur_entry ? cur_entry->b : NULL;
}

struct tbuf *ftrt_fgraph_returning(const unsigned char **fp)
{
	const struct shadow *sh = cur_ret;
	*fp = cur_ret_fp;
	return sh && MARK_RECORDED(sh->mark) && ftrt_trace_fd >= 0 && !ended() ? cur_ret_b : NULL;
}

unsigned long *fgraph_get_task_var(struct fgraph_ops *gops)
{
	struct tbuf *b = tb;
	if (!gops || gops->idx < 1 || gops->idx > USERS || !b)
		return NULL;
	return (unsigned long *)&b->fgvar[gops->idx];
}

static const char *why = "";

const char *ftrt_fgraph_why(void)
{
	return why;
}

int ftrt_fgraph_register(struct fgraph_ops *g)
{
	if (!g || (!g->entryfunc && !g->retfunc)) {
		why = "the graph user has no callback";
		return -EINVAL;
	}
	if (!ftrt_graph_safe()) {
		why = "graph users cannot follow this program's C++ exceptions (its unwinder is linked in statically)";
		return -ENOTSUP;
	}
	ftrt_modules_lock();
	int idx = 0;
	for (int i = 1; i <= USERS; i++) {
		if (users[i] == g) {
			ftrt_modules_release();
			why = "the graph user is registered already";
			return -EBUSY;
		}
		if (!users[i] && !idx)
			idx = i;
	}
	if (!idx) {
		ftrt_modules_release();
		why = "16 graph users are registered already";
		return -ENOSPC;
	}
	since[idx] = ++epoch;
	g->idx = idx;
	__atomic_store_n(&ftrt_graph_users, 1, __ATOMIC_RELEASE); /* the unwinder's hooks mind the users' calls (walk.c) */
	__atomic_store_n(&users[idx], g, __ATOMIC_RELEASE);
	ftrt_modules_release();
	g->ops.func = entry;
	g->ops.private = g;
	g->ops.flags |= FTRT_OPS_FL_AFTER;
	int err = ftrt_ops_register(&g->ops);
	if (err) {
		why = ftrt_ops_why();
		__atomic_store_n(&users[idx], NULL, __ATOMIC_RELEASE);
		g->idx = 0;
	}
	return err;
}

int ftrt_fgraph_unregister(struct fgraph_ops *g)
{
	if (!g || g->idx < 1 || g->idx > USERS || users[g->idx] != g) {
		why = "the graph user is not registered";
		return -EINVAL;
	}
	/* No entry calls it from here (the ops's grace period), then no
	 * return: the slot is cleared, and a grace period waits for the
	 * returns that read it before. */
	int err = ftrt_ops_unregister(&g->ops);
	ftrt_modules_lock();
	__atomic_store_n(&users[g->idx], NULL, __ATOMIC_RELEASE);
	++epoch;
	ftrt_grace_wait();
	ftrt_modules_release();
	g->idx = 0;
	if (err)
		why = ftrt_ops_why();
	return err;
}
