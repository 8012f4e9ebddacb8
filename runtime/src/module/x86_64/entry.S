/*
 * The module stub's entry points for x86-64: a shared object's own
 * hooks and trampolines (see ../module.c), all hidden, so that the
 * object's sites reach them with rel32 calls (the linker binds a call to
 * a hidden symbol directly, never through the PLT).
 *
 * __fentry__, mcount, ftrace_stub
 *     return at once: the hooks the compiler's calls reach until the
 *     runtime turns a site into a NOP, and the empty tracer.
 *
 * ftrace_caller5/6, ftrace_mcount_caller5/6, ftrace_chain_caller5/6
 *     what an enabled site of this object calls (the runtime writes the
 *     calls at load time; `ftpatch enable` writes them into the file).
 *     Each jumps through its slot in ftrt_module_slots to the runtime's
 *     trampoline of the same name, which the runtime wrote there when the
 *     object registered. A jump, not a call: the runtime's trampoline
 *     finds the stack exactly as the site left it,
 *
 *         0(%rsp)  return address into the traced function = site + 5 or + 6
 *         8(%rsp)  return address into its caller (entry sites; chain
 *                  sites have the saved r10 here and it at 16(%rsp))
 *
 *     and every register untouched. Until registration (and for good in
 *     a program without the runtime) a slot holds ftrace_stub.
 */
	.text

.macro STUB name
	.globl	\name
	.hidden	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	\name, .-\name
.endm

	STUB __fentry__
	STUB mcount
	STUB ftrace_stub

.macro JUMP name, slot
	.globl	\name
	.hidden	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	jmp	*ftrt_module_slots+\slot(%rip)
	.cfi_endproc
	.size	\name, .-\name
.endm

	/* In FTRT_T_CALLER5.. order (ftrt.h): slot i serves targets[FTRT_T_CALLER5 + i]. */
	JUMP ftrace_caller5, 0
	JUMP ftrace_caller6, 8
	JUMP ftrace_mcount_caller5, 16
	JUMP ftrace_mcount_caller6, 24
	JUMP ftrace_chain_caller5, 32
	JUMP ftrace_chain_caller6, 40

/*
 * The slots: written once by the runtime at registration, while no code
 * of this object has run yet (its constructors come after ours). In
 * .data, not .data.rel.ro: they must stay writable after relocation.
 */
	.data
	.p2align 3
	.globl	ftrt_module_slots
	.hidden	ftrt_module_slots
	.type	ftrt_module_slots, @object
ftrt_module_slots:				/* FTRT_SLOTS of them */
	.quad	ftrace_stub
	.quad	ftrace_stub
	.quad	ftrace_stub
	.quad	ftrace_stub
	.quad	ftrace_stub
	.quad	ftrace_stub
	.size	ftrt_module_slots, .-ftrt_module_slots

	.section .note.GNU-stack,"",@progbits
