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
#include "abi.h"
#include "arch/layout.h"
#include "arch/x86_64/args.h"
#include "arch/x86_64/fast.h"

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
	incq	TB_CALLS(%rcx)			/* counted, for the stream's summary */
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

	.section .note.GNU-stack, "", @progbits
