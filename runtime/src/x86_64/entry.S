/*
 * Entry hooks for x86-64.
 *
 * Call-site shapes (see sites/ for how recordmcount finds them):
 *   -pg -mfentry        call __fentry__   first instruction (after endbr64),
 *                                         before the frame is built: the
 *                                         return address into the function is
 *                                         at 0(%rsp), the caller's at 8(%rsp)
 *   -pg                 call mcount       after `push %rbp; mov %rsp,%rbp`
 * Every argument register (rdi rsi rdx rcx r8 r9, rax for varargs, xmm0-7)
 * is live at the call and must be preserved; these stubs touch nothing.
 *
 * At load time ftrt_init turns every call site into a NOP, so these stubs
 * only run for a site that is enabled, or before ftrt_init (constructors
 * of other objects that run first).
 */
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
 */
.macro FTRACE_CALLER name, len, slot
	.text
	.globl	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	pushq	%r8
	.cfi_adjust_cfa_offset 8
	pushq	%r9
	.cfi_adjust_cfa_offset 8
	pushq	%r10
	.cfi_adjust_cfa_offset 8
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
	popq	%r10
	.cfi_adjust_cfa_offset -8
	popq	%r9
	.cfi_adjust_cfa_offset -8
	popq	%r8
	.cfi_adjust_cfa_offset -8
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	popq	%rax
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	\name, .-\name
.endm

	/* Entry sites (-mfentry, -fpatchable-function-entry): the return slot
	 * is just above our own return address. */
	FTRACE_CALLER ftrace_caller5, 5, 88(%rsp)	/* sites enabled as e8 rel32 */
	FTRACE_CALLER ftrace_caller6, 6, 88(%rsp)	/* sites enabled as 67 e8 rel32 */
	/* mcount sites (-pg): after `push %rbp; mov %rsp,%rbp`, so the
	 * function's return slot is 8(%rbp); rbp is callee-saved and ours
	 * leave it alone. */
	FTRACE_CALLER ftrace_mcount_caller5, 5, 8(%rbp)
	FTRACE_CALLER ftrace_mcount_caller6, 6, 8(%rbp)

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
 *      8(%rsp) rdx
 *      0(%rsp) rax         <- rsp, 16-byte aligned for the C call
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
	subq	$16, %rsp
	movq	%rax, 0(%rsp)
	movq	%rdx, 8(%rsp)
	leaq	16(%rsp), %rdi			/* arg 1: the stack pointer the function returned with */
	call	ftrt_graph_exit			/* rax = ftrt_graph_exit(sp): the original return address */
	movq	%rax, %r11
	movq	8(%rsp), %rdx
	movq	0(%rsp), %rax
	addq	$16, %rsp
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
 * body is the instruction after the site. The call at tramp+19 puts its
 * return address exactly where the caller's was, so the function sees its
 * stack arguments where it expects them; ftrace_graph_leave then returns
 * to the caller with a `ret` the return stack predicts. r11 is free at a
 * function's entry (no argument uses it); flags are not live there.
 *
 * ftrace_graph_enter: called from tramp+7.
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
	.text
	.globl	ftrace_graph_enter
	.type	ftrace_graph_enter, @function
	.p2align 4
ftrace_graph_enter:
	.cfi_startproc
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	pushq	%r8
	.cfi_adjust_cfa_offset 8
	pushq	%r9
	.cfi_adjust_cfa_offset 8
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	movq	%r11, %rdi			/* arg 1: the site */
	leaq	72(%rsp), %rsi			/* arg 2: the function's return slot */
	movq	64(%rsp), %rdx
	addq	$11, %rdx			/* arg 3: the hook, tramp+24 */
	call	ftrt_graph_enter
	testl	%eax, %eax			/* ZF=1: not graphed */
	popq	%r10
	.cfi_adjust_cfa_offset -8
	popq	%r9
	.cfi_adjust_cfa_offset -8
	popq	%r8
	.cfi_adjust_cfa_offset -8
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	popq	%rax
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	ftrace_graph_enter, .-ftrace_graph_enter

/*
 * ftrace_graph_leave: jumped to from tramp+24 when the function has
 * returned there. rsp is what it was before the caller's call (16-byte
 * aligned); the return value is live in rax and rdx, xmm0 and xmm1, or
 * st0, and the C exit hook (-mgeneral-regs-only) touches only the first
 * two, saved here:
 *
 *     24(%rsp) the function's old return slot: gets the real return address
 *     16(%rsp) padding
 *      8(%rsp) rdx
 *      0(%rsp) rax         <- rsp, 16-byte aligned for the C call
 *
 * ftrt_graph_exit(sp) records the exit and gives the real return address;
 * the final `ret` goes there, as the caller's call predicted.
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
	leaq	32(%rsp), %rdi			/* arg 1: the stack pointer the function returned with */
	call	ftrt_graph_exit			/* rax = the real return address */
	movq	%rax, 24(%rsp)
	movq	8(%rsp), %rdx
	movq	0(%rsp), %rax
	addq	$24, %rsp
	ret
	.cfi_endproc
	.size	ftrace_graph_leave, .-ftrace_graph_leave

	.section .note.GNU-stack, "", @progbits
