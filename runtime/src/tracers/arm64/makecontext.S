/*
 * The makecontext wrapper for arm64, in a file of its own: it is pulled
 * out of the archive only by the program's reference to it, which the
 * link flag --wrap=makecontext makes, so a program linked without that
 * flag has no reference to __real_makecontext to resolve.
 *
 * __wrap_makecontext: the program's calls of makecontext, so that
 * function_graph knows each context's stack (context.c) before the
 * context can run. makecontext(ucp, func, argc, ...): x0 = ucp, x1 =
 * func, w2 = argc, the arguments for func in x3-x7 and on the stack, as
 * many as argc says. The wrapper saves x29 and x30 (a frame record) and
 * the argument registers (SAVE_ARGS: 96 bytes, 16-aligned), calls
 * ftrt_context_made(ucp), restores them and branches to the C library's
 * makecontext with the stack as it found it.
 */
#include "arch/arm64/args.h"

	.text
	ENTRY	__wrap_makecontext
	stp	x29, x30, [sp, #-96]!
	.cfi_def_cfa_offset 96
	.cfi_offset x29, -96
	.cfi_offset x30, -88
	mov	x29, sp
	SAVE_ARGS				/* x0-x8 at 16-80 */
	bl	ftrt_context_made		/* ftrt_context_made(ucp): x0 is ucp already */
	RESTORE_ARGS
	ldp	x29, x30, [sp], #96
	.cfi_def_cfa_offset 0
	b	__real_makecontext		/* as if called directly */
	END	__wrap_makecontext

#ifdef FTRT_PRELOAD
/*
 * Preloaded (runtime.SharedLibName), with no linker's --wrap: the C
 * library's makecontext is the wrapper, whichever module calls it, and
 * __real_makecontext branches to the C library's through
 * ftrt_next_makecontext, which ftrt_context_made (context.c) looks up
 * before the wrapper branches there.
 */
	.globl	makecontext
	.type	makecontext, %function
	.set	makecontext, __wrap_makecontext

	ENTRY	__real_makecontext
	.hidden	__real_makecontext
	adrp	x16, ftrt_next_makecontext
	ldr	x16, [x16, :lo12:ftrt_next_makecontext]
	br	x16				/* the C library's, every argument register untouched */
	END	__real_makecontext
#endif

	.section .note.GNU-stack, "", %progbits
