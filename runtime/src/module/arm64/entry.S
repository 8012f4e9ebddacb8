/*
 * The module stub's entry points for arm64: a shared object's own hooks
 * and trampolines (see ../module.c), all hidden, so that the object's
 * sites reach them with a bl the linker binds directly (never through
 * the PLT) and within its reach.
 *
 * _mcount, ftrace_stub
 *     as the runtime's (arch/arm64/entry.S): the hook returns at once; the
 *     empty tracer puts a patchable area's x9 back into x30 and returns.
 *
 * ftrace_caller, ftrace_mcount_caller, ftrace_ops_caller
 *     what an enabled site of this object calls. Each branches through
 *     its slot in ftrt_module_slots to the runtime's trampoline of the
 *     same name, which the runtime wrote there when the object
 *     registered: a branch, not a call, so the runtime's trampoline finds
 *     x9, x30 and every argument register as the site left them. x16,
 *     which any branch may change (the psABI's IP0), holds the slot's
 *     address and then its value. Until registration (and for good in a
 *     program without the runtime) a slot holds ftrace_stub.
 */
#include "arch/arm64/args.h"

	.text

.macro STUB name
	ENTRY	\name
	.hidden	\name
	.ifc \name, ftrace_stub
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.else
	ret
	.endif
	END	\name
.endm

	STUB _mcount
	STUB ftrace_stub

.macro JUMP name, slot
	ENTRY	\name
	.hidden	\name
	adrp	x16, ftrt_module_slots
	ldr	x16, [x16, #:lo12:ftrt_module_slots + \slot]
	br	x16
	END	\name
.endm

	/* In FTRT_T_FIRST_TRAMP.. order (ftrt.h): slot i serves targets[FTRT_T_CALLER + i]. */
	JUMP ftrace_caller, 0
	JUMP ftrace_mcount_caller, 8
	JUMP ftrace_ops_caller, 16

/*
 * The slots: written once by the runtime at registration, while no code
 * of this object has run yet (its constructors come after ours). In
 * .data, not .data.rel.ro: they must stay writable after relocation.
 */
	.data
	.p2align 3
	.globl	ftrt_module_slots
	.hidden	ftrt_module_slots
	.type	ftrt_module_slots, %object
ftrt_module_slots:				/* FTRT_SLOTS of them */
	.quad	ftrace_stub
	.quad	ftrace_stub
	.quad	ftrace_stub
	.size	ftrt_module_slots, .-ftrt_module_slots

	.section .note.GNU-stack,"",%progbits
