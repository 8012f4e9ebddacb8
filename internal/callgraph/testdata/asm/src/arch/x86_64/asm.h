/* ENTRY name: a global function of the assembly files. */
.macro ENTRY name
	.globl	\name
\name:
.endm
