/*
 * function_graph's hooks for x86-64: return_to_handler, where a call
 * hijacked at an mcount or chain site (ftrt_entry) returns, and the
 * per-site graph trampolines' entry and return, ftrace_graph_enter and
 * ftrace_graph_leave (the trampolines themselves are built by site.c).
 * The call-site trampolines and the hooks the compiler calls are in
 * entry.S; the pieces both share in fast.h. A library call's graph
 * stub enters ftrace_libgraph_enter, which shares ftrace_graph_enter's
 * push (GRAPH_PUSH), and leaves by ftrace_graph_leave.
 */
#include "abi.h"
#include "arch/layout.h"
#include "arch/x86_64/args.h"
#include "arch/x86_64/fast.h"

/*
 * return_to_handler: where a function graphed by ftrt_entry returns to,
 * in place of its caller.
 *
 * On entry the function has just executed `ret`: rsp is what it was
 * before the call into the function (16-byte aligned), and the return
 * value is live in rax and rdx (integers, small structs), xmm0 and xmm1
 * (floating point) or st0 (long double). The C exit hook is built with
 * -mgeneral-regs-only and touches neither the vector nor the x87
 * registers.
 *
 * Every general register the C call may change is kept, not only the
 * return registers: a site made from a prologue (ftpatch instrument,
 * record -P) is in a function compiled without tracing flags, and its
 * callers may keep values in call-clobbered registers across the call
 * (gcc's -fipa-ra, when it sees the function leave them alone). So this
 * hook, which every kind of site shares, returns with no register but
 * the flags changed, and without a scratch register: the original
 * return address goes into the function's old return slot, below the
 * stack pointer now (the red zone, which a signal frame never
 * overwrites), and is jumped to through it. The frame (FULL_FRAME, 80
 * bytes; rax and rdx where ftrt_arch_fgraph_exit_regs reads them, 32
 * and 24 bytes below the stack pointer the function returned with):
 *
 *     72(%rsp) the function's return slot: still return_to_handler,
 *              then the original return address
 *     64(%rsp) r11
 *     56(%rsp) rdx
 *     48(%rsp) rax
 *     40(%rsp) r10
 *     32(%rsp) r9
 *     24(%rsp) r8
 *     16(%rsp) rdi
 *      8(%rsp) rsi
 *      0(%rsp) rcx         <- rsp, 16-byte aligned for the C call
 *
 * The slot is left as the function's `ret` found it until
 * ftrt_graph_exit has popped the call: a signal handler's traced call in
 * between must find the hook there, or it would take the call for one a
 * longjmp left (see ftrace_graph_enter).
 *
 * ftrt_graph_exit(sp) records the exit and returns the original return
 * address. The jump through memory is predicted as the jump through a
 * register was (the return stack is off by one here anyway: the
 * function's `ret` came here).
 */
	.text
	.globl	return_to_handler
	.type	return_to_handler, @function
	.p2align 4
return_to_handler:
	.cfi_startproc
	.cfi_undefined rip			/* the unwinder cannot see past a hijacked return */
	subq	$FULL_FRAME, %rsp
	.cfi_adjust_cfa_offset FULL_FRAME
	SAVE_FULL
	leaq	FULL_FRAME(%rsp), %rdi		/* arg 1: the stack pointer the function returned with */
	call	ftrt_graph_exit			/* rax = ftrt_graph_exit(sp): the original return address */
	movq	%rax, FULL_SLOT(%rsp)		/* into the dead return slot */
	RESTORE_FULL
	addq	$FULL_FRAME, %rsp
	.cfi_adjust_cfa_offset -FULL_FRAME
	jmp	*-8(%rsp)			/* the original return address, from the slot */
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
 * load time (arch/x86_64/site.c) in a page near the code, which *calls* the
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
/*
 * GRAPH_PUSH slow, unbusy, skip: the fast path's push, with r11 = the
 * site and the frame drawn above (SAVE_SCRATCH done): to \slow (busy
 * not taken) or \unbusy (busy taken: it must clear it) for anything but
 * the common case, to \skip (busy taken) inside a notrace call. Falls
 * through with the call pushed, its entry recorded, its return slot
 * holding the hook and busy clear.
 */
.macro GRAPH_PUSH slow, unbusy, skip, o=0
	movq	%r11, %rax
	shrq	$REC_SITE_BITS, %rax
	jnz	\slow				/* a site of 2^47 or more: the long form (C) */
	TAKE_BUF \slow, \unbusy, 48+\o(%rsp)
	movl	TB_STOPPED(%rcx), %eax
	orl	TB_SUSPENDED(%rcx), %eax
	jnz	\unbusy
	cmpl	$TBUF_WORDS-1, TB_N(%rcx)
	ja	\unbusy				/* no room for the record: C flushes */
	movl	TB_DEPTH(%rcx), %eax		/* d */
	cmpl	ftrt_max_depth(%rip), %eax
	jae	\unbusy				/* FTRACE_DEPTH, or the shadow stack full */
	leaq	(%rax,%rax,2), %rsi
	shlq	$4, %rsi			/* d * SH_SIZE (48) */
	leaq	TB_SHADOW(%rcx,%rsi), %rsi	/* &shadow[d] */
	testl	%eax, %eax
	jz	1f
	leaq	48+\o(%rsp), %rax			/* our sp: the function will return with it */
	cmpq	%rax, SH_SP-SH_SIZE(%rsi)
	jb	\unbusy				/* shadow[d-1]'s frame is below ours: it was left */
	movq	SH_SP-SH_SIZE(%rsi), %rax
	movq	-8(%rax), %rax			/* shadow[d-1]'s return slot... */
	cmpq	%rax, SH_HOOK-SH_SIZE(%rsi)
	jne	\unbusy				/* ...no longer holds its hook: it was left */
	cmpl	$0, TB_NOTRACE(%rcx)
	jne	\skip				/* inside a notrace call (0 unless the subtree filters are on) */
1:	movq	%rdx, %rax
	subq	TB_LAST(%rcx), %rax		/* delta = ts - last (under busy) */
	cmpq	$REC_DELTA_MAX, %rax
	ja	\unbusy				/* 2^15 or more, or the clock went back: C */
	movq	%rdx, TB_LAST(%rcx)		/* last = ts */
	shlq	$REC_SITE_BITS, %rax
	orq	%r11, %rax
	btsq	$REC_KIND_SHIFT, %rax		/* rax = REC_ENTRY (1) << 62 | delta << 47 | site */
	movq	40+\o(%rsp), %rdx
	movq	%rdx, SH_RET(%rsi)		/* the caller's return address */
	movq	%r11, SH_IP(%rsi)		/* the site */
	leaq	48+\o(%rsp), %rdx
	movq	%rdx, SH_SP(%rsi)		/* sp at the return */
	movq	$0, SH_MARK(%rsi)		/* an unmarked call */
	movq	32+\o(%rsp), %rdx
	addq	$TRAMP_HOOK-TRAMP_ENTERED, %rdx
	movq	%rdx, SH_HOOK(%rsi)		/* tramp+24 */
	incl	TB_DEPTH(%rcx)			/* pushed, once whole */
	movq	%rdx, 40+\o(%rsp)			/* the return slot holds the hook from now on */
	movl	TB_N(%rcx), %edx		/* n */
	movq	%rax, TB_WORDS(%rcx,%rdx,8)	/* words[n] */
	incl	TB_N(%rcx)			/* n += 1, after the word */
	incq	TB_ENTRIES(%rcx)		/* counted, for the stream's summary */
	movq	$0, TB_BUSY(%rcx)
.endm

/*
 * GRAPH_ENTER name, o: ftrace_graph_enter (o 0), and, o 8, its variant
 * for a site made from a function's prologue, ftrace_prologue_graph_enter.
 *
 * A prologue site is in a function compiled without tracing flags
 * (ftpatch instrument, record -P moved its first instructions into a
 * trampoline whose first bytes are the site), so its callers may keep
 * values in call-clobbered registers across the call (gcc's -fipa-ra),
 * r11 among them: its per-site trampoline is entered at tramp+7, past
 * the lea, whose bytes, never run, still say the site (site.c). The
 * variant saves r11 first, finds the site from the lea's disp32 (its
 * return address is tramp+13: the site is tramp+7 + disp32, and the
 * disp32 at tramp+3), and puts r11 back before it returns; everything
 * else is ftrace_graph_enter's, each frame offset 8 bytes up:
 *
 *     16(%rsp) the function's return slot: the caller's return address
 *      8(%rsp) return into the trampoline = tramp+13
 *      0(%rsp) r11 as the function's caller left it
 *
 * The fast path uses rax rcx rdx rsi (saved by SAVE_SCRATCH), the C
 * path saves the rest (PUSH_ARGS, and 8 bytes of padding for the C
 * call's alignment, which the saved r11 upset): every general register
 * comes back as it came but the flags, whose ZF answers the trampoline.
 */
.macro GRAPH_ENTER name, o
	.text
	.globl	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
.if \o
	pushq	%r11
	.cfi_adjust_cfa_offset 8
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	movq	16(%rsp), %r11			/* tramp+13 */
	movslq	TRAMP_LEA+3-TRAMP_ENTERED(%r11), %rax	/* the lea's disp32 */
	leaq	TRAMP_CALL_ENTER-TRAMP_ENTERED(%r11,%rax), %r11	/* r11 = the site: tramp+7 + disp32 */
	popq	%rax
	.cfi_adjust_cfa_offset -8
.endif
	cmpl	$0, ftrt_fast_graph(%rip)
	je	.L\name\()_c			/* no trace open, or a clock or option C handles */
	SAVE_SCRATCH
	cmpl	$0, ftrt_subtree(%rip)
	jne	.L\name\()_subtree		/* FTRACE_GRAPH_FUNCS or FTRACE_GRAPH_NOTRACE set */
.L\name\()_take:
	GRAPH_PUSH .L\name\()_slow, .L\name\()_unbusy, .L\name\()_skip, \o
	testq	%rsp, %rsp			/* ZF=0: graphed */
	RESTORE_SCRATCH
.if \o
	popq	%r11
	.cfi_adjust_cfa_offset -8
.endif
	ret
	.cfi_adjust_cfa_offset 32+\o
/*
 * The subtree filters' check, before busy (see above): r11 = the site;
 * rax, rcx, rdx, rsi free. The site's bit is (site >> 4) % SUBTREE_BITS
 * of ftrt_subtree_maybe (subtree.c's ftrt_subtree_mark): the word
 * ((site >> 4) >> 6) % (SUBTREE_BITS / 64), and bt takes the bit number
 * mod 64 from rax itself.
 */
.L\name\()_subtree:
	movq	%r11, %rax
	shrq	$4, %rax
	movl	%eax, %edx
	shrl	$6, %edx
	andl	$SUBTREE_BITS/64-1, %edx
	leaq	ftrt_subtree_maybe(%rip), %rsi
	movq	(%rsi,%rdx,8), %rdx		/* the site's word */
	btq	%rax, %rdx
	jc	.L\name\()_slow		/* the site may be marked: C looks it up */
	testl	$SUBTREE_FUNCS, ftrt_subtree(%rip)
	jz	.L\name\()_take		/* FTRACE_GRAPH_NOTRACE alone: only own.notrace decides, under busy */
	TBUF_RCX
	testq	%rcx, %rcx
	jz	.L\name\()_slow		/* the thread's first event */
	cmpl	$0, TB_CHOSEN(%rcx)
	jne	.L\name\()_take		/* a chosen call is live (or was left: the checks under busy see it) */
	jmp	.L\name\()_out		/* outside every chosen call: not graphed */
.L\name\()_skip:
	movq	$0, TB_BUSY(%rcx)		/* inside a notrace call: not graphed */
.L\name\()_out:
	RESTORE_SCRATCH
.if \o
	popq	%r11
	.cfi_adjust_cfa_offset -8
.endif
	cmpq	%rsp, %rsp			/* ZF=1: not graphed */
	ret
	.cfi_adjust_cfa_offset 32+\o
.L\name\()_unbusy:
	movq	$0, TB_BUSY(%rcx)
.L\name\()_slow:
	RESTORE_SCRATCH
.L\name\()_c:
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
 * pushes keep it so for the C call. (ftrace_prologue_graph_enter: the
 * saved r11 at 72, then 8 bytes of padding below r10, which realign it;
 * every offset above 16 more.) ftrt_graph_enter(ip, slot, hook)
 * returns 1 when it pushed the call on the shadow stack; the test sets
 * ZF for the trampoline, and the pops leave the flags alone.
 */
	PUSH_ARGS
.if \o
	subq	$8, %rsp			/* 16-byte alignment for the C call */
	.cfi_adjust_cfa_offset 8
.endif
	movq	%r11, %rdi			/* arg 1: the site */
	leaq	72+2*\o(%rsp), %rsi		/* arg 2: the function's return slot */
	movq	64+2*\o(%rsp), %rdx
	addq	$TRAMP_HOOK-TRAMP_ENTERED, %rdx	/* arg 3: the hook, tramp+24 */
	call	ftrt_graph_enter
.if \o
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
.endif
	testl	%eax, %eax			/* ZF=1: not graphed */
	POP_ARGS
.if \o
	popq	%r11
	.cfi_adjust_cfa_offset -8
.endif
	ret
	.cfi_endproc
	.size	\name, .-\name
.endm

	GRAPH_ENTER ftrace_graph_enter, 0
	GRAPH_ENTER ftrace_prologue_graph_enter, 8

/*
 * ftrace_libgraph_enter: called from a library call's graph stub
 * (arch/libstub.h: a graph trampoline entered from a GOT slot), at
 * stub+11 with r11 = the slot's entry in patch/libcall.c's table
 * (struct ftrt_libslot: layout.h's LS_*), the frame as at
 * ftrace_graph_enter's entry (the stub's return address on top, the
 * caller's return address above it, every argument register live).
 *
 * The call is pushed as a graphed site's is (GRAPH_PUSH, the site being
 * the slot's address, LS_IP), so the function returns into the stub's
 * hook and leaves through ftrace_graph_leave, every return predicted.
 * Only the common case is done here, and anything else returns ZF=1
 * untouched, so that the stub goes on through its ordinary way into
 * the common entry (ftrace_libcall, tracers/libcall.c), which does
 * everything as for an ordinary stub: the fast path not on (no trace,
 * another tracer or clock, FTRACE_THRESH, paused); the subtree filters
 * on; the slot's flags (its function records its own calls, or its
 * calls need the C entry: LIBSLOT_* in LS_IP's low bits); a call the
 * runtime makes itself (ftrt_in_runtime: its start, end and threads;
 * ftrt_thread_busy: a thread's buffer being made or torn down); and
 * whatever GRAPH_PUSH leaves (no buffer yet, busy: a signal handler's
 * call inside the tracer, or the tracer's own; no room, too deep, a call
 * left by a longjmp, a delta too large). Nothing is changed on those
 * ways but a timestamp taken and busy set and cleared again, so the C
 * entry sees the call as if the fast path had not been there.
 *
 * Registers: r11 = the slot, then its address (the site); rax and rcx
 * scratch for the two thread-local flags, saved with rdx and rsi
 * (SAVE_SCRATCH) as at ftrace_graph_enter, whose frame this is.
 */
	.hidden	ftrt_in_runtime
	.hidden	ftrt_thread_busy
	.text
	.globl	ftrace_libgraph_enter
	.hidden	ftrace_libgraph_enter
	.type	ftrace_libgraph_enter, @function
	.p2align 4
ftrace_libgraph_enter:
	.cfi_startproc
	cmpl	$0, ftrt_fast_graph(%rip)
	je	.Llib_out			/* ZF=1: C does it */
	cmpl	$0, ftrt_subtree(%rip)
	jne	.Llib_c				/* FTRACE_GRAPH_FUNCS or FTRACE_GRAPH_NOTRACE set */
	testb	$LS_FLAGS, LS_IP(%r11)
	jnz	.Llib_c				/* skip, general or plain: C (which goes straight on, or does more) */
	SAVE_SCRATCH
	movq	ftrt_in_runtime@gottpoff(%rip), %rax
	movl	%fs:(%rax), %eax
	movq	ftrt_thread_busy@gottpoff(%rip), %rcx
	orl	%fs:(%rcx), %eax
	jnz	.Llib_slow			/* the runtime's own call: C lets it go straight on */
	movq	LS_IP(%r11), %r11
	andq	$~LS_FLAGS, %r11		/* the site: the slot's address (a flag set since: C's next time) */
	GRAPH_PUSH .Llib_slow, .Llib_unbusy, .Llib_unbusy
	testq	%rsp, %rsp			/* ZF=0: graphed */
	RESTORE_SCRATCH
	ret
	.cfi_adjust_cfa_offset 32
.Llib_unbusy:
	movq	$0, TB_BUSY(%rcx)
.Llib_slow:
	RESTORE_SCRATCH
.Llib_c:
	cmpq	%rsp, %rsp			/* ZF=1: not graphed here */
.Llib_out:
	ret
	.cfi_endproc
	.size	ftrace_libgraph_enter, .-ftrace_libgraph_enter

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
/*
 * GRAPH_LEAVE name, f: ftrace_graph_leave (f 32: the frame drawn above),
 * and, f FULL_FRAME, ftrace_prologue_graph_leave, which a prologue
 * site's trampoline jumps to: it keeps every general register a C call
 * may change (SAVE_FULL, fast.h), as the function's callers may keep
 * values in any of them across the call (see GRAPH_ENTER). rax and rdx
 * are 32 and 24 bytes below the top of either frame, and its top word
 * is the old return slot; the fast path's scratch (rcx, rsi, rdi) is
 * saved in the full frame, so it differs in nothing else:
 *
 *     72(%rsp) the old return slot: gets the real return address
 *     64(%rsp) r11          32(%rsp) r9           0(%rsp) rcx
 *     56(%rsp) rdx          24(%rsp) r8
 *     48(%rsp) rax          16(%rsp) rdi
 *     40(%rsp) r10           8(%rsp) rsi     <- rsp, 16-byte aligned
 */
.macro GRAPH_LEAVE name, f
	.text
	.globl	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	.cfi_undefined rip			/* the caller's return address is on the shadow stack */
	subq	$\f, %rsp
	.cfi_adjust_cfa_offset \f
.if \f == FULL_FRAME
	SAVE_FULL
.else
	movq	%rax, \f-32(%rsp)
	movq	%rdx, \f-24(%rsp)
.endif
	cmpl	$0, ftrt_fast_graph(%rip)
	je	.L\name\()_slow
	TAKE_BUF .L\name\()_slow, .L\name\()_unbusy, \f(%rsp)
	cmpl	$TBUF_WORDS-1, TB_N(%rcx)
	ja	.L\name\()_unbusy
	movl	TB_DEPTH(%rcx), %eax
	testl	%eax, %eax
	jz	.L\name\()_unbusy
	leaq	(%rax,%rax,2), %rsi
	shlq	$4, %rsi			/* d * SH_SIZE (48) */
	leaq	TB_SHADOW-SH_SIZE(%rcx,%rsi), %rsi	/* &shadow[d-1] */
	leaq	\f(%rsp), %rdi
	cmpq	%rdi, SH_SP(%rsi)
	jne	.L\name\()_unbusy		/* not the call on top: a longjmp left some */
	cmpq	$0, SH_MARK(%rsi)
	jne	.L\name\()_unbusy		/* a chosen or notrace call: C gives back its count */
	movq	%rdx, %rax
	subq	TB_LAST(%rcx), %rax		/* delta = ts - last (under busy) */
	movq	%rax, %rdi
	shrq	$REC_EXIT_BITS, %rdi
	jnz	.L\name\()_unbusy		/* 2^62 or more: the clock went back, C */
	movq	%rdx, TB_LAST(%rcx)		/* last = ts */
	btsq	$REC_KIND_SHIFT+1, %rax		/* rax = REC_EXIT (2) << 62 | delta */
	movq	SH_RET(%rsi), %rdi
	movq	%rdi, \f-8(%rsp)		/* the real return address, where ret finds it */
	decl	TB_DEPTH(%rcx)
	movl	TB_N(%rcx), %edx
	movq	%rax, TB_WORDS(%rcx,%rdx,8)	/* words[n] */
	incl	TB_N(%rcx)			/* n += 1, after the word */
	incq	TB_EXITS(%rcx)			/* counted, for the stream's summary */
	movq	$0, TB_BUSY(%rcx)
	jmp	.L\name\()_done
.L\name\()_unbusy:
	movq	$0, TB_BUSY(%rcx)		/* anything but the common case: C pops the call */
.L\name\()_slow:
	leaq	\f(%rsp), %rdi			/* arg 1: the stack pointer the function returned with */
	call	ftrt_graph_exit			/* rax = the real return address */
	movq	%rax, \f-8(%rsp)
.L\name\()_done:
.if \f == FULL_FRAME
	RESTORE_FULL
.else
	movq	\f-24(%rsp), %rdx
	movq	\f-32(%rsp), %rax
.endif
	addq	$\f-8, %rsp
	.cfi_adjust_cfa_offset -(\f-8)
	ret
	.cfi_endproc
	.size	\name, .-\name
.endm

	GRAPH_LEAVE ftrace_graph_leave, 32
	GRAPH_LEAVE ftrace_prologue_graph_leave, FULL_FRAME

	.section .note.GNU-stack, "", @progbits