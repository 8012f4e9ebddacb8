/*
 * Assembler macros of the arm64 fixtures whose tables are written by
 * hand (oddarm64.S, straddle.S; included through cpp):
 *
 *   FUNC name / END name   a global function symbol and its size
 *   SITE at                an entry of the site table (__mcount_loc)
 *   AREA at                an entry of the compiler's list of patchable
 *                          areas (__patchable_function_entries)
 */
	.macro	FUNC name
	.globl	\name
	.type	\name, %function
\name:
	.endm
	.macro	END name
	.size	\name, .-\name
	.endm
	.macro	SITE at
	.pushsection __mcount_loc, "a", %progbits
	.p2align 3
	.quad	\at
	.popsection
	.endm
	.macro	AREA at
	.pushsection __patchable_function_entries, "aw", %progbits
	.p2align 3
	.quad	\at
	.popsection
	.endm
