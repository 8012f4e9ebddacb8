/*
 * The fast paths' shared pieces, for entry.S (the call-site trampolines)
 * and graph.S (function_graph's hooks): assembler macros only, nothing
 * emitted by themselves. Needs layout.h first.
 */
#ifndef FTRT_X86_64_FAST_H
#define FTRT_X86_64_FAST_H

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

/*
 * SAVE_FULL, RESTORE_FULL: every general register a C call may change
 * (rax rcx rdx rsi rdi r8-r11), in a frame of FULL_FRAME bytes the
 * caller made below a function's return (return_to_handler, and
 * ftrace_prologue_graph_leave, for sites made from prologues, whose
 * callers may keep values in any of them across the call: see graph.S).
 * rax and rdx, the return registers, are 32 and 24 bytes below the top
 * of the frame, where the smaller frame of ftrace_graph_leave keeps
 * them too (fregs.c's ftrt_arch_fgraph_exit_regs reads them there); its
 * top word, FULL_SLOT, is the function's old return slot:
 *
 *     72 the return slot      48 rax      24 r8
 *     64 r11                  40 r10      16 rdi
 *     56 rdx                  32 r9        8 rsi
 *                                          0 rcx
 */
#define FULL_FRAME 80
#define FULL_SLOT 72
.macro SAVE_FULL
	movq	%rcx, 0(%rsp)
	movq	%rsi, 8(%rsp)
	movq	%rdi, 16(%rsp)
	movq	%r8, 24(%rsp)
	movq	%r9, 32(%rsp)
	movq	%r10, 40(%rsp)
	movq	%rax, 48(%rsp)
	movq	%rdx, 56(%rsp)
	movq	%r11, 64(%rsp)
.endm
.macro RESTORE_FULL
	movq	0(%rsp), %rcx
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdi
	movq	24(%rsp), %r8
	movq	32(%rsp), %r9
	movq	40(%rsp), %r10
	movq	48(%rsp), %rax
	movq	56(%rsp), %rdx
	movq	64(%rsp), %r11
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

#endif
