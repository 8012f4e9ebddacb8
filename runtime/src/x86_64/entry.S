/*
 * Entry hooks for x86-64.
 *
 * Call-site shapes (see sites/ for how recordmcount finds them):
 *   -pg -mfentry        call __fentry__   first instruction (after endbr64,
 *                                         and after the NOPs of a patchable
 *                                         area if the function has one),
 *                                         before the frame is built: the
 *                                         return address into the function is
 *                                         at 0(%rsp), the caller's at 8(%rsp)
 *                       push %r10         a GNU C nested function: gcc saves
 *                       call __fentry__   its static chain around the call,
 *                       pop %r10          so the caller's return address is
 *                                         at 16(%rsp) (a chain site)
 *   -pg                 call mcount       after `push %rbp; mov %rsp,%rbp`
 * Every argument register (rdi rsi rdx rcx r8 r9, rax for varargs, xmm0-7)
 * is live at the call and must be preserved; these stubs touch nothing.
 *
 * At load time ftrt_init turns every call site into a NOP, so these stubs
 * only run for a site that is enabled, or before ftrt_init (constructors
 * of other objects that run first).
 */
#include "../abi.h"
#include "../layout.h"
#include "args.h"


/*
 * The fast paths' pieces. SAVE_SCRATCH, RESTORE_SCRATCH: the four
 * registers they use (rax rcx rdx rsi), saved on the stack: 32 bytes,
 * rax deepest. TBUF_RCX: rcx = the thread's struct tbuf (initial-exec
 * TLS: the runtime is linked into the program), NULL before its first
 * event.
 *
 * Records (tracer.h, abi.h): each holds its time as a delta from the
 * last record's, last (TB_LAST). A fast path writes only a record whose
 * fields fit: delta = ts - last under 2^15 and a site under 2^47 (a
 * CALL, an ENTRY), delta under 2^62 (an EXIT). A clock that went back
 * (ts below last: the unsigned difference is huge) does not fit, nor
 * does the first record of a stream (last 0) as a CALL or an ENTRY; as
 * an EXIT it holds the whole time, which decodes the same from the
 * stream's clock at 0. The checks come before anything changes, and
 * anything that does not fit goes to the C path, which writes the long
 * form or a TIME first. Then
 * one store of the packed word (a CALL: two), last = ts, n raised: all
 * under busy, last read under it too (a signal handler's records, before
 * busy is set, move it).
 *
 * Every fast path that writes a buffer sets the thread's busy, then reads
 * ftrt_ending, in that order: when the trace is ending (another thread,
 * or a signal handler, is in ftrt_trace_end, flushing every buffer) it
 * clears busy and leaves the work to C, which records nothing. The end
 * sets ftrt_ending and then waits for each busy buffer to be let go
 * (C's side of the handshake is in end.c); n goes up only after the
 * words it counts are written, so the end reads whole records.
 *
 * Signal handlers: busy is tested and set before anything else of the
 * buffer is read. A handler that interrupts a fast path before the set
 * runs its traced calls to the end (they push and pop, fill and flush
 * the buffer) before the path goes on, so every value the path uses is
 * read after them; one that interrupts it after the set finds busy and
 * its calls are dropped, counted. A value read before the set (n, the
 * depth, the top of the shadow stack) could be stale by then: a record
 * written past a buffer a handler filled, a shadow entry over one it
 * pushed.
 */
.macro SAVE_SCRATCH
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
.endm

.macro RESTORE_SCRATCH
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	popq	%rax
	.cfi_adjust_cfa_offset -8
.endm

	.hidden	ftrt_tb
.macro TBUF_RCX
	movq	ftrt_tb@gottpoff(%rip), %rcx
	movq	%fs:(%rcx), %rcx		/* struct tbuf *b */
.endm

/*
 * TAKE_BUF slow, unbusy, ref: the graph hooks' start. rcx = the thread's
 * struct tbuf, its busy set to the traced call's stack pointer (ref: the
 * function's at its entry or return, which tells a holder a longjmp left
 * from a signal handler's call, see take.h's take), then rdx = rdtsc
 * (64 bits; rax clobbered): the time is
 * taken under busy, so no record a signal handler writes meanwhile goes
 * into the stream after this one with a later time. To \slow when the
 * thread has no buffer yet or is in the tracer already; to \unbusy
 * (which must clear busy) when the trace is ending.
 */
.macro TAKE_BUF slow, unbusy, ref
	TBUF_RCX
	testq	%rcx, %rcx
	jz	\slow				/* the thread's first event: C makes the buffer */
	cmpq	$0, TB_BUSY(%rcx)
	jne	\slow				/* in the tracer already (a signal handler's call), or left */
	leaq	\ref, %rax
	movq	%rax, TB_BUSY(%rcx)		/* everything below is read under busy */
	rdtsc
	shlq	$32, %rdx
	orq	%rax, %rdx			/* rdx = ts */
	cmpl	$0, ftrt_ending(%rip)		/* read after busy is set: see ftrt_trace_end */
	jne	\unbusy
.endm

	.text

	.globl	__fentry__
	.type	__fentry__, @function
	.p2align 4
__fentry__:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	__fentry__, .-__fentry__

	.globl	mcount
	.type	mcount, @function
	.p2align 4
mcount:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	mcount, .-mcount

/*
 * ftrace_caller5, ftrace_caller6: where an enabled site calls.
 *
 * Call-site shape: a site at a function's entry (after endbr64), enabled
 * as `call ftrace_caller5` (e8 rel32, 5 bytes) or `addr32 call
 * ftrace_caller6` (67 e8 rel32, 6 bytes); or, for -pg, a site after the
 * prologue calling ftrace_mcount_caller5/6, whose parent ip is at 8(%rbp)
 * rather than in the slot shown below. On entry here:
 *
 *     0(%rsp)  return address into the traced function = site + 5 or + 6
 *     8(%rsp)  return address into its caller           = parent ip
 *
 * The tracer may replace the parent ip in its slot with return_to_handler
 * (function_graph), so the function returns through us.
 *
 * Live: every argument register (rdi rsi rdx rcx r8 r9; rax = number of
 * vector registers for varargs; r10 = static chain) and xmm0-7. The
 * tracer is C built with -mgeneral-regs-only, so it never touches the
 * vector registers; the general caller-saved ones are saved here. Flags
 * are not live at a function's entry.
 *
 * Frame built below the return address. At the function's entry rsp was
 * 8 mod 16; our return address makes it 0, nine pushes 8, and 8 bytes of
 * padding realign it for the C call:
 *
 *     88(%rsp) parent ip            (the caller's return address)
 *     80(%rsp) return into function (site + len)
 *     72(%rsp) rax
 *     64(%rsp) rdi
 *     56(%rsp) rsi
 *     48(%rsp) rdx
 *     40(%rsp) rcx
 *     32(%rsp) r8
 *     24(%rsp) r9
 *     16(%rsp) r10
 *      8(%rsp) r11
 *      0(%rsp) padding
 */
/*
 * One trampoline per site length, so the site's address is the return
 * address minus a constant: no lookup in the hot path.
 *
 * The function tracer's common case is written out here, without a C
 * call: the trace is open and the tracer is function on the TSC clock
 * (ftrt_fast_function, which is 0 until then: before ftrt_init a
 * pre-patched site may run where TLS is not set up yet), the thread has
 * a buffer with room for the record, and it is not in the tracer already
 * (a signal handler), and the record fits (see above). The record is two
 * words: REC_CALL (0) << 62 | delta << 47 | site, and the parent ip.
 * Fast path frame:
 *
 *     40(%rsp) parent ip (entry sites; -pg sites have it at 8(%rbp))
 *     32(%rsp) return into function (site + len)
 *     24(%rsp) rax
 *     16(%rsp) rcx
 *      8(%rsp) rdx
 *      0(%rsp) rsi
 *
 * Registers: rcx = the thread's struct tbuf (layout.h), rsi = &words[n];
 * rax = n, then the parent ip, then the timestamp (rdx:rax = rdtsc); rdx
 * = the delta, then the record's first word. The site's check reads the
 * return address's high half in its stack slot (a return address under
 * 2^47 makes a site under it), and the parent ip goes into words[n+1],
 * before the timestamp is taken, so little waits on it (words past n are
 * nobody's until n is raised). busy is held while the record is written,
 * so a signal handler's traced calls cannot interleave with it (they take
 * the C path, which drops them). Anything else goes to ftrt_entry, with
 * the frame drawn above.
 */
	.hidden	ftrt_fast_function
	.hidden	ftrt_ending
/* A CALL's kind bits are zero, an ENTRY's bit REC_KIND_SHIFT (bts), an
 * EXIT's the bit above it: the fast paths below write no other. */
.if REC_CALL != 0 || REC_ENTRY != 1 || REC_EXIT != 2
.error "abi.h's record kinds changed: the fast paths set the kind bits of CALL 0, ENTRY 1 and EXIT 2"
.endif
/* Bits 47-63 of a 64-bit word, as bits 15-31 of its high half. */
#define SITE_HIGH ((0xffffffff << (REC_SITE_BITS - 32)) & 0xffffffff)
.macro FTRACE_CALLER name, len, fastparent, slot
	.text
	.globl	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	cmpl	$0, ftrt_fast_function(%rip)
	je	2f
	SAVE_SCRATCH
	TBUF_RCX
	testq	%rcx, %rcx
	jz	1f				/* the thread's first event: C makes the buffer */
	cmpq	$0, TB_BUSY(%rcx)
	jne	1f				/* in the tracer already (a signal handler's call), or left */
	leaq	8+\fastparent, %rax		/* the traced call's stack pointer (see TAKE_BUF)... */
	movq	%rax, TB_BUSY(%rcx)		/* ...in busy: no handler's call touches the buffer now */
	cmpl	$0, ftrt_ending(%rip)		/* read after busy is set: see ftrt_trace_end */
	jne	3f
	movl	TB_N(%rcx), %eax		/* n: read under busy, as a handler's calls move it */
	cmpl	$TBUF_WORDS-2, %eax
	ja	3f				/* no room for the record: C flushes */
	testl	$SITE_HIGH, 32+4(%rsp)
	jnz	3f				/* return address of 2^47 or more: the site may not fit (C) */
	leaq	TB_WORDS(%rcx,%rax,8), %rsi	/* &words[n] */
	movq	\fastparent, %rax
	movq	%rax, 8(%rsi)			/* words[n+1] = parent ip */
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax			/* rax = ts */
	movq	%rax, %rdx
	subq	TB_LAST(%rcx), %rdx		/* rdx = delta = ts - last (under busy) */
	cmpq	$REC_DELTA_MAX, %rdx
	ja	3f				/* 2^15 or more, or the clock went back: C */
	movq	%rax, TB_LAST(%rcx)		/* last = ts */
	shlq	$REC_SITE_BITS, %rdx
	addq	32(%rsp), %rdx
	subq	$\len, %rdx			/* rdx = delta << 47 | site (under 2^47), under REC_CALL (0) */
	movq	%rdx, (%rsi)			/* words[n] */
	addl	$2, TB_N(%rcx)			/* n += 2, after the words */
	movq	$0, TB_BUSY(%rcx)
	RESTORE_SCRATCH
	ret
	.cfi_adjust_cfa_offset 32
3:	movq	$0, TB_BUSY(%rcx)		/* the trace is ending (C records nothing), the buffer is full, or the record does not fit */
1:	RESTORE_SCRATCH
2:	PUSH_ARGS
	pushq	%r11
	.cfi_adjust_cfa_offset 8
	subq	$8, %rsp			/* 16-byte alignment for the C call */
	.cfi_adjust_cfa_offset 8
	movq	80(%rsp), %rdi			/* arg 1: ip = return address - site length */
	subq	$\len, %rdi
	leaq	\slot, %rsi			/* arg 2: where the parent ip is: the function's return slot */
	call	ftrt_entry			/* ftrt_entry(ip, &parent_ip) */
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%r11
	.cfi_adjust_cfa_offset -8
	POP_ARGS
	ret
	.cfi_endproc
	.size	\name, .-\name
.endm

	/* Entry sites (-mfentry, -fpatchable-function-entry): the return slot
	 * is just above our own return address. */
	FTRACE_CALLER ftrace_caller5, 5, 40(%rsp), 88(%rsp)	/* sites enabled as e8 rel32 */
	FTRACE_CALLER ftrace_caller6, 6, 40(%rsp), 88(%rsp)	/* sites enabled as 67 e8 rel32 */
	/* mcount sites (-pg): after `push %rbp; mov %rsp,%rbp`, so the
	 * function's return slot is 8(%rbp); rbp is callee-saved and ours
	 * leave it alone. */
	FTRACE_CALLER ftrace_mcount_caller5, 5, 8(%rbp), 8(%rbp)
	FTRACE_CALLER ftrace_mcount_caller6, 6, 8(%rbp), 8(%rbp)
	/*
	 * Chain sites (-mfentry in a GNU C nested function): gcc brackets
	 * the call with `push %r10` and `pop %r10` to keep the static chain,
	 * which the function reads its enclosing function's variables
	 * through. The return slot is one word above the frame drawn for the
	 * entry sites, past the saved r10, which is left alone (r10 itself
	 * is saved and restored by PUSH_ARGS, and holds the same value):
	 *
	 *     16(%rsp) parent ip (the caller's return address)   fast path 48(%rsp), C path 96(%rsp)
	 *      8(%rsp) r10 as the function pushed it (the static chain)
	 *      0(%rsp) return into the function (site + len)
	 *
	 * function_graph hijacks the return here, through return_to_handler,
	 * as at an mcount site: a per-site trampoline, which drops the word
	 * on top of the stack and calls the body in its place, would drop
	 * the saved r10 instead of the return address.
	 */
	FTRACE_CALLER ftrace_chain_caller5, 5, 48(%rsp), 96(%rsp)	/* sites enabled as e8 rel32 */
	FTRACE_CALLER ftrace_chain_caller6, 6, 48(%rsp), 96(%rsp)	/* sites enabled as 67 e8 rel32 */

/*
 * ftrace_stub: the empty tracer (FTRACE=nop). Enabled sites call it
 * directly and it returns: the cost of a patched site and nothing else.
 */
	.text
	.globl	ftrace_stub
	.type	ftrace_stub, @function
	.p2align 4
ftrace_stub:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	ftrace_stub, .-ftrace_stub

/*
 * return_to_handler: where a function graphed by ftrt_entry returns to,
 * in place of its caller.
 *
 * On entry the function has just executed `ret`: rsp is what it was
 * before the call into the function (16-byte aligned), and the return
 * value is live in rax and rdx (integers, small structs), xmm0 and xmm1
 * (floating point) or st0 (long double). The C exit hook is built with
 * -mgeneral-regs-only and touches neither the vector nor the x87
 * registers; rax and rdx are saved here:
 *
 *     24(%rsp) the function's return slot: still return_to_handler
 *     16(%rsp) padding
 *      8(%rsp) rdx
 *      0(%rsp) rax         <- rsp, 16-byte aligned for the C call
 *
 * The slot is left as the function's `ret` found it until
 * ftrt_graph_exit has popped the call: a signal handler's traced call in
 * between must find the hook there, or it would take the call for one a
 * longjmp left (see ftrace_graph_enter).
 *
 * ftrt_graph_exit(sp) records the exit and returns the original return
 * address, which we jump to (through r11, which no return value uses).
 */
	.text
	.globl	return_to_handler
	.type	return_to_handler, @function
	.p2align 4
return_to_handler:
	.cfi_startproc
	.cfi_undefined rip			/* the unwinder cannot see past a hijacked return */
	subq	$32, %rsp
	movq	%rax, 0(%rsp)
	movq	%rdx, 8(%rsp)
	leaq	32(%rsp), %rdi			/* arg 1: the stack pointer the function returned with */
	call	ftrt_graph_exit			/* rax = ftrt_graph_exit(sp): the original return address */
	movq	%rax, %r11
	movq	8(%rsp), %rdx
	movq	0(%rsp), %rax
	addq	$32, %rsp
	jmp	*%r11
	.cfi_endproc
	.size	return_to_handler, .-return_to_handler

/*
 * Per-site graph trampolines (function_graph at entry sites).
 *
 * Hijacking a return address costs a mispredicted return on every traced
 * call: the CPU's return stack says "back to the caller", the function
 * goes to return_to_handler instead. So at sites at a function's entry
 * (-mfentry, -fpatchable-function-entry) the graph tracer does not
 * hijack: the site becomes `jmp` to a trampoline of its own, built at
 * load time (x86_64/site.c) in a page near the code, which *calls* the
 * function's body, so that every call has its matching return:
 *
 *   tramp+0   lea   site(%rip), %r11        the site, for the record
 *   tramp+7   call  *enter(%rip)            ftrace_graph_enter; ZF=1: not graphed
 *   tramp+13  je    tramp+30
 *   tramp+15  add   $8, %rsp                drop the caller's return address
 *                                           (saved on the shadow stack)...
 *   tramp+19  call  body                    ...and call the body in its place:
 *                                           it returns to tramp+24, its hook
 *   tramp+24  jmp   *leave(%rip)            ftrace_graph_leave
 *   tramp+30  jmp   body                    not graphed: as if never here
 *
 * (abi.h names each offset: TRAMP_LEA, TRAMP_CALL_ENTER, TRAMP_ENTERED,
 * TRAMP_DROP, TRAMP_CALL_BODY, TRAMP_HOOK, TRAMP_SKIP.)
 *
 * body is the instruction after the site. The call at tramp+19 puts its
 * return address exactly where the caller's was, so the function sees its
 * stack arguments where it expects them; ftrace_graph_leave then returns
 * to the caller with a `ret` the return stack predicts. r11 is free at a
 * function's entry (no argument uses it); flags are not live there.
 *
 * The return slot holds the hook (tramp+24) for as long as the call is
 * on the shadow stack: ftrace_graph_enter writes it there together with
 * the shadow entry, under busy, before the trampoline drops the caller's
 * return address; the call at tramp+19 writes the same value again; and
 * once the function has returned, the slot, below the stack pointer now,
 * lies in the red zone, which a signal frame never overwrites, until
 * ftrace_graph_leave has popped the entry. So a signal handler's traced
 * call, whatever instruction it interrupts, finds every live call's slot
 * holding its hook, and never takes one for a frame a longjmp left.
 *
 * ftrace_graph_enter: called from tramp+7, with r11 = the site. The
 * common case is written out here, without a C call: the trace is open
 * on the TSC with no FTRACE_THRESH (ftrt_fast_graph), the thread has a
 * buffer with room, is not in the tracer already (a signal handler), has
 * not overflowed or gone past FTRACE_DEPTH, no exception is being
 * unwound, the call on top of the shadow stack is still live (its
 * frame is above ours and its return slot still holds its hook), and
 * the record fits (the site, checked first, under 2^47; the delta from
 * last under 2^15, checked last, before anything changes). Anything
 * else goes to the C path (.Lenter_slow), which handles it all.
 *
 * With the subtree filters on (ftrt_subtree, see subtree.c) a site may be
 * marked chosen or notrace: its bit in ftrt_subtree_maybe says it may be,
 * and then C looks it up (.Lenter_subtree). An unmarked site's call is
 * decided by the thread's counts: outside every chosen call
 * (FTRACE_GRAPH_FUNCS set, own.chosen 0) it is not graphed, without
 * taking busy or the time: nothing of the buffer is touched, and a count
 * read before busy is never too low (a call a longjmp left leaves its
 * count up until C pops it, never down), so the worst a race with a
 * signal handler can do is leave out a handler's call made while the
 * tracer it interrupted was still pushing a chosen one. Inside a notrace
 * call (own.notrace, read under busy once the top call is seen live) it
 * is not graphed either.
 * Where the timestamp is taken matters: on the machines measured, the
 * work that follows an rdtsc waits for it, so a chain of dependent loads
 * after the timestamp adds its latency to every call. The thread's buffer
 * pointer, which depends on nothing, is loaded just before the timestamp
 * (4 ns a graphed call faster than just after it); the checks come after
 * it: they read what the previous hook stored, and moved before it they
 * gained nothing. Fast path frame:
 *
 *     40(%rsp) the function's return slot: the caller's return address
 *     32(%rsp) return into the trampoline = tramp+13 (the hook is +11)
 *     24(%rsp) rax  (number of vector registers, for varargs)
 *     16(%rsp) rcx  (argument 4)
 *      8(%rsp) rdx  (argument 3)
 *      0(%rsp) rsi  (argument 2)
 *
 * Registers: r11 = the site; rdx = the timestamp, then scratch; rcx =
 * the thread's struct tbuf (layout.h); eax = depth d, then scratch, then
 * the record's word; rsi = &shadow[d]. The entry record is one word,
 * words[n] = REC_ENTRY << 62 | delta << 47 | site; the shadow entry
 * {caller's return address, site, sp, hook, no mark} (its stream
 * position is for FTRACE_THRESH, whose runs take the C path), and the
 * hook written into the return slot. busy is held across the reads and
 * the updates, so a signal handler's traced calls cannot interleave
 * (they take the C path, which drops them).
 */
	.hidden	ftrt_fast_graph
	.hidden	ftrt_max_depth
	.hidden	ftrt_subtree
	.hidden	ftrt_subtree_maybe
.if SH_SIZE != 48
.error "the shadow stack's index below multiplies by 48 (3 << 4): struct shadow changed size"
.endif
	.text
	.globl	ftrace_graph_enter
	.type	ftrace_graph_enter, @function
	.p2align 4
ftrace_graph_enter:
	.cfi_startproc
	cmpl	$0, ftrt_fast_graph(%rip)
	je	.Lenter_c			/* no trace open, or a clock or option C handles */
	SAVE_SCRATCH
	cmpl	$0, ftrt_subtree(%rip)
	jne	.Lenter_subtree			/* FTRACE_GRAPH_FUNCS or FTRACE_GRAPH_NOTRACE set */
.Lenter_take:
	movq	%r11, %rax
	shrq	$REC_SITE_BITS, %rax
	jnz	.Lenter_slow			/* a site of 2^47 or more: the long form (C) */
	TAKE_BUF .Lenter_slow, .Lenter_unbusy, 48(%rsp)
	movl	TB_STOPPED(%rcx), %eax
	orl	TB_SUSPENDED(%rcx), %eax
	jnz	.Lenter_unbusy
	cmpl	$TBUF_WORDS-1, TB_N(%rcx)
	ja	.Lenter_unbusy			/* no room for the record: C flushes */
	movl	TB_DEPTH(%rcx), %eax		/* d */
	cmpl	ftrt_max_depth(%rip), %eax
	jae	.Lenter_unbusy			/* FTRACE_DEPTH, or the shadow stack full */
	leaq	(%rax,%rax,2), %rsi
	shlq	$4, %rsi			/* d * SH_SIZE (48) */
	leaq	TB_SHADOW(%rcx,%rsi), %rsi	/* &shadow[d] */
	testl	%eax, %eax
	jz	1f
	leaq	48(%rsp), %rax			/* our sp: the function will return with it */
	cmpq	%rax, SH_SP-SH_SIZE(%rsi)
	jb	.Lenter_unbusy			/* shadow[d-1]'s frame is below ours: it was left */
	movq	SH_SP-SH_SIZE(%rsi), %rax
	movq	-8(%rax), %rax			/* shadow[d-1]'s return slot... */
	cmpq	%rax, SH_HOOK-SH_SIZE(%rsi)
	jne	.Lenter_unbusy			/* ...no longer holds its hook: it was left */
	cmpl	$0, TB_NOTRACE(%rcx)
	jne	.Lenter_skip			/* inside a notrace call (0 unless the subtree filters are on) */
1:	movq	%rdx, %rax
	subq	TB_LAST(%rcx), %rax		/* delta = ts - last (under busy) */
	cmpq	$REC_DELTA_MAX, %rax
	ja	.Lenter_unbusy			/* 2^15 or more, or the clock went back: C */
	movq	%rdx, TB_LAST(%rcx)		/* last = ts */
	shlq	$REC_SITE_BITS, %rax
	orq	%r11, %rax
	btsq	$REC_KIND_SHIFT, %rax		/* rax = REC_ENTRY (1) << 62 | delta << 47 | site */
	movq	40(%rsp), %rdx
	movq	%rdx, SH_RET(%rsi)		/* the caller's return address */
	movq	%r11, SH_IP(%rsi)		/* the site */
	leaq	48(%rsp), %rdx
	movq	%rdx, SH_SP(%rsi)		/* sp at the return */
	movq	$0, SH_MARK(%rsi)		/* an unmarked call */
	movq	32(%rsp), %rdx
	addq	$TRAMP_HOOK-TRAMP_ENTERED, %rdx
	movq	%rdx, SH_HOOK(%rsi)		/* tramp+24 */
	incl	TB_DEPTH(%rcx)			/* pushed, once whole */
	movq	%rdx, 40(%rsp)			/* the return slot holds the hook from now on */
	movl	TB_N(%rcx), %edx		/* n */
	movq	%rax, TB_WORDS(%rcx,%rdx,8)	/* words[n] */
	incl	TB_N(%rcx)			/* n += 1, after the word */
	movq	$0, TB_BUSY(%rcx)
	testq	%rsp, %rsp			/* ZF=0: graphed */
	RESTORE_SCRATCH
	ret
	.cfi_adjust_cfa_offset 32
/*
 * The subtree filters' check, before busy (see above): r11 = the site;
 * rax, rcx, rdx, rsi free. The site's bit is (site >> 4) % SUBTREE_BITS
 * of ftrt_subtree_maybe (subtree.c's ftrt_subtree_mark): the word
 * ((site >> 4) >> 6) % (SUBTREE_BITS / 64), and bt takes the bit number
 * mod 64 from rax itself.
 */
.Lenter_subtree:
	movq	%r11, %rax
	shrq	$4, %rax
	movl	%eax, %edx
	shrl	$6, %edx
	andl	$SUBTREE_BITS/64-1, %edx
	leaq	ftrt_subtree_maybe(%rip), %rsi
	movq	(%rsi,%rdx,8), %rdx		/* the site's word */
	btq	%rax, %rdx
	jc	.Lenter_slow			/* the site may be marked: C looks it up */
	testl	$SUBTREE_FUNCS, ftrt_subtree(%rip)
	jz	.Lenter_take			/* FTRACE_GRAPH_NOTRACE alone: only own.notrace decides, under busy */
	TBUF_RCX
	testq	%rcx, %rcx
	jz	.Lenter_slow			/* the thread's first event */
	cmpl	$0, TB_CHOSEN(%rcx)
	jne	.Lenter_take			/* a chosen call is live (or was left: the checks under busy see it) */
	jmp	.Lenter_out			/* outside every chosen call: not graphed */
.Lenter_skip:
	movq	$0, TB_BUSY(%rcx)		/* inside a notrace call: not graphed */
.Lenter_out:
	RESTORE_SCRATCH
	cmpq	%rsp, %rsp			/* ZF=1: not graphed */
	ret
	.cfi_adjust_cfa_offset 32
.Lenter_unbusy:
	movq	$0, TB_BUSY(%rcx)
.Lenter_slow:
	RESTORE_SCRATCH
.Lenter_c:
/*
 * The C path, with the frame as at ftrace_graph_enter's entry:
 *
 *     72(%rsp) the function's return slot: the caller's return address
 *     64(%rsp) return into the trampoline = tramp+13 (the hook is +11)
 *     56(%rsp) rax  (number of vector registers, for varargs)
 *     48(%rsp) rdi
 *     40(%rsp) rsi
 *     32(%rsp) rdx
 *     24(%rsp) rcx
 *     16(%rsp) r8
 *      8(%rsp) r9
 *      0(%rsp) r10  (static chain)       <- rsp, 16-byte aligned
 *
 * At the function's entry rsp was 8 mod 16; the call made it 0, and eight
 * pushes keep it so for the C call. ftrt_graph_enter(ip, slot, hook)
 * returns 1 when it pushed the call on the shadow stack; the test sets
 * ZF for the trampoline, and the pops leave the flags alone.
 */
	PUSH_ARGS
	movq	%r11, %rdi			/* arg 1: the site */
	leaq	72(%rsp), %rsi			/* arg 2: the function's return slot */
	movq	64(%rsp), %rdx
	addq	$TRAMP_HOOK-TRAMP_ENTERED, %rdx	/* arg 3: the hook, tramp+24 */
	call	ftrt_graph_enter
	testl	%eax, %eax			/* ZF=1: not graphed */
	POP_ARGS
	ret
	.cfi_endproc
	.size	ftrace_graph_enter, .-ftrace_graph_enter

/*
 * ftrace_graph_leave: jumped to from tramp+24 when the function has
 * returned there. rsp is what it was before the caller's call (16-byte
 * aligned); the return value is live in rax and rdx, xmm0 and xmm1, or
 * st0. Nothing here touches the vector or x87 registers (nor does the C
 * exit hook, built -mgeneral-regs-only); rax and rdx are saved; rcx, rsi,
 * rdi and r8-r11 are dead after a return.
 *
 *     24(%rsp) the function's old return slot: gets the real return address
 *     16(%rsp) padding
 *      8(%rsp) rdx
 *      0(%rsp) rax         <- rsp, 16-byte aligned for the C call
 *
 * The common case is written out: the trace is on the TSC with no
 * threshold (ftrt_fast_graph), the call on top of the shadow stack is the
 * one returning (its sp is ours) and carries no mark of the subtree
 * filters (a chosen or notrace call's return gives back its count in C),
 * the buffer has room, the delta from last is under 2^62 (not so when
 * the clock went back). The buffer pointer is loaded before the
 * timestamp, the checks after it, as at entry. rdx = the timestamp, then
 * n; rcx = the thread's struct tbuf; rsi = &shadow[depth-1]; rax = the
 * delta, then the record's word; rdi scratch. The exit record is one
 * word, REC_EXIT << 62 | delta; busy is set before the shadow stack and
 * the buffer are read, and held while they change. The old return slot, at
 * 24(%rsp), still holds the hook until the real address is written there:
 * the stores above go below it.
 * Anything else goes to ftrt_graph_exit(sp), which records the exit (and
 * any calls a longjmp left) and gives the real return address. Either
 * way the final `ret` goes there, as the caller's call predicted.
 */
	.text
	.globl	ftrace_graph_leave
	.type	ftrace_graph_leave, @function
	.p2align 4
ftrace_graph_leave:
	.cfi_startproc
	.cfi_undefined rip			/* the caller's return address is on the shadow stack */
	subq	$32, %rsp
	movq	%rax, 0(%rsp)
	movq	%rdx, 8(%rsp)
	cmpl	$0, ftrt_fast_graph(%rip)
	je	.Lleave_slow
	TAKE_BUF .Lleave_slow, .Lleave_unbusy, 32(%rsp)
	cmpl	$TBUF_WORDS-1, TB_N(%rcx)
	ja	.Lleave_unbusy
	movl	TB_DEPTH(%rcx), %eax
	testl	%eax, %eax
	jz	.Lleave_unbusy
	leaq	(%rax,%rax,2), %rsi
	shlq	$4, %rsi			/* d * SH_SIZE (48) */
	leaq	TB_SHADOW-SH_SIZE(%rcx,%rsi), %rsi	/* &shadow[d-1] */
	leaq	32(%rsp), %rdi
	cmpq	%rdi, SH_SP(%rsi)
	jne	.Lleave_unbusy			/* not the call on top: a longjmp left some */
	cmpq	$0, SH_MARK(%rsi)
	jne	.Lleave_unbusy			/* a chosen or notrace call: C gives back its count */
	movq	%rdx, %rax
	subq	TB_LAST(%rcx), %rax		/* delta = ts - last (under busy) */
	movq	%rax, %rdi
	shrq	$REC_EXIT_BITS, %rdi
	jnz	.Lleave_unbusy			/* 2^62 or more: the clock went back, C */
	movq	%rdx, TB_LAST(%rcx)		/* last = ts */
	btsq	$REC_KIND_SHIFT+1, %rax		/* rax = REC_EXIT (2) << 62 | delta */
	movq	SH_RET(%rsi), %rdi
	movq	%rdi, 24(%rsp)			/* the real return address, where ret finds it */
	decl	TB_DEPTH(%rcx)
	movl	TB_N(%rcx), %edx
	movq	%rax, TB_WORDS(%rcx,%rdx,8)	/* words[n] */
	incl	TB_N(%rcx)			/* n += 1, after the word */
	movq	$0, TB_BUSY(%rcx)
	jmp	.Lleave_done
.Lleave_unbusy:
	movq	$0, TB_BUSY(%rcx)		/* anything but the common case: C pops the call */
.Lleave_slow:
	leaq	32(%rsp), %rdi			/* arg 1: the stack pointer the function returned with */
	call	ftrt_graph_exit			/* rax = the real return address */
	movq	%rax, 24(%rsp)
.Lleave_done:
	movq	8(%rsp), %rdx
	movq	0(%rsp), %rax
	addq	$24, %rsp
	ret
	.cfi_endproc
	.size	ftrace_graph_leave, .-ftrace_graph_leave

	.section .note.GNU-stack, "", @progbits
