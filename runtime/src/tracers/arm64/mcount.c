/*
 * arm64's -pg sites: the C entry of ftrace_mcount_caller (entry.S).
 *
 * A -pg site runs after the prologue: the function's return address is
 * no longer in x30 but saved in its frame record (x29 + 8), and signed
 * there when the function was built with pointer authentication. The
 * function tracer records the call. function_graph reads from the
 * prologue where the frame is (frame.h): the stack pointer the function
 * will return with (the shadow entry's key), and whether and with which
 * key the saved address is signed; it pushes the call and writes
 * return_to_handler into the frame record, signed as the prologue signed
 * the real address (the same key, the entry sp as the modifier), so the
 * function's own autiasp accepts it and returns into the hook. A
 * prologue it cannot read is recorded as a call (graph.c:
 * ftrt_graph_call); so is a saved address that is not the real one
 * signed as the prologue says (a signing instruction not found, or a
 * frame misread). Calls graph.c and what tracer.h inlines.
 */
#include <stdint.h>

#include <sys/syscall.h>
#include <sys/uio.h>

#include "core/ftrt.h"
#include "record/tracer.h"
#include "tracers/entry.h"
#include "tracers/fgraph.h"
#include "tracers/take.h"

/* Whether the word at a can be read: in the executable segment of the
 * module whose code follows it (the registry's record), or else copied
 * by process_vm_readv from this process, which fails (EFAULT) where a
 * load would fault. Asked only for the word before a prologue that
 * starts its page, or crosses into it (frame.h); where neither says yes
 * (a system call refused by seccomp), the prologue is taken to start
 * there, and a prologue that crossed is not understood. */
static int readable(uintptr_t a)
{
	/* Inside the executable segment of the module whose code follows:
	 * there (no system call; qemu-user has no process_vm_readv). */
	if (ftrt_module_text_holds(a + 4, a))
		return 1;
	uint32_t w;
	struct iovec local = { &w, 4 }, remote = { (void *)a, 4 };
	return sys(SYS_process_vm_readv, sys(SYS_getpid, 0, 0, 0, 0, 0, 0), (long)&local, 1, (long)&remote, 1, 0) == 4;
}
#define FRAME_READABLE(a) readable(a)
#include "arch/arm64/frame.h"

void return_to_handler(void);

/* p signed for the return address slot of a frame whose entry sp is
 * modifier, with key (FRAME_KEY_A or _B): pacia1716 / pacib1716 (hint #8,
 * #10: x17 signed with x16 the modifier; NOPs without pointer
 * authentication, where nothing was signed either). */
static inline uintptr_t sign_with(uintptr_t p, uintptr_t modifier, int key)
{
	register uintptr_t x17 __asm__("x17") = p;
	register uintptr_t x16 __asm__("x16") = modifier;
	if (key == FRAME_KEY_A)
		__asm__("hint #8" : "+r"(x17) : "r"(x16));
	else
		__asm__("hint #10" : "+r"(x17) : "r"(x16));
	return x17;
}

/* Whether saved, the return address as the prologue saved it, is
 * parent signed with key and modifier sp (unsigned: the same): the frame
 * read from the prologue is the one the function signed with, checked
 * by signing again (which never faults, as a failed authentication may),
 * so the hook is never written with a signature the function's own
 * authentication would refuse. */
static inline int signed_as(uintptr_t saved, uintptr_t parent, uintptr_t sp, int key)
{
	if (key == FRAME_UNSIGNED)
		return saved == parent;
	return saved == sign_with(parent, sp, key);
}

/*
 * The -pg site ip was called from a function whose frame record is at fp
 * (fp[0]: its caller's x29, fp[1]: its return address as saved, perhaps
 * signed) and whose return address, stripped of any signature, is
 * parent.
 */
void ftrt_entry_frame(uintptr_t ip, uintptr_t *fp, uintptr_t parent)
{
	/* The call's reference for busy (take.h). Under function_graph, its
	 * entry sp, as every return's is: a return a signal handler jumped
	 * out of leaves busy at that, and only a call at or above it takes
	 * busy back. Under function, which has no returns, fp + 16, a bound
	 * from below, without reading the prologue (three times the
	 * instructions of the call's record); so too for a prologue not
	 * understood. */
	if (ftrt_mode != FTRT_GRAPH) {
		struct tbuf *b = enter((uintptr_t)(fp + 2));
		if (b) {
			record_call(b, now(), ip, parent);
			unbusy(b, 0);
		}
		return;
	}
	struct frame_shape fs = { 0, FRAME_UNSIGNED };
	int known = arm64_frame_shape(ip, &fs);
	uintptr_t sp = known ? (uintptr_t)fp + fs.cfa : (uintptr_t)(fp + 2);
	struct tbuf *b = enter(sp);
	if (!b)
		return;
	if (!known || !signed_as(fp[1], parent, sp, fs.key)) {
		ftrt_graph_call(b, ip, sp, parent);
	} else {
		uintptr_t hook = (uintptr_t)return_to_handler;
		/* Signed when the prologue signed, whatever the saved copy
		 * looks like: a signature may be all zero bits, and without
		 * pointer authentication both instructions do nothing. */
		if (ftrt_graph_push(b, ip, sp, parent, hook))
			fp[1] = fs.key == FRAME_UNSIGNED ? hook : sign_with(hook, sp, fs.key);
	}
	unbusy(b, 0);
}

/*
 * For graph users (fgraph.c): how the return of the -pg site ip's
 * function, whose frame record is fp and whose return address,
 * stripped, is parent, is hooked, as ftrt_entry_frame hooks it for
 * function_graph: the frame record's saved x30, the entry sp the
 * prologue says, return_to_handler signed as the prologue signed. -1
 * when the prologue is not understood, or the saved address is not
 * parent signed as it says (the tracer records such a call untimed).
 */
int ftrt_arm64_mcount_hook(uintptr_t ip, uintptr_t *fp, uintptr_t parent, struct fgraph_hook *h)
{
	struct frame_shape fs = { 0, FRAME_UNSIGNED };
	if (!fp || !arm64_frame_shape(ip, &fs))
		return -1;
	uintptr_t sp = (uintptr_t)fp + fs.cfa, hook = (uintptr_t)return_to_handler;
	/* The tracer may have hooked it already, in this walk. */
	if (!signed_as(fp[1], parent, sp, fs.key) && !signed_as(fp[1], hook, sp, fs.key))
		return -1;
	h->slot = &fp[1];
	h->sp = sp;
	h->ret = parent;
	h->val = fs.key == FRAME_UNSIGNED ? hook : sign_with(hook, sp, fs.key);
	return 0;
}

/*
 * For the arguments (capture.c, through fregs.c): the stack pointer at
 * the entry of the -pg site ip's function, whose frame record is fp, as
 * its prologue says; 0 when the prologue is not understood.
 */
uintptr_t ftrt_arm64_mcount_entry_sp(uintptr_t ip, const uintptr_t *fp)
{
	struct frame_shape fs = { 0, FRAME_UNSIGNED };
	if (!fp || !arm64_frame_shape(ip, &fs))
		return 0;
	return (uintptr_t)fp + fs.cfa;
}
