/*
 * Stand-in hook for linking arm64 test programs before the runtime
 * exists. gcc -pg calls it as `mov x0, x30; bl _mcount` after the
 * prologue: x0 holds the caller's return address, x30 ours. Return at once.
 */
	.text
	.globl	_mcount
	.type	_mcount, %function
_mcount:
	ret
	.size	_mcount, .-_mcount

	.section .note.GNU-stack,"",%progbits
