/*
 * A shared object whose entry sites hold, by hand, every state and call
 * form `ftpatch sites` reads on x86-64 (no compiler emits most of them:
 * they are what enabling sites writes). Each function is one site,
 * listed in the __mcount_loc table at the end; the functions are local,
 * so the table's words are R_X86_64_RELATIVE relocations.
 *
 *   nop5, nop6, nops5      nop: one NOP of 5 or 6 bytes, five 1-byte NOPs
 *   hook_plt, hook_got     hook: call __fentry__ through its PLT stub
 *                          (JUMP_SLOT) and through the GOT (GLOB_DAT)
 *   mcount_plt             hook: call mcount after the prologue
 *   traced5, traced6       traced: e8 and 67 e8 calls to runtime trampolines
 *   traced_got             traced: ff 15 through a slot a RELATIVE fills
 *   traced_endbr           traced: the site after endbr64
 *   direct, direct_plt     direct: a user trampoline, local and global
 *   direct_ext             direct: a slot bound at load to a symbol
 *                          defined elsewhere (address unknown here)
 *
 * The trampolines are stand-ins that return: only their names matter.
 */
	.text

	.macro	FUNC name
	.type	\name, @function
	.p2align 4
\name:
	.endm
	.macro	END name
	ret
	.size	\name, .-\name
	.endm

	/* NOPs and the 67 prefix as bytes: gas would pick shorter forms. */
	FUNC nop5
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00		/* nopl 0x0(%rax,%rax,1) */
	END nop5

	FUNC nop6
	.byte	0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopw 0x0(%rax,%rax,1) */
	END nop6

	FUNC nops5
	.byte	0x90, 0x90, 0x90, 0x90, 0x90	/* nop x5: -fpatchable-function-entry=5 */
	END nops5

	FUNC hook_plt
	call	__fentry__@PLT
	END hook_plt

	FUNC hook_got
	call	*__fentry__@GOTPCREL(%rip)
	END hook_got

	FUNC mcount_plt
	pushq	%rbp
	movq	%rsp, %rbp
mcount_site:
	call	mcount@PLT
	popq	%rbp
	END mcount_plt

	FUNC traced5
	call	ftrace_caller5
	END traced5

	FUNC traced6
	.byte	0x67, 0xe8				/* addr32 call ftrace_caller6 */
	.long	ftrace_caller6 - . - 4
	END traced6

	FUNC traced_got
	call	*stub_slot(%rip)
	END traced_got

	FUNC traced_endbr
	endbr64
endbr_site:
	call	ftrace_mcount_caller5
	END traced_endbr

	FUNC direct
	call	my_tramp
	END direct

	FUNC direct_plt
	call	user_tramp@PLT
	END direct_plt

	FUNC direct_ext
	call	*elsewhere@GOTPCREL(%rip)
	END direct_ext

	/* The trampolines. */
	.hidden	ftrace_caller5, ftrace_caller6, ftrace_mcount_caller5, ftrace_stub, my_tramp
	.globl	ftrace_caller5, ftrace_caller6, ftrace_mcount_caller5, ftrace_stub, my_tramp, user_tramp
	FUNC ftrace_caller5
	END ftrace_caller5
	FUNC ftrace_caller6
	END ftrace_caller6
	FUNC ftrace_mcount_caller5
	END ftrace_mcount_caller5
	FUNC ftrace_stub
	END ftrace_stub
	FUNC my_tramp
	END my_tramp
	FUNC user_tramp
	END user_tramp

	.section .data.rel.ro, "aw"
	.p2align 3
stub_slot:
	.quad	ftrace_stub

	.section __mcount_loc, "aw"
	.p2align 3
	.quad	nop5, nop6, nops5, hook_plt, hook_got, mcount_site
	.quad	traced5, traced6, traced_got, endbr_site
	.quad	direct, direct_plt, direct_ext

	.section .note.GNU-stack, "", @progbits
