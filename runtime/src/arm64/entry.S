/*
 * Entry hook for arm64 -pg builds: `mov x0, x30; bl _mcount` after the
 * prologue. x0 holds the caller's return address, x30 ours; every
 * argument register is live. Return at once.
 *
 * (The arm64 load-time pass and tracers are still to come: this object
 * only lets arm64 programs link.)
 */
	.text
	.globl	_mcount
	.type	_mcount, %function
	.p2align 2
_mcount:
	ret
	.size	_mcount, .-_mcount

	.section .note.GNU-stack, "", %progbits
